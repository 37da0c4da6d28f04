"""SIGTERM stops a CLI run or server as Ctrl-C does: runs are cancelled and cleaned up first.

Python's default for SIGTERM ends the process on the spot: no `finally` runs, so the stdio MCP
servers an agent started (in sessions of their own, out of reach of the terminal's signals) and
whatever they spawned are left running, orphaned. systemd, Docker and `timeout` all stop a
process with SIGTERM. `terminable` turns it into a cancellation of the run's task, which closes
the agent's tool providers on its way out (the MCP session's exit stops the server and kills
what is left of its process group), then raises `Terminated` for the caller to exit 143.
`serve` leaves the shutdown to uvicorn, which handles both signals, and only learns which one
stopped it (`recorded_stop_signals`).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TypeVar

from ..errors import JianmuError

T = TypeVar("T")


class Terminated(JianmuError):
    """The process received SIGTERM; the run was cancelled and its resources released."""


async def terminable(awaitable: Awaitable[T]) -> T:
    """Await `awaitable` in the current task; on SIGTERM cancel that task (once: a second signal
    while cleaning up is ignored, the cleanup is bounded) and raise `Terminated`."""
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    received = False

    def on_sigterm() -> None:
        nonlocal received
        if not received and task is not None:
            received = True
            task.cancel()

    try:
        loop.add_signal_handler(signal.SIGTERM, on_sigterm)
    except (NotImplementedError, RuntimeError, ValueError):  # Windows, or not the main thread
        return await awaitable
    try:
        return await awaitable
    except asyncio.CancelledError:
        if received:
            raise Terminated("terminated (SIGTERM)") from None
        raise
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


@contextmanager
def recorded_stop_signals() -> Iterator[list[int]]:
    """Around `uvicorn.run`: SIGINT and SIGTERM are recorded rather than acted on.

    uvicorn handles both itself (a graceful shutdown: runs cancelled, agents and their MCP
    servers closed by the app's lifespan), then restores the handlers it found and raises the
    signal again. With Python's defaults that second SIGTERM kills the process before anything
    after `uvicorn.run` (flushing traces, an exit code, a message) happens, and the second SIGINT
    is swallowed by asyncio; with these handlers the caller learns which signal stopped the
    server and exits accordingly. The list yielded fills with the signals received."""
    received: list[int] = []

    def record(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)

    stops = (signal.SIGINT, signal.SIGTERM)
    previous = {signum: signal.signal(signum, record) for signum in stops}
    try:
        yield received
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
