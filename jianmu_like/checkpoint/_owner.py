"""Thread owners: which process runs a thread now, and whether that process is still alive.

A run or resume *claims* its thread by saving the checkpoint with an owner token; the final save
(or, on any exit, a release) clears it. A second process that finds a live owner is refused, so
two processes never drive one thread. An owner whose process is gone (SIGKILL, a crash, a
reboot) does not block: its thread can be resumed. SQLite in WAL mode is single-host, so an
owner recorded on another host (a copied file) is taken to be gone.
"""

from __future__ import annotations

import os
import secrets
import socket
from pathlib import Path

from pydantic import BaseModel


class Owner(BaseModel):
    """Identifies one claim: host, process (with its start time, against pid reuse), token."""

    host: str
    pid: int
    started: str = ""
    token: str

    def encode(self) -> str:
        return f"{self.host}/{self.pid}/{self.started}/{self.token}"

    @classmethod
    def decode(cls, text: str) -> Owner | None:
        parts = text.rsplit("/", 3)
        if len(parts) != 4 or not parts[1].isdigit():
            return None
        return cls(host=parts[0], pid=int(parts[1]), started=parts[2], token=parts[3])

    def describe(self) -> str:
        return f"process {self.pid} on {self.host}"


def _process_start(pid: int) -> str | None:
    """The process's start time from /proc (Linux), None when unknown; 'Z' for a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    if fields and fields[0] == "Z":
        return "Z"
    return fields[19] if len(fields) > 19 else None


def new_owner() -> Owner:
    """A fresh claim of this process."""
    return Owner(
        host=socket.gethostname(),
        pid=os.getpid(),
        started=_process_start(os.getpid()) or "",
        token=secrets.token_hex(8),
    )


def owner_alive(encoded: str) -> bool:
    """Whether the process behind an owner token may still be running the thread."""
    owner = Owner.decode(encoded)
    if owner is None or owner.host != socket.gethostname():
        return False
    if owner.pid == os.getpid():
        return True  # another agent of this process holds it (claims are released at every end)
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, belongs to someone else
    started = _process_start(owner.pid)
    if started == "Z":
        return False
    return not (owner.started and started is not None and started != owner.started)
