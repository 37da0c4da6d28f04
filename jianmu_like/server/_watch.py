"""Watching a checkpoint store for decisions made outside the server (`jianmu-like approvals`).

A server that saves its runs in a store shares it with operators: `jianmu-like approvals
approve|deny` writes a decision row into the store, not into the server. While a run of this
server waits for approvals on a store, a `DecisionWatch` follows that store
(`watch_decisions()`: LISTEN/NOTIFY on PostgreSQL, a poll of `PRAGMA data_version` on SQLite)
and calls `check(thread_id)` for every change, `check(None)` when any thread may have changed:
right after the watch begins (what was stored before it began) and after each reconnection. The
registry then applies what it finds exactly as it applies a decision made over the API.
A watch that fails (a database restart) logs why and starts again, backing off, while wanted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from ..checkpoint._contract import WatchableCheckpointer

log = structlog.get_logger("jianmu_like.server")
RETRY_FIRST, RETRY_MAX = 0.5, 10.0
"""Seconds before watching again after a failure: doubled each time, up to RETRY_MAX."""


class DecisionWatch:
    """Follows one store's decisions while `start()`ed; `stop()` (or cancelling) ends it."""

    def __init__(self, store: WatchableCheckpointer, check: Callable[[str | None], None]) -> None:
        self.store = store
        self.check = check
        self.task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    def start(self) -> None:
        if not self.running:
            self.task = asyncio.get_running_loop().create_task(self._watch(), name="decision-watch")

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            self.task = None

    async def aclose(self) -> None:
        task, self.task = self.task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _watch(self) -> None:
        delay = RETRY_FIRST
        while True:
            try:
                async with self.store.watch_decisions() as changes:
                    delay = RETRY_FIRST
                    self.check(None)  # decisions stored before the watch began
                    async for thread_id in changes:
                        self.check(thread_id)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a lost connection, a locked file: watch again, later
                log.warning("decision watch failed; retrying", error=str(exc), retry_in=delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX)
