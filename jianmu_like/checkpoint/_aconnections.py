"""The async PostgreSQL connections of one event loop: what the async store (`acommit`, `aload`,
...) runs its statements on.

An `AsyncConnection` belongs to the loop it was opened in, and a process may run many loops one
after another (the command line and tests call `asyncio.run` once per command) or at once (a
thread running its own loop). So the store keeps one `LoopConnections` per loop, opened on the
first call made in that loop, and closes those of a loop that has closed the next time it looks
(`pgconn.finish()`: closing a connection needs no loop). psycopg_pool's `AsyncConnectionPool` is
not used: its background tasks die with the loop that started them (`asyncio.run` cancels them),
leaving connections it can no longer close, and its checkout costs several awaits where this
one, when a connection is idle, costs none.

At most `size` connections: a caller that finds none idle and the limit reached waits in line
and is handed the next connection given back. A connection given back in a transaction or
broken (a statement cancelled half way, a lost server) is closed and its place freed.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from .._base.extras import missing_extra

try:
    import psycopg
    from psycopg.pq import TransactionStatus
except ImportError as exc:
    raise missing_extra("postgres", "the PostgreSQL checkpoint store", exc) from exc

from ._groupcommit import GroupCommit

Connection = psycopg.AsyncConnection[Any]


class LoopConnections:
    """Up to `size` connections of the running loop, opened by `connect` when needed."""

    def __init__(self, connect: Callable[[], Awaitable[Connection]], size: int) -> None:
        self._connect = connect
        self.size = max(1, size)
        self.idle: list[Connection] = []
        self.count = 0
        """Connections open or being opened (idle, in use, or a place handed to a waiter)."""
        self._waiters: deque[asyncio.Future[Connection | None]] = deque()
        self.closed = False
        self.writes: GroupCommit[Any, Any] | None = None
        """The store's write queue on this loop (group commit: checkpoint._groupcommit), made
        by the store on its first write."""

    async def acquire(self) -> Connection:
        """An idle connection, a new one within the limit, or the next one given back."""
        if self.closed:
            raise RuntimeError("the store's connections are closed")
        if self.idle:
            return self.idle.pop()
        if self.count >= self.size:
            waiter: asyncio.Future[Connection | None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                handed = await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():  # handed over as it was cancelled
                    self._hand_on(waiter.result())
                raise
            if handed is not None:
                return handed
            # None: a broken connection freed its place, which is now this caller's to fill
        else:
            self.count += 1
        try:
            return await self._connect()
        except BaseException:
            self._hand_on(None)
            raise

    def release(self, conn: Connection) -> None:
        """Give `conn` back (closed instead when it is broken or not idle)."""
        if self.closed or conn.closed or conn.info.transaction_status != TransactionStatus.IDLE:
            _finish(conn)
            self._hand_on(None)
        else:
            self._hand_on(conn)

    def _hand_on(self, conn: Connection | None) -> None:
        """Pass `conn` (None: a free place) to the first caller waiting, else keep it."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return
        if conn is None:
            self.count -= 1
        elif self.closed:
            _finish(conn)
            self.count -= 1
        else:
            self.idle.append(conn)

    def close(self) -> None:
        """Close the idle connections now (no loop needed); the rest as they are given back."""
        self.closed = True
        idle, self.idle = self.idle, []
        for conn in idle:
            _finish(conn)
        self.count -= len(idle)

    async def aclose(self) -> None:
        """Close the idle connections, telling the server (in their own loop)."""
        self.closed = True
        idle, self.idle = self.idle, []
        self.count -= len(idle)
        for conn in idle:
            await conn.close()


def _finish(conn: Connection) -> None:
    """Close `conn` without its loop (the socket and libpq's state; the server sees it go)."""
    if not conn.closed:
        conn.pgconn.finish()
