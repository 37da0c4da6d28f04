"""Helpers for the MCP tests: the test server's command line, an HTTP instance of it, and a
check that a process is really gone."""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import suppress
from pathlib import Path
from typing import Any

from jianmu_like.testing import PATIENCE

HERE = Path(__file__).resolve().parent
SERVER = HERE / "mcp_test_server.py"


def server_config(**overrides: Any) -> dict[str, Any]:
    """An `mcp_servers` entry for the test server over stdio."""
    return {"name": "test", "command": sys.executable, "args": [str(SERVER)], **overrides}


def process_gone(pid: int) -> bool:
    """No such process, or only a zombie that is not ours to reap (an orphan's remains)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state == "Z"


class HTTPServer:
    """The test server over streamable HTTP on 127.0.0.1, in a subprocess we can kill."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(SERVER), "--http"], stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("PORT "):
            self.stop()
            raise RuntimeError(f"the test HTTP server did not start: {line!r}")
        self.port = int(line.split()[1])
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(PATIENCE)
        if self.process.stdout is not None:
            self.process.stdout.close()


def child_pids() -> set[int]:
    """Live child processes of this test process."""
    pids: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        with suppress(OSError), open(task / "children") as handle:
            pids.update(int(p) for p in handle.read().split())
    return {pid for pid in pids if not process_gone(pid)}
