"""Checkpoints in PostgreSQL: the SQLite store's contract on a database many processes and hosts
share.

Selected by URL (`postgresql://...`, see checkpoint._target). The tables (`jianmu_checkpoints`,
`jianmu_journal`, `jianmu_decisions`, the recordings') are created and migrated by the library: the applied
versions are rows of `jianmu_schema_version`, and each pending migration runs in one transaction
under an advisory lock, so processes starting together migrate once and never see half a schema.

A run's writes (`commit`) are one statement each, one round trip: the claim (the stored seq and
owner) is checked inside the statement that writes. Only when that check fails does the store
take the slow path: one transaction that first takes a per-thread advisory lock (writers to one
thread queue), re-reads the stored seq and owner and names the conflict (`ThreadConflictError`),
or goes on when the owner it found is a process that is gone. Checkpoints are stored as JSON text
(not jsonb, which refuses `\\u0000` in a tool's output).

Two ways in. The synchronous contract (the command line, the server's listings, approvals) runs
on psycopg's sync `ConnectionPool`: each call one short transaction on a pooled connection. A
run's own calls (`acommit`, `aload`, `ajournal`, `arelease`: the AsyncCheckpointer contract) are
awaited on async connections of the running event loop (checkpoint._aconnections), so a database
round trip never blocks the loop, and the writes of the concurrent runs of one process share
transactions (group commit, checkpoint._groupcommit: while one is in flight the others queue, and
the next carries them all, pipelined in one round trip; `_flush` says how each writer still gets
its own outcome). `pool_size` bounds each: the sync pool, and the async connections of each loop.

Storing a decision also sends `NOTIFY jianmu_decisions, '<thread id>'` in the same transaction
(PostgreSQL delivers it at commit, never for a rolled-back one), and `watch_decisions()` listens
on an async connection of its own: a server holding a suspended run learns at once that an
operator decided from another process.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from .._base.extras import missing_extra

try:
    import psycopg
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError as exc:
    raise missing_extra("postgres", "the PostgreSQL checkpoint store", exc) from exc

from .._base.redact import redact_text, redact_url
from ..state._journal import JournalEntry
from ._aconnections import LoopConnections
from ._contract import Checkpoint, CheckpointError, Commit, DecisionChanges, keep_from_config
from ._groupcommit import GroupCommit
from ._sql import JOURNAL, RECORDING_TABLES, RELEASE, Part, SqlCheckpointStore, journal_of

_LOCK_CLASS = 0x4A4D  # "JM": the advisory-lock namespace of this library
_MIGRATION_LOCK = (_LOCK_CLASS + 1, 0)
DECISIONS_CHANNEL = "jianmu_decisions"
"""The NOTIFY channel of stored decisions; the payload is the thread id ('' when too long)."""
_MAX_PAYLOAD = 4000

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # 1: the checkpoint, journal and decision tables of checkpoint format 2
        """CREATE TABLE jianmu_checkpoints (
            thread_id TEXT PRIMARY KEY, seq BIGINT NOT NULL, status TEXT NOT NULL,
            saved_at DOUBLE PRECISION NOT NULL, data TEXT NOT NULL, owner TEXT)""",
        """CREATE TABLE jianmu_journal (
            thread_id TEXT NOT NULL, call_key TEXT NOT NULL, data TEXT NOT NULL,
            PRIMARY KEY (thread_id, call_key))""",
        """CREATE TABLE jianmu_decisions (
            thread_id TEXT NOT NULL, approval_id TEXT NOT NULL, digest TEXT NOT NULL,
            decision TEXT NOT NULL, PRIMARY KEY (thread_id, approval_id))""",
    ),
    (  # 2: every save is a version (one row per (thread_id, seq)), with its parent and summary
        "ALTER TABLE jianmu_checkpoints DROP CONSTRAINT jianmu_checkpoints_pkey",
        "ALTER TABLE jianmu_checkpoints ADD PRIMARY KEY (thread_id, seq)",
        "ALTER TABLE jianmu_checkpoints ADD COLUMN parent_seq BIGINT",
        "ALTER TABLE jianmu_checkpoints ADD COLUMN summary TEXT",
    ),
    RECORDING_TABLES,  # 3: a thread's recordings (checkpoint._recordings)
)
"""Versioned schema changes: entry N-1 brings a store from version N-1 to N. Append only."""
SCHEMA_VERSION = len(MIGRATIONS)
_GROUP_WRITES = 64
"""Writes one group commit carries at most (checkpoint._groupcommit)."""
_GROUP_PARAMS = 20_000
"""Parameters one group's transaction carries at most (its writes' together)."""


def _cte(parts: list[Part]) -> str:
    """One write's parts as one CTE statement (`?` placeholders) whose one row holds each
    part's row count (PostgreSQL runs a statement as one transaction: the claim checked in a
    part's WHERE and the writes are atomic)."""
    body = ", ".join(f"p{i} AS ({part.sql} RETURNING 1)" for i, part in enumerate(parts))
    counts = ", ".join(f"(SELECT count(*) FROM p{i})" for i in range(len(parts)))
    return f"WITH {body} SELECT {counts}"


def _numbered(sql: str) -> str:
    """`sql`'s `?` placeholders as PostgreSQL's own `$1, $2, ...`: a raw cursor sends the text as
    it is, where psycopg's `%s` style scans it first (uncached for a long statement: that scan
    cost more than the rest of the send)."""
    pieces = sql.split("?")
    return "".join(f"{piece}${i}" for i, piece in enumerate(pieces[:-1], 1)) + pieces[-1]


class _Alone(CheckpointError):
    """A group failed as a whole: its writes go again, each alone (see `_flush`)."""


class PostgresCheckpointer(SqlCheckpointStore):
    """Checkpoints in a PostgreSQL database (tables created or migrated on first use).

    `readonly=True` never creates or changes anything (its sessions are read-only); it refuses a
    database without a store. `url` is kept only to connect; `label` (credentials removed) is
    what messages show.
    """

    thread_order = 'thread_id COLLATE "C"'
    group_flights = 1
    """Write transactions of one event loop in flight at once (group commit, `_awrite`). One
    groups the most and costs the least CPU per write (bench/RESULTS.md, 2026-12-07: 0.27 write
    transactions and 2.8 ms of this process's CPU per run, against 0.66 and 3.1 ms with two)."""

    def __init__(
        self,
        url: str,
        *,
        readonly: bool = False,
        pool_size: int = 4,
        connect_timeout: float = 10.0,
        keep: int | str | None = "config",
    ) -> None:
        """`keep`: versions kept per thread (default: the configuration's `checkpoints.keep`)."""
        self.label = redact_url(url)
        self.keep = keep_from_config(keep)
        self.readonly = readonly
        self._url = url  # only to connect (the pool, a listener); messages show `label`
        self._connect_timeout = connect_timeout
        self._pool_size = max(1, pool_size)
        self._by_loop: dict[asyncio.AbstractEventLoop, LoopConnections] = {}
        """The async connections of each event loop that used this store (see acommit)."""
        self._last: tuple[asyncio.AbstractEventLoop, LoopConnections] | None = None
        """The loop last asked for and its connections (one attribute: threads running loops
        of their own never see one's loop with the other's connections)."""
        self._closed = False
        with self._connect(url, connect_timeout) as conn:
            if readonly:
                self._check_readable(conn)
            else:
                self._migrate(conn)
        self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            url,
            min_size=1,
            max_size=max(1, pool_size),
            kwargs={"autocommit": True, "connect_timeout": max(1, round(connect_timeout))},
            configure=self._configure,
            open=False,
            name="jianmu-checkpoints",
        )
        try:
            self._pool.open(wait=True, timeout=connect_timeout)
        except PoolTimeout as exc:
            self._pool.close()
            raise CheckpointError(f"{self.label}: cannot connect to PostgreSQL ({exc})") from exc

    # ------------------------------------------------------------------ schema
    def _connect(self, url: str, timeout: float) -> psycopg.Connection[Any]:
        try:
            return psycopg.connect(url, autocommit=True, connect_timeout=max(1, round(timeout)))
        except psycopg.Error as exc:
            raise CheckpointError(
                f"{self.label}: cannot connect to PostgreSQL ({redact_text(str(exc).strip())})"
            ) from exc

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        if self.readonly:
            conn.execute("SET default_transaction_read_only = on")

    def _version(self, conn: psycopg.Connection[Any]) -> int | None:
        """The store's schema version; None when the database has no store."""
        row = conn.execute("SELECT to_regclass('jianmu_schema_version') IS NOT NULL").fetchone()
        if row is None or not row[0]:
            return None
        found = conn.execute("SELECT coalesce(max(version), 0) FROM jianmu_schema_version").fetchone()
        return int(found[0]) if found is not None else 0

    def _refuse_newer(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise CheckpointError(
                f"{self.label}: checkpoint schema version {version} is newer than this jianmu_like "
                f"knows ({SCHEMA_VERSION}); upgrade jianmu_like"
            )

    def _check_readable(self, conn: psycopg.Connection[Any]) -> None:
        try:
            version = self._version(conn)
        except psycopg.Error as exc:
            raise CheckpointError(f"{self.label}: cannot read the checkpoint store ({exc})") from exc
        if version is None:
            raise CheckpointError(f"{self.label}: no checkpoint store in this database (no runs saved in it)")
        self._refuse_newer(version)
        if version < SCHEMA_VERSION:
            raise CheckpointError(
                f"{self.label}: checkpoint schema version {version} is older than {SCHEMA_VERSION}; "
                "open it once for writing (a run or an approval) to migrate it"
            )

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        """Apply the pending migrations in one transaction, under an advisory lock (concurrent
        openers queue; the next one finds the work done)."""
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", _MIGRATION_LOCK)
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS jianmu_schema_version ("
                    "version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
                )
                version = self._version(conn) or 0
                self._refuse_newer(version)
                for number in range(version + 1, SCHEMA_VERSION + 1):
                    for statement in MIGRATIONS[number - 1]:
                        conn.execute(statement)
                    conn.execute("INSERT INTO jianmu_schema_version (version) VALUES (%s)", (number,))
        except psycopg.Error as exc:
            raise CheckpointError(
                f"{self.label}: cannot create or migrate the checkpoint store ({exc})"
            ) from exc

    # ------------------------------------------------------------------ plumbing
    @contextmanager
    def _write(self, thread_id: str, what: str) -> Iterator[psycopg.Connection[Any]]:
        """One transaction holding the thread's advisory lock (writers to one thread queue)."""
        if self.readonly:
            raise CheckpointError(f"{self.label}: opened read-only; cannot {what}")
        try:
            with self._pool.connection() as conn, conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_LOCK_CLASS, thread_id))
                yield conn
        except psycopg.Error as exc:
            raise CheckpointError(f"{self.label}: cannot {what} ({exc})") from exc

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s")

    def commit(self, work: Commit) -> None:
        """One statement, one round trip: the work's writes as the parts of one CTE, each write
        that needs the claim carrying it in its own WHERE (PostgreSQL runs a statement as one
        transaction, so the check and the writes are atomic). When a guarded write matched
        nothing (another process saved or owns the thread, or its claim is stale: whether its
        process lives is asked here, not in SQL), the locked transaction of the SQL store decides
        and names the conflict; so does a unique violation (two savers of one version at once)."""
        sql, params, parts = self._statement(work)
        try:
            with self._pool.connection() as conn:
                row = conn.execute(sql, params).fetchone()
        except psycopg.errors.UniqueViolation:
            row = None
        except psycopg.Error as exc:
            raise CheckpointError(f"{self.label}: cannot save checkpoint ({exc})") from exc
        if row is None or any(part.role and not row[i] for i, part in enumerate(parts)):
            super().commit(work)

    def _statement(self, work: Commit) -> tuple[str, tuple[Any, ...], list[Part]]:
        """`work` as one CTE statement (see `commit`), its parameters and its parts."""
        parts = self._guarded_parts(work)
        return self._sql(_cte(parts)), tuple(p for part in parts for p in part.params), parts

    def _guarded_parts(self, work: Commit) -> list[Part]:
        if self.readonly:
            raise CheckpointError(f"{self.label}: opened read-only; cannot save checkpoint")
        return self._parts(work, guarded=True)

    # ------------------------------------------------------------------ async (the run path)
    async def acommit(self, work: Commit) -> None:
        """`commit` on the running loop's connections, in one transaction with the writes other
        runs of the loop make meanwhile (`_awrite`: group commit); the rare conflict's locked
        transaction (which names it) in a thread."""
        parts = self._guarded_parts(work)
        row = await self._awrite(work.thread_id, parts)
        if row is None or any(part.role and not row[i] for i, part in enumerate(parts)):
            await asyncio.to_thread(super().commit, work)

    async def aload(self, thread_id: str) -> Checkpoint | None:
        sql, params = self._load_query(thread_id, None)
        return self._loaded(thread_id, await self._aquery(self._sql(sql), params, "read checkpoint"))

    async def ajournal(self, thread_id: str) -> dict[str, JournalEntry]:
        return journal_of(await self._aquery(self._sql(JOURNAL), (thread_id,), "read journal"))

    async def arelease(self, thread_id: str, owner: str) -> None:
        """One UPDATE (a statement is atomic; no lock needed to clear one's own claim), queued
        behind the thread's writes still in flight (a cancelled save may yet commit)."""
        if self.readonly:
            raise CheckpointError(f"{self.label}: opened read-only; cannot release thread")
        await self._awrite(thread_id, [Part(RELEASE, (thread_id, owner))])

    # ------------------------------------------------------------------ group commit (async writes)
    async def _awrite(self, thread_id: str, parts: list[Part]) -> tuple[Any, ...] | None:
        """Commit `parts` (one write of `thread_id`) with the loop's next group; the row counts of
        its parts, or None when it met a unique violation (the caller's slow path decides)."""
        conns = self._loop_connections()
        if conns.writes is None:
            conns.writes = GroupCommit(
                self._flush, flights=self.group_flights, max_writes=_GROUP_WRITES, max_weight=_GROUP_PARAMS
            )
        writes: GroupCommit[list[Part], tuple[Any, ...] | None] = conns.writes
        try:
            return await writes.submit(parts, thread_id, sum(len(part.params) for part in parts))
        except _Alone:
            return await self._awrite_alone(parts)

    async def _awrite_alone(self, parts: list[Part]) -> tuple[Any, ...] | None:
        """One write in a transaction of its own (after its group failed as a whole)."""
        outcome = (await self._flush([parts]))[0]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    async def _flush(self, writes: list[list[Part]]) -> list[tuple[Any, ...] | BaseException | None]:
        """One group's writes in one transaction: each write's statement (as when alone, so its
        plan is the prepared one), all pipelined in one round trip up to one Sync, which
        commits them together (PostgreSQL runs the statements before a Sync as one implicit
        transaction: all committed, or none). Each write's outcome, in order.

        A write that fails alone fails with its own error (a unique violation: None, for the slow
        path). A group that fails as a whole with the server still answering (a constraint, a
        bad value, a serialisation failure of one of them: the transaction rolled back, nothing of
        it stored) tells each write to go again alone (`_Alone`), so each gets its own outcome.
        A lost connection leaves the commit's outcome unknown: each write fails naming the store,
        as a single statement would (a write retried then could be one already committed)."""
        statements = [
            (_numbered(_cte(parts)), tuple(p for part in parts for p in part.params)) for parts in writes
        ]
        try:
            conns = self._loop_connections()
            conn = await conns.acquire()
        except CheckpointError as exc:  # cannot connect, or closed: each write hears it as it is
            return [CheckpointError(str(exc)) for _ in writes]
        try:
            cursors = []
            if len(statements) == 1:  # alone: its own transaction (autocommit), no pipeline to set up
                cursors.append(await psycopg.AsyncRawCursor(conn).execute(*statements[0]))
            else:
                async with conn.pipeline() as pipeline:
                    for sql, params in statements:
                        cursor = psycopg.AsyncRawCursor(conn)
                        await cursor.execute(sql, params)
                        cursors.append(cursor)
                    await pipeline.sync()
            rows = [await cursor.fetchone() for cursor in cursors]
        except psycopg.Error as exc:
            if len(writes) == 1 and isinstance(exc, psycopg.errors.UniqueViolation):
                return [None]
            if len(writes) == 1 or conn.closed or conn.broken:
                return [CheckpointError(f"{self.label}: cannot save checkpoint ({exc})") for _ in writes]
            return [_Alone() for _ in writes]
        finally:
            conns.release(conn)
        return [tuple(row) if row is not None else () for row in rows]

    async def _aquery(self, sql: str, params: tuple[Any, ...], what: str) -> list[tuple[Any, ...]]:
        """One read on a connection of the running loop (errors name the store and `what`)."""
        conns = self._loop_connections()
        conn = await conns.acquire()
        try:
            cursor = await conn.execute(sql, params)
            return await cursor.fetchall()
        except psycopg.Error as exc:
            raise CheckpointError(f"{self.label}: cannot {what} ({exc})") from exc
        finally:
            conns.release(conn)

    def _loop_connections(self) -> LoopConnections:
        """The running loop's connections (opened on first use; those of closed loops closed)."""
        loop = asyncio.get_running_loop()
        last = self._last
        if last is not None and last[0] is loop:
            return last[1]
        conns = self._by_loop.get(loop)
        if conns is None:
            if self._closed:
                raise CheckpointError(f"{self.label}: the store is closed")
            for gone in [other for other in self._by_loop if other.is_closed()]:
                self._by_loop.pop(gone).close()
            conns = self._by_loop[loop] = LoopConnections(self._aconnect, self._pool_size)
        self._last = (loop, conns)
        return conns

    async def _aconnect(self) -> psycopg.AsyncConnection[Any]:
        try:
            conn = await psycopg.AsyncConnection.connect(
                self._url, autocommit=True, connect_timeout=max(1, round(self._connect_timeout))
            )
            if self.readonly:
                await conn.execute("SET default_transaction_read_only = on")
        except psycopg.Error as exc:
            raise CheckpointError(
                f"{self.label}: cannot connect to PostgreSQL ({redact_text(str(exc).strip())})"
            ) from exc
        return conn

    def _read(self, sql: str, params: tuple[Any, ...], what: str) -> list[tuple[Any, ...]]:
        try:
            with self._pool.connection() as conn:
                return conn.execute(sql, params).fetchall()
        except psycopg.Error as exc:
            raise CheckpointError(f"{self.label}: cannot {what} ({exc})") from exc

    def _decided(self, conn: Any, thread_id: str) -> None:
        payload = thread_id if len(thread_id.encode()) < _MAX_PAYLOAD else ""
        conn.execute("SELECT pg_notify(%s, %s)", (DECISIONS_CHANNEL, payload))

    @asynccontextmanager
    async def watch_decisions(self) -> AsyncIterator[DecisionChanges]:
        """`LISTEN jianmu_decisions` on a connection of its own; each notification names the
        thread whose decision was stored. A lost connection ends the iteration with a
        CheckpointError (the watcher connects again and looks at every thread)."""
        try:
            conn = await psycopg.AsyncConnection.connect(
                self._url, autocommit=True, connect_timeout=max(1, round(self._connect_timeout))
            )
        except psycopg.Error as exc:
            raise CheckpointError(
                f"{self.label}: cannot listen for decisions ({redact_text(str(exc).strip())})"
            ) from exc
        try:
            await conn.execute(f"LISTEN {DECISIONS_CHANNEL}")

            async def changes() -> DecisionChanges:
                try:
                    async for note in conn.notifies():
                        yield note.payload or None
                except psycopg.Error as exc:
                    raise CheckpointError(f"{self.label}: stopped listening for decisions ({exc})") from exc

            yield changes()
        except psycopg.Error as exc:
            raise CheckpointError(f"{self.label}: cannot listen for decisions ({exc})") from exc
        finally:
            await conn.close()

    def close(self) -> None:
        """Close the connections (the async ones of every loop too: no loop is needed)."""
        self._closed = True
        self._last = None
        for conns in self._by_loop.values():
            conns.close()
        self._by_loop.clear()
        self._pool.close()

    async def aclose(self) -> None:
        """`close`, saying goodbye properly on the running loop's connections."""
        conns = self._by_loop.pop(asyncio.get_running_loop(), None)
        if conns is not None:
            await conns.aclose()
        self.close()
