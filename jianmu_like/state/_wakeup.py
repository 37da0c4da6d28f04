"""The wake-up signal that drives a ReactiveRunner: no timer, no polling.

Nodes call `signal()` when something changed (an async task finished, a loop wants another
iteration, an approval arrived). Signals coalesce: many signals before the runner wakes cause one
tick. The in-flight counter lets the runner tell "waiting for work" from "quiescent" (nothing in
flight, nothing signalled: the run is suspended, e.g. on a pending approval).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Generator
from typing import Any


class Wakeup:
    """A coalescing, thread-safe wake-up flag plus a count of tracked in-flight tasks."""

    __slots__ = ("_loop", "_thread", "_tracked", "_waiter", "in_flight", "parked", "pending")

    def __init__(self) -> None:
        self.pending = False
        self.in_flight = 0
        self.parked: Awaitable[None] | None = None
        """Work an exclusive node left for the runner to carry on after the tick (a
        `bt._inline.InlineWork`; typed as what the runner does with it, so the state kernel does
        not import the tree kernel above it)."""
        self._tracked: set[asyncio.Future[Any]] | None = None
        """Tasks counted in flight (created by the first `track`: most runs of a conversation
        track none between their runs, and an idle conversation should hold no set)."""
        self._waiter: asyncio.Future[None] | None = None
        """What `wait()` returned, until a signal resolves it (one future, not an Event: a
        waiting runner then costs one object per wait instead of three)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None

    def bind_loop(self) -> None:
        """Attach to the running event loop (called by the runner before it waits)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop = loop
            self._waiter = None
            self._thread = threading.get_ident()

    def signal(self) -> None:
        """Request a tick. Safe to call from any thread and any number of times."""
        self.pending = True
        if threading.get_ident() == self._thread:
            if self._waiter is not None:
                self._wake()
        elif self._loop is not None:
            # Always through the loop: the runner may be about to wait (it reads `pending` and
            # creates its waiter in the loop's thread, so one of the two sees the other).
            self._loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def clear(self) -> None:
        """Consume pending signals: called just before a tick."""
        self.pending = False

    def wait(self) -> Awaitable[None]:
        """Awaitable that completes once a signal is pending."""
        if self.pending:
            return _READY
        assert self._loop is not None, "bind_loop() must be called first"
        waiter = self._waiter
        if waiter is None or waiter.done():
            waiter = self._waiter = self._loop.create_future()
        return waiter

    def track(self, task: asyncio.Future[Any]) -> None:
        """Count `task` as in flight; when it ends, it is uncounted and a tick is requested.

        The task may call `settle(task)` itself as its last action (the runner then wakes one
        loop cycle sooner); the done-callback covers tasks that end any other way, e.g.
        cancelled before they ever ran."""
        self.in_flight += 1
        tracked = self._tracked
        if tracked is None:
            tracked = self._tracked = set()
        tracked.add(task)
        # `settle` reads no context variable: one shared context instead of a copy per task.
        task.add_done_callback(self.settle, context=_SETTLE_CONTEXT)

    def settle(self, task: asyncio.Future[Any] | None) -> None:
        """Uncount a tracked task (once) and request a tick."""
        tracked = self._tracked
        if tracked is not None and task in tracked:
            tracked.discard(task)
            self.in_flight -= 1
            self.signal()

    @property
    def quiescent(self) -> bool:
        """Nothing in flight and no signal pending: no tick would ever come by itself."""
        return not self.pending and self.in_flight == 0


_SETTLE_CONTEXT = contextvars.Context()
"""The context `settle` runs in as a done-callback (entered by one callback at a time)."""


class _Ready:
    """An awaitable that is already done (a pending signal needs no future)."""

    def __await__(self) -> Generator[Any, None, None]:
        return
        yield  # pragma: no cover - makes this a generator


_READY = _Ready()
