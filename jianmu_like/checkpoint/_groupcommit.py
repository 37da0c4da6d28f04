"""Group commit: the writes of many runs of one event loop carried by one transaction.

A durable run waits for each of its writes to be committed, and on a disk with fsync on a commit
costs a WAL flush. PostgreSQL already flushes the commits that arrive together with one fsync, but
every write is still a transaction of its own: a round trip, a commit record, a backend woken.
Here, while a group's transaction is in flight (`flights` of them at most), the writes submitted
meanwhile wait in a queue, and when one ends the next group takes every one waiting: N runs
committing together pay one transaction, not N. Nothing waits on a timer: a write submitted while
fewer than `flights` groups are in flight starts its group on the loop's next pass (with whatever
else was submitted in that pass).

What each caller can rely on:
- **Its own outcome.** `flush` answers each write of a group separately (a result or an
  exception); one write's failure is not another's. The store decides how (see
  `PostgresCheckpointer._flush`: a group that fails as a whole is retried one write at a time).
- **Durable when it returns.** `submit` returns only after the transaction carrying the write has
  committed.
- **Order per key.** A key (a thread) has at most one write in flight: its next write waits
  until that one's group has committed, so a thread's writes commit in the order submitted.
- **Cancellation.** A caller cancelled while its write waits in the queue takes it out: it is
  never committed. A caller cancelled once its group is in flight does not stop the group (the
  other writers are waiting on it): its write is committed or not as that transaction ends —
  whole or not at all, never half — as with a single statement cancelled on the wire. Either way
  its later writes queue behind it, so they commit after it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from ._contract import CheckpointError

W = TypeVar("W")
R = TypeVar("R")

Flush = Callable[[list[W]], Awaitable[Sequence["R | BaseException"]]]
"""Commit a group's writes in one transaction; one outcome per write, in order."""


@dataclass(eq=False)
class _Queued(Generic[W, R]):
    write: W
    key: str
    weight: int
    future: asyncio.Future[R]


class GroupCommit(Generic[W, R]):
    """The write queue of one event loop (see module docstring).

    `flights`: groups in flight at once (each on a connection of its own; 1 groups the most, a
    few keep the database's backends busy in parallel when one group's statement is long).
    `max_writes` and `max_weight` bound a group (the weight is the caller's measure of a write's
    size, e.g. its parameters); a write heavier than `max_weight` still goes, alone."""

    def __init__(
        self, flush: Flush[W, R], *, flights: int = 1, max_writes: int = 64, max_weight: int = 20_000
    ) -> None:
        self._flush = flush
        self.flights = max(1, flights)
        self.max_writes = max(1, max_writes)
        self.max_weight = max_weight
        self._queue: deque[_Queued[W, R]] = deque()
        self._flying: set[asyncio.Task[None]] = set()
        self.groups = 0
        """Groups flushed so far (what the tests and the benchmark look at)."""
        self.in_flight: list[str] = []
        """The keys of the groups whose transactions are in flight ([] when none is)."""

    @property
    def queued(self) -> int:
        """Writes waiting for a group (those whose callers were cancelled included)."""
        return len(self._queue)

    async def submit(self, write: W, key: str, weight: int = 1) -> R:
        """Commit `write` with the next group; its own outcome (see module docstring)."""
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._queue.append(_Queued(write, key, weight, future))
        self._launch()
        return await future  # cancelled here: see `_take` (queued) and `_fly` (in flight)

    def _launch(self) -> None:
        """Start groups while fewer than `flights` are in flight and writes can go."""
        while len(self._flying) < self.flights and self._queue:
            group = self._take()
            if not group:  # every write waiting is of a thread whose write is in flight
                return
            self.in_flight += [item.key for item in group]
            task = asyncio.get_running_loop().create_task(self._fly(group))
            self._flying.add(task)

    def _take(self) -> list[_Queued[W, R]]:
        """The next group: the queue's writes in order, one per key and none of a key in flight,
        within the bounds (the writes left behind keep their order; a cancelled caller's write
        is dropped)."""
        group: list[_Queued[W, R]] = []
        keys: set[str] = set(self.in_flight)
        weight = 0
        left: deque[_Queued[W, R]] = deque()
        while self._queue:
            item = self._queue.popleft()
            if item.future.done():  # its caller was cancelled while it waited: never written
                continue
            if len(group) >= self.max_writes or (group and weight + item.weight > self.max_weight):
                left.append(item)
                left.extend(self._queue)
                self._queue.clear()
                break
            if item.key in keys:  # the key's earlier write commits first (in flight, or this group)
                left.append(item)
                continue
            group.append(item)
            keys.add(item.key)
            weight += item.weight
        self._queue = left
        return group

    async def _fly(self, group: list[_Queued[W, R]]) -> None:
        """Flush one group; answer each caller with its own outcome; start what can go next."""
        try:
            outcomes = await self._flush([item.write for item in group])
            self.groups += 1
            for item, outcome in zip(group, outcomes, strict=True):
                if item.future.done():  # cancelled in flight: nobody to tell
                    continue
                if isinstance(outcome, BaseException):
                    item.future.set_exception(outcome)
                else:
                    item.future.set_result(outcome)
        except asyncio.CancelledError:  # the loop is closing: so are the callers
            for item in [*group, *self._queue]:
                item.future.cancel()
            self._queue.clear()
            raise
        except Exception as exc:  # a bug in `flush`: each caller hears of it
            for item in group:
                if not item.future.done():
                    item.future.set_exception(CheckpointError(f"group commit failed: {exc!r}"))
        finally:
            for item in group:
                self.in_flight.remove(item.key)
            task = asyncio.current_task()
            if task is not None:
                self._flying.discard(task)
        self._launch()
