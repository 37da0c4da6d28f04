"""SIGTERM (systemd, Docker, `timeout`) and SIGINT stop the agent's stdio MCP servers with the
CLI: `jianmu-like run` and `jianmu-like serve` as real processes, the test MCP server over
stdio (it records its PID and that of a helper child it starts, as servers driving a browser
do), the scripted model server over HTTP. The signal arrives while an MCP tool call is in flight."""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, exited, reply, wait_until
from tests.cli.running import in_process

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

MCP_SERVER = Path(__file__).resolve().parents[1] / "mcp" / "mcp_test_server.py"
CLI = [sys.executable, "-m", "jianmu_like"]
EXPECTED = {
    signal.SIGTERM: (143, "terminated (SIGTERM)", "stopped (SIGTERM)"),
    signal.SIGINT: (130, "interrupted", "stopped (Ctrl-C)"),
}
"""Exit code and stderr note of `run`, then `serve`, per signal."""


def agent_file(folder: Path) -> tuple[Path, Path]:
    """An agent whose only MCP tool is the test server's `sleep`; and where the server's PIDs land."""
    pids = folder / "mcp.pids"
    server = {
        "command": sys.executable,
        "args": [str(MCP_SERVER)],
        "allow": ["sleep"],
        "env": {"MCP_TEST_PID_FILE": str(pids), "MCP_TEST_HELPER": "1"},
    }
    path = folder / "agent.yaml"
    path.write_text(yaml.safe_dump({"kind": "react", "name": "Sleeper", "mcp_servers": {"test": server}}))
    return path, pids


def environment(base_url: str) -> dict[str, str]:
    skip = ("JIANMU", "OPENAI_", "FORCE_COLOR", "TTY_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
    env.update(PYTHONIOENCODING="utf-8", NO_COLOR="1", OPENAI_BASE_URL=base_url, OPENAI_API_KEY="test-key")
    return env


def wait_for(condition: Any, what: str, proc: subprocess.Popen[str]) -> None:
    wait_until(condition, what, abort=exited(proc))


def gone(pid: int) -> bool:
    """No such process, or only a zombie (an orphan's remains, not ours to reap)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


@contextmanager
def mcp_processes(pid_file: Path) -> Iterator[list[int]]:
    """The PIDs the MCP server recorded (filled once it wrote them); whatever is left of them is
    killed at the end, so a failing test leaves nothing behind."""
    pids: list[int] = []
    try:
        yield pids
    finally:
        for pid in pids:
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)


def assert_all_gone(pids: list[int]) -> None:
    assert len(pids) == 2  # the server and its helper child
    wait_until(lambda: all(gone(pid) for pid in pids), "the MCP processes to go after the CLI exited")


def _lines(stream: Any) -> queue.Queue[str]:
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in stream], daemon=True).start()
    return lines


def sleeper(body: dict[str, Any]) -> Any:
    """The model: "Sleep a while." asks for a long `sleep`; any later question is answered."""
    last = body["messages"][-1]
    if last["role"] == "user" and last["content"] == "Sleep a while.":
        return call("sleep", seconds=600)
    return reply("Awake now.")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_run_stops_its_mcp_servers_and_leaves_its_thread_usable(
    tmp_path: Path,
    signum: signal.Signals,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path, pid_file = agent_file(tmp_path)
    code, note, _ = EXPECTED[signum]
    store = ["--checkpoint", str(tmp_path / "runs.db"), "--thread", "t"]
    with ScriptedOpenAIServer(sleeper) as srv:
        proc = subprocess.Popen(
            [*CLI, "run", str(path), "Sleep a while.", *store],
            cwd=tmp_path,
            env=environment(srv.base_url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        with mcp_processes(pid_file) as pids:
            try:
                seen: list[str] = []
                out = _lines(proc.stdout)

                def calling() -> bool:
                    while not out.empty():
                        seen.append(out.get())
                    return any(line.startswith("→ sleep(") for line in seen)

                wait_for(calling, "the MCP tool call", proc)  # the server is up and busy
                wait_for(pid_file.exists, "the MCP server's PIDs", proc)
                pids.extend(int(p) for p in pid_file.read_text().split())
                proc.send_signal(signum)
                proc.wait(PATIENCE)
                assert proc.stderr is not None
                err = proc.stderr.read()
            finally:
                if proc.poll() is None:
                    proc.kill()
            assert proc.returncode == code, err
            assert note in err and "Traceback" not in err
            assert_all_gone(pids)
        pid_file.unlink()
        # The thread goes on: the interrupted call is answered, the model accepts the history
        # (the next run in this process: a second CLI process would add seconds).
        with mcp_processes(pid_file) as pids:
            code, shown = in_process(srv.base_url, monkeypatch, capsys)(
                "run", str(path), "Next question.", *store, "--no-live"
            )
            if pid_file.exists():
                pids.extend(int(p) for p in pid_file.read_text().split())
        assert code == 0, shown
        assert "Awake now." in shown
        [tool] = [m for m in srv.requests[-1]["messages"] if m["role"] == "tool"]
        assert tool["content"].startswith("Error: interrupted")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_serve_stops_its_mcp_servers(tmp_path: Path, signum: signal.Signals) -> None:
    path, pid_file = agent_file(tmp_path)
    code, _, note = EXPECTED[signum]
    port = free_port()
    with ScriptedOpenAIServer([call("sleep", seconds=600), reply("never")]) as srv:
        proc = subprocess.Popen(
            [*CLI, "serve", str(path), "--port", str(port)],
            cwd=tmp_path,
            env=environment(srv.base_url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        with (
            mcp_processes(pid_file) as pids,
            httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http,
        ):
            try:

                def up() -> bool:
                    try:
                        return http.get("/healthz").status_code == 200
                    except httpx.TransportError:
                        return False

                wait_for(up, "the server", proc)
                run = http.post("/api/runs", json={"input": "Sleep a while."}).json()

                # the run's events up to its MCP tool call: then the server is up and busy
                with http.stream("GET", f"/api/runs/{run['run_id']}/events") as events:
                    for line in events.iter_lines():
                        if line.startswith("data:") and '"tool_name": "sleep"' in line:
                            break
                    else:
                        raise AssertionError(f"the run ended without calling sleep: {proc.communicate()}")
                wait_for(pid_file.exists, "the MCP server's PIDs", proc)
                pids.extend(int(p) for p in pid_file.read_text().split())
                proc.send_signal(signum)
                _, err = proc.communicate(timeout=PATIENCE)
            finally:
                if proc.poll() is None:
                    proc.kill()
            assert proc.returncode == code, err
            assert note in err and "Traceback" not in err
            assert_all_gone(pids)
