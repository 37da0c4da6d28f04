"""The wake-up signal that drives a ReactiveRunner: no timer, no polling.

Nodes call `signal()` when something changed (an async task finished, a loop wants another
iteration, an approval arrived). Signals coalesce: many signals before the runner wakes cause one
tick. The in-flight counter lets the runner tell "waiting for work" from "quiescent" (nothing in
flight, nothing signalled: the run is suspended, e.g. on a pending approval).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any


class Wakeup:
    """A coalescing, thread-safe wake-up flag plus a count of tracked in-flight tasks."""

    __slots__ = ("_event", "_loop", "_thread", "_tracked", "in_flight", "pending")

    def __init__(self) -> None:
        self.pending = False
        self.in_flight = 0
        self._tracked: set[asyncio.Future[Any]] = set()
        self._event: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None

    def bind_loop(self) -> None:
        """Attach to the running event loop (called by the runner before it waits)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop = loop
            self._event = asyncio.Event()
            self._thread = threading.get_ident()
            if self.pending:
                self._event.set()

    def signal(self) -> None:
        """Request a tick. Safe to call from any thread and any number of times."""
        self.pending = True
        event = self._event
        if event is None:
            return
        if threading.get_ident() == self._thread:
            event.set()
        else:
            assert self._loop is not None
            self._loop.call_soon_threadsafe(event.set)

    def clear(self) -> None:
        """Consume pending signals: called just before a tick."""
        self.pending = False
        if self._event is not None:
            self._event.clear()

    async def wait(self) -> None:
        """Return once a signal is pending."""
        if self.pending:
            return
        assert self._event is not None, "bind_loop() must be called first"
        await self._event.wait()

    def track(self, task: asyncio.Future[Any]) -> None:
        """Count `task` as in flight; when it ends, it is uncounted and a tick is requested.

        The task may call `settle(task)` itself as its last action (the runner then wakes one
        loop cycle sooner); the done-callback covers tasks that end any other way, e.g.
        cancelled before they ever ran."""
        self.in_flight += 1
        self._tracked.add(task)
        task.add_done_callback(self.settle)

    def settle(self, task: asyncio.Future[Any] | None) -> None:
        """Uncount a tracked task (once) and request a tick."""
        if task in self._tracked:
            self._tracked.discard(task)
            self.in_flight -= 1
            self.signal()

    @property
    def quiescent(self) -> bool:
        """Nothing in flight and no signal pending: no tick would ever come by itself."""
        return not self.pending and self.in_flight == 0
