"""Turns: the order in which one run's writes reach its store.

A run's writes must land in the order it made them: each save is conditional on the version the
one before it added, and the run decides that version when it makes the write (the state of that
tick), not when the write lands. With an async store the writes are awaited, so several can be
under way at once: tool calls of a parallel batch recording their outcomes, a save in the
background (`durability="async"`), the save after a tick. Each takes a ticket when it is made
(no await in between) and waits for the writes with earlier tickets; a writer cancelled while it
waits gives its turn to the next. No lock: an `asyncio.Lock` binds itself to the first loop that
waits on it, and one agent's runs may use many loops.
"""

from __future__ import annotations

import asyncio


class Turns:
    """Tickets served in order, one at a time."""

    def __init__(self) -> None:
        self._taken = 0
        self._serving = 0
        self._waiting: dict[int, asyncio.Future[None]] = {}
        self._skipped: set[int] = set()

    def take(self) -> int:
        """The next ticket (call it where the write is made, before any await)."""
        ticket = self._taken
        self._taken += 1
        return ticket

    async def wait(self, ticket: int) -> None:
        """Return when it is `ticket`'s turn; the holder must call `done()` after. Cancelled
        while waiting, the ticket is given up (the turn passes it by)."""
        if ticket == self._serving:
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting[ticket] = turn
        try:
            await turn
        except asyncio.CancelledError:
            if self._waiting.pop(ticket, None) is turn and not turn.done():
                self._skipped.add(ticket)  # gone before its turn: the next one goes in its place
            else:
                self.done()  # its turn had come: pass it on
            raise

    def done(self) -> None:
        """The current turn is over: the next ticket (skipping given-up ones) may go."""
        self._serving += 1
        while self._serving in self._skipped:
            self._skipped.discard(self._serving)
            self._serving += 1
        turn = self._waiting.pop(self._serving, None)
        if turn is not None and not turn.done():
            turn.set_result(None)
