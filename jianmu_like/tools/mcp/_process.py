"""The process of a stdio MCP server: knowing which it is, and making sure it is gone.

The SDK spawns the server (an anyio `Process`, in a new session so its children share its
process group) but does not expose it. We need it to notice a crash before sending a call and
to prove that closing left nothing behind, so a wrapper around the SDK's spawn function hands
each process to the owner task that asked for it (through a context variable; concurrent owners
never see each other's). Should a later SDK drop that function, the new child found in /proc
gives at least the PID.

Why a wrapper around a private function, and not a supported API: there is none. `stdio_client`
(mcp 2.3) takes only the server parameters and an `errlog`, and yields the two message streams;
the process stays a local variable. The public alternatives were weighed and rejected:
- spawning the server ourselves and handing `ClientSession` our own streams means copying the
  SDK's transport (line framing, the drain that keeps a flushing server from blocking, the
  close-stdin / SIGTERM / SIGKILL escalation over the process group), which is where the subtle
  bugs live and where the SDK keeps improving;
- finding the child afterwards (a marker in its environment, or the new entry in
  /proc/<pid>/task/*/children) gives a PID but no handle: no exit status, and with concurrent
  spawns the /proc difference is ambiguous — it is kept only as the fallback.
The wrapper is installed once, calls the original unchanged, and degrades to that fallback if
the function disappears; tests/mcp checks the PID of every server, so an SDK change is noticed.

The server's stderr goes to a temporary file of its own rather than ours: a server that cannot
start usually says why there (a missing module, a bad flag), so its tail is quoted in the start
failure; and a chatty server does not scribble over the CLI's live display. The whole log is
written to our logger at DEBUG level when the server is closed.
"""

from __future__ import annotations

import asyncio
import contextvars
import glob
import logging
import os
import signal
import sys
import tempfile
from contextlib import AsyncExitStack, suppress
from typing import TYPE_CHECKING, Any, TextIO

from ..._base.redact import redact_text, redacting_logger
from ._config import MCPServerConfig

if TYPE_CHECKING:
    from anyio.abc import Process

logger = redacting_logger(__name__)  # they quote what servers and tools say

_SPAWN_FN = "_create_platform_compatible_process"
_spawned: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar(
    "jianmu_mcp_spawned", default=None
)


def _hook_stdio_spawn() -> bool:
    """Wrap the SDK's spawn function once so each owner task can learn its server's process."""
    import mcp.client.stdio as stdio

    original = getattr(stdio, _SPAWN_FN, None)
    if original is None:
        return False
    if getattr(original, "_jianmu_hook", False):
        return True

    async def spawn(*args: Any, **kwargs: Any) -> Any:
        process = await original(*args, **kwargs)
        sink = _spawned.get()
        if sink is not None:
            sink.append(process)
        return process

    spawn._jianmu_hook = True  # type: ignore[attr-defined]
    setattr(stdio, _SPAWN_FN, spawn)
    return True


def _child_pids() -> set[int]:
    pids: set[int] = set()
    for path in glob.glob(f"/proc/{os.getpid()}/task/*/children"):
        with suppress(OSError, ValueError), open(path) as handle:
            pids.update(int(p) for p in handle.read().split())
    return pids


def group_alive(pgid: int) -> bool:
    """Whether a process that is not a zombie is still in process group `pgid`."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    if not os.path.isdir("/proc"):
        return True
    for path in glob.glob("/proc/[0-9]*/stat"):
        with suppress(OSError, ValueError, IndexError), open(path) as handle:
            state, _ppid, group = handle.read().rsplit(")", 1)[1].split()[:3]
            if int(group) == pgid and state != "Z":
                return True
    return False


STDERR_TAIL_BYTES = 2000
"""How much of the end of a server's stderr a start failure quotes."""


class StdioProcess:
    """The spawned server: its PID (also its process-group id) and, when known, its handle."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.pid: int | None = None
        self.process: Process | None = None
        self._stderr: TextIO | None = None

    @property
    def returncode(self) -> int | None:
        return self.process.returncode if self.process is not None else None

    @property
    def reaped(self) -> bool:
        """Exited and waited for (or never known): its PID can no longer be ours."""
        return self.process is None or self.process.returncode is not None

    async def open(self, config: MCPServerConfig, stack: AsyncExitStack) -> Any:
        """Enter the SDK's `stdio_client` on `stack`, recording the process it spawns."""
        from mcp import StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=config.command or "", args=list(config.args), env=dict(config.env) or None, cwd=config.cwd
        )
        sink: list[Any] = []
        before = None if _hook_stdio_spawn() else _child_pids()
        token = _spawned.set(sink)
        # Kept past the connection's end so a start failure can quote it; `release()` closes it.
        self._stderr = tempfile.TemporaryFile("w+", prefix="mcp-", suffix=".stderr")  # noqa: SIM115
        try:
            streams = await stack.enter_async_context(stdio_client(params, errlog=self._stderr))
        finally:
            _spawned.reset(token)
        if sink:
            self.process = sink[0]
            self.pid = sink[0].pid
        elif before is not None:
            new = _child_pids() - before
            self.pid = new.pop() if len(new) == 1 else None
        return streams

    def stderr_tail(self, limit: int = STDERR_TAIL_BYTES) -> str:
        """The last `limit` bytes the server wrote to stderr ("" when none or not captured),
        secrets masked: a server that fails to start often prints its configuration."""
        handle = self._stderr
        if handle is None or handle.closed:
            return ""
        fd = handle.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - limit)
        # pread: the server shares the file offset, reading must not move it.
        text = os.pread(fd, size - start, start).decode("utf-8", "replace").strip()
        return redact_text(f"…{text}" if start else text)

    def release(self) -> None:
        """Close the captured stderr (logging it at DEBUG level); the process is gone by now."""
        handle, self._stderr = self._stderr, None
        if handle is None:
            return
        if logger.isEnabledFor(logging.DEBUG):
            handle.seek(0)
            logger.debug("MCP server %r stderr:\n%s", self.name, redact_text(handle.read()))
        handle.close()

    async def settle(self, seconds: float = 0.5) -> None:
        """Give the child watcher a moment to record the exit status of a dying server."""
        for _ in range(int(seconds / 0.01)):
            if self.reaped:
                return
            await asyncio.sleep(0.01)

    async def kill_leftovers(self) -> None:
        """SIGKILL whatever is left of the server's process group, then wait for the reaping.

        The SDK kills the group only when the server ignores its stdin closing; a server that
        exits politely can still leave children behind, and a session from a finished event
        loop was never shut down at all.
        """
        pid = self.pid
        if pid is None or sys.platform == "win32":
            return
        if self.reaped and not group_alive(pid):
            return
        logger.info("MCP server %r: killing what is left of process group %d", self.name, pid)
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        for _ in range(200):  # our child is reaped by the event loop, orphans by init
            if self.reaped and not group_alive(pid):
                return
            await asyncio.sleep(0.01)
