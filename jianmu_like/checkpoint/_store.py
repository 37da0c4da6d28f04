"""Checkpoint stores in memory and in SQLite (the contract they implement: checkpoint._contract).

A checkpoint lets a suspended run (waiting for an approval) be resumed minutes later by another
process, and a finished conversation be continued. Every save is a new version of its thread
(append only; `keep` bounds how many a thread keeps). Next to them, a store keeps two things a
later save must never overwrite: the *journal* of the thread's tool calls (started / finished
with the outcome, written while a batch runs) and the human *decisions* on its approvals (one row
each, so concurrent operators never lose one).

The SQLite store uses the standard library's `sqlite3` in WAL mode with one transaction per
write, so a process killed at any moment leaves the previous or the new record, never half of
one. A save may be conditional (`expected_seq`): it happens only if the stored checkpoint is the
one this process last loaded or saved and no other live process owns the thread; otherwise
`ThreadConflictError`. A file that is not a checkpoint database, or a checkpoint of another state
schema or tree, is refused with a clear error and left untouched; a store opened `readonly`
never creates or changes a file. A damaged file (SQLite reports its pages malformed) is a
`CheckpointError` naming the file and what to do, whether the damage shows when it is opened or
at a later read or write; the file is left as it is (`sqlite_problem`).
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from ..state._journal import JournalEntry, finish_entry
from ._contract import (
    FORMAT,
    Checkpoint,
    Checkpointer,
    CheckpointError,
    CheckpointStatus,
    Commit,
    DecisionChanges,
    DecisionConflictError,
    StoredDecision,
    ThreadConflictError,
    check_claim,
    check_new_version,
    check_owner,
    info_from,
    keep_from_config,
    schema_fingerprint,
)
from ._history import CheckpointInfo
from ._recordings import ENDED, RecordingStatus, StoredRecording, to_prune, unknown_recording
from ._sql import RECORDING_TABLES, SqlCheckpointStore

__all__ = [
    "FORMAT",
    "Checkpoint",
    "CheckpointError",
    "CheckpointStatus",
    "Checkpointer",
    "DecisionConflictError",
    "MemoryCheckpointer",
    "SQLiteCheckpointer",
    "StoredDecision",
    "ThreadConflictError",
    "schema_fingerprint",
]

_OLD_FORMATS = ("jianmu_like.checkpoint/1", "jianmu_like.checkpoint/2")
"""Formats a store is migrated from (one step each, see `_MIGRATIONS`); read-only opens read
them as they are."""
POLL_INTERVAL = 0.5
"""Seconds between two looks at a SQLite store's `PRAGMA data_version` while decisions are watched."""


class MemoryCheckpointer:
    """Checkpoints in a dict: for tests and single-process use (copies on save and load)."""

    def __init__(self, *, keep: int | str | None = "config") -> None:
        self.keep = keep_from_config(keep)
        self._versions: dict[str, dict[int, tuple[str, CheckpointInfo]]] = {}
        """Per thread: seq -> (the checkpoint as JSON, its listing row), oldest first."""
        self._meta: dict[str, tuple[int, str | None]] = {}
        """Per thread: (newest seq, owner)."""
        self._journal: dict[str, dict[str, str]] = {}
        self._decisions: dict[str, dict[str, StoredDecision]] = {}
        self._recordings: dict[str, dict[str, tuple[StoredRecording, list[bytes]]]] = {}
        """Per thread: run id -> (its listing row, its chunks), oldest first."""
        self._lock = threading.Lock()

    def save(
        self, checkpoint: Checkpoint, *, expected_seq: int | None = None, holder: str | None = None
    ) -> None:
        self.commit(
            Commit(checkpoint.thread_id, checkpoint=checkpoint, expected_seq=expected_seq, holder=holder)
        )

    def commit(self, work: Commit) -> None:
        tid, checkpoint = work.thread_id, work.checkpoint
        raw = checkpoint.model_dump_json() if checkpoint is not None else ""
        info = info_from(checkpoint) if checkpoint is not None else None
        with self._lock:
            holder = self._meta.get(tid, (0, None))[1]
            if checkpoint is not None:
                if work.expected_seq is not None:
                    check_claim(tid, self._meta.get(tid), checkpoint, work.expected_seq, work.holder)
                else:
                    check_new_version(tid, self._meta.get(tid), checkpoint)
                holder = checkpoint.owner
            if work.started:
                check_owner(tid, work.owner, holder)
            if work.forget:
                self._journal.pop(tid, None)
                self._decisions.pop(tid, None)
            if checkpoint is not None and info is not None:
                versions = self._versions.setdefault(tid, {})
                versions[checkpoint.seq] = (raw, info)
                self._meta[tid] = (checkpoint.seq, checkpoint.owner)
                if self.keep is not None:
                    for seq in [seq for seq in versions if seq <= checkpoint.seq - self.keep]:
                        del versions[seq]
            rows = self._journal.setdefault(tid, {}) if work.started or work.finished else {}
            for entry in work.started:
                rows[entry.key] = entry.model_dump_json()
            for entry in work.finished:
                if entry.key in rows:
                    rows[entry.key] = entry.model_dump_json()

    def load(self, thread_id: str, seq: int | None = None) -> Checkpoint | None:
        with self._lock:
            meta = self._meta.get(thread_id)
            if meta is None:
                return None
            found = self._versions[thread_id].get(meta[0] if seq is None else seq)
        if found is None:
            return None
        checkpoint = Checkpoint.model_validate_json(found[0])
        checkpoint.owner = meta[1] if checkpoint.seq == meta[0] else None
        return checkpoint

    def history(self, thread_id: str) -> list[CheckpointInfo]:
        with self._lock:
            versions = list(self._versions.get(thread_id, {}).values())
        return [info.model_copy(deep=True) for _, info in reversed(versions)]

    def heads(self) -> list[CheckpointInfo]:
        with self._lock:
            found = [self._versions[tid][meta[0]][1] for tid, meta in sorted(self._meta.items())]
        return [info.model_copy(deep=True) for info in found]

    def threads(self) -> list[str]:
        with self._lock:
            return sorted(self._meta)

    def delete(self, thread_id: str) -> None:
        with self._lock:
            self._versions.pop(thread_id, None)
            self._meta.pop(thread_id, None)
            self._journal.pop(thread_id, None)
            self._decisions.pop(thread_id, None)
            self._recordings.pop(thread_id, None)

    def release(self, thread_id: str, owner: str) -> None:
        with self._lock:
            meta = self._meta.get(thread_id)
            if meta is not None and meta[1] == owner:
                self._meta[thread_id] = (meta[0], None)

    def journal(self, thread_id: str) -> dict[str, JournalEntry]:
        with self._lock:
            rows = dict(self._journal.get(thread_id, {}))
        return {key: JournalEntry.model_validate_json(raw) for key, raw in rows.items()}

    def journal_start(self, thread_id: str, entry: JournalEntry, *, owner: str | None = None) -> None:
        self.commit(Commit(thread_id, started=(entry,), owner=owner))

    def journal_finish(self, thread_id: str, key: str, outcome: dict[str, Any]) -> None:
        with self._lock:
            raw = self._journal.get(thread_id, {}).get(key)
        done = finish_entry(JournalEntry.model_validate_json(raw), outcome) if raw is not None else None
        if done is not None:
            self.commit(Commit(thread_id, finished=(done,)))

    def record_decision(
        self, thread_id: str, approval_id: str, digest: str, decision: dict[str, Any]
    ) -> StoredDecision:
        with self._lock:
            rows = self._decisions.setdefault(thread_id, {})
            existing = rows.get(approval_id)
            if existing is not None and existing.digest == digest:
                return existing.model_copy(deep=True, update={"new": False})
            stored = StoredDecision(approval_id=approval_id, digest=digest, decision=dict(decision))
            rows[approval_id] = stored
            return stored.model_copy(deep=True)

    def decisions(self, thread_id: str) -> dict[str, StoredDecision]:
        with self._lock:
            return {k: v.model_copy(deep=True) for k, v in self._decisions.get(thread_id, {}).items()}

    def forget(self, thread_id: str) -> None:
        self.commit(Commit(thread_id, forget=True))

    def append_recording(
        self,
        thread_id: str,
        run_id: str,
        chunk: bytes,
        *,
        status: RecordingStatus,
        truncated: bool = False,
    ) -> None:
        now = time.time()
        with self._lock:
            held = self._recordings.setdefault(thread_id, {})
            found = held.get(run_id)
            if found is None:
                for other, _ in held.values():
                    if other.status == "running":
                        other.status, other.ended_at = "incomplete", now
                number = max((info.number for info, _ in held.values()), default=0) + 1
                info = StoredRecording(
                    thread_id=thread_id, run_id=run_id, number=number, started_at=now, status=status, size=0
                )
                found = held[run_id] = (info, [])
            info, chunks = found
            if chunk:
                chunks.append(bytes(chunk))
            info.size += len(chunk)
            info.status = status
            info.truncated = info.truncated or truncated
            info.ended_at = now if status in ENDED else None

    def recordings(self, thread_id: str) -> list[StoredRecording]:
        with self._lock:
            infos = [info.model_copy() for info, _ in self._recordings.get(thread_id, {}).values()]
        return sorted(infos, key=lambda i: -i.number)

    def read_recording(self, thread_id: str, run_id: str) -> bytes:
        with self._lock:
            found = self._recordings.get(thread_id, {}).get(run_id)
            if found is not None:
                return b"".join(found[1])
        raise unknown_recording(thread_id, run_id, self.recordings(thread_id), "memory store")

    def delete_recording(self, thread_id: str, run_id: str) -> bool:
        with self._lock:
            return self._recordings.get(thread_id, {}).pop(run_id, None) is not None

    def prune_recordings(
        self,
        thread_id: str,
        *,
        max_runs: int | None = None,
        max_bytes: int | None = None,
        keep: Sequence[str] = (),
    ) -> list[str]:
        with self._lock:
            held = self._recordings.get(thread_id, {})
            dropped = to_prune(
                [i for i, _ in held.values()], max_runs=max_runs, max_bytes=max_bytes, keep=keep
            )
            for run_id in dropped:
                del held[run_id]
        return dropped


_CHECKPOINTS = """CREATE TABLE jianmu_checkpoints (
        thread_id TEXT NOT NULL, seq INTEGER NOT NULL, parent_seq INTEGER, status TEXT NOT NULL,
        saved_at REAL NOT NULL, data TEXT NOT NULL, owner TEXT, summary TEXT,
        PRIMARY KEY (thread_id, seq))"""
_TABLES = (
    "CREATE TABLE jianmu_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    _CHECKPOINTS,
)
_TABLES_2 = (
    """CREATE TABLE IF NOT EXISTS jianmu_journal (
        thread_id TEXT NOT NULL, call_key TEXT NOT NULL, data TEXT NOT NULL,
        PRIMARY KEY (thread_id, call_key))""",
    """CREATE TABLE IF NOT EXISTS jianmu_decisions (
        thread_id TEXT NOT NULL, approval_id TEXT NOT NULL, digest TEXT NOT NULL,
        decision TEXT NOT NULL, PRIMARY KEY (thread_id, approval_id))""",
)
_MIGRATIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "jianmu_like.checkpoint/1": (  # -> 2: the thread's owner, the journal and decision tables
        "jianmu_like.checkpoint/2",
        ("ALTER TABLE jianmu_checkpoints ADD COLUMN owner TEXT", *_TABLES_2),
    ),
    "jianmu_like.checkpoint/2": (  # -> 3: one row per version (the latest was the only row)
        "jianmu_like.checkpoint/3",
        (
            "ALTER TABLE jianmu_checkpoints RENAME TO jianmu_checkpoints_2",
            _CHECKPOINTS,
            "INSERT INTO jianmu_checkpoints (thread_id, seq, parent_seq, status, saved_at, data, owner, "
            "summary) SELECT thread_id, seq, NULL, status, saved_at, data, owner, NULL "
            "FROM jianmu_checkpoints_2",
            "DROP TABLE jianmu_checkpoints_2",
        ),
    ),
}
"""Versioned schema changes of a SQLite store, by the format they start from. Append only."""
_RECORDING_TABLES = tuple(
    sql.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS").replace("BYTEA", "BLOB")
    for sql in RECORDING_TABLES
)
"""A thread's recordings (`checkpoint._recordings`), created on every writable open (IF NOT EXISTS)."""
_OURS = {"jianmu_meta", "jianmu_checkpoints"}
_DAMAGED = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}
"""SQLite's result codes for a file whose pages (or header) are not a sound database."""


def sqlite_problem(path: Path, what: str, exc: sqlite3.Error) -> CheckpointError:
    """The one wording of a SQLite failure on `path`: a damaged file says so and what to do
    (the store never repairs or rewrites it); anything else says what could not be done."""
    if getattr(exc, "sqlite_errorcode", None) in _DAMAGED or "malformed" in str(exc):
        return CheckpointError(
            f"{path}: the checkpoint store is damaged ({exc}) and could not {what}; it was left "
            f"unchanged: restore it from a backup, or move it aside to start a new store (the "
            f"`sqlite3` shell's `.recover` may save what is readable)"
        )
    return CheckpointError(f"{path}: cannot {what} ({exc})")


class SQLiteCheckpointer(SqlCheckpointStore):
    """Checkpoints in a SQLite file (created on first use; a foreign database is refused).

    `readonly=True` opens an existing store without ever writing to it (listing approvals).
    """

    def __init__(
        self, path: str | Path, *, readonly: bool = False, keep: int | str | None = "config"
    ) -> None:
        """`keep`: versions kept per thread (default: the configuration's `checkpoints.keep`)."""
        self.path = Path(path)
        self.label = str(self.path)
        self.readonly = readonly
        self.keep = keep_from_config(keep)
        self._found: str | None = None
        self._lock = threading.Lock()
        try:
            self._conn = self._open_readonly() if readonly else self._open()
        except sqlite3.DatabaseError as exc:  # damage the checks below did not expect
            raise sqlite_problem(self.path, "be opened", exc) from exc

    def _tables(self, conn: sqlite3.Connection) -> set[str]:
        try:
            return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.DatabaseError as exc:
            conn.close()
            if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_CORRUPT:
                raise sqlite_problem(self.path, "be opened", exc) from exc
            raise CheckpointError(f"{self.path}: not a SQLite checkpoint file ({exc})") from exc

    def _refuse_foreign(self, conn: sqlite3.Connection, tables: set[str]) -> None:
        if tables and not tables >= _OURS:
            conn.close()
            raise CheckpointError(
                f"{self.path}: a SQLite database that is not a jianmu_like checkpoint store "
                f"(tables: {', '.join(sorted(tables))}); refusing to write into it"
            )

    def _format(self, conn: sqlite3.Connection) -> str | None:
        row = conn.execute("SELECT value FROM jianmu_meta WHERE key='format'").fetchone()
        return None if row is None else str(row[0])

    def _open_readonly(self) -> sqlite3.Connection:
        if not self.path.is_file():
            raise CheckpointError(f"{self.path}: no such checkpoint file")
        uri = f"{self.path.resolve().as_uri()}?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
        except sqlite3.DatabaseError as exc:
            raise CheckpointError(f"{self.path}: cannot open checkpoint file ({exc})") from exc
        tables = self._tables(conn)
        if not tables:
            conn.close()
            raise CheckpointError(f"{self.path}: empty file, not a checkpoint store (no runs saved in it)")
        self._refuse_foreign(conn, tables)
        try:
            found = self._format(conn)
        except sqlite3.DatabaseError:
            conn.close()
            raise
        if found != FORMAT and found not in _OLD_FORMATS:
            conn.close()
            raise CheckpointError(f"{self.path}: checkpoint format {found!r} is not {FORMAT!r}")
        self._v2 = {"jianmu_journal", "jianmu_decisions"} <= tables
        self._recorded = "jianmu_recordings" in tables
        self._found = found
        return conn

    def _open(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30.0)
        except sqlite3.DatabaseError as exc:
            raise CheckpointError(f"{self.path}: not a SQLite checkpoint file ({exc})") from exc
        self._refuse_foreign(conn, self._tables(conn))
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            found = self._create_or_migrate(conn)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise sqlite_problem(self.path, "be opened", exc) from exc
        if found != FORMAT:
            conn.close()
            raise CheckpointError(f"{self.path}: checkpoint format {found!r} is not {FORMAT!r}")
        self._v2 = True
        self._recorded = True
        self._found = found
        return conn

    def _create_or_migrate(self, conn: sqlite3.Connection) -> str | None:
        """Create the tables of a new store, or migrate an older store to this format step by
        step (one transaction: concurrent openers queue and the second finds the work done)."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            if not self._tables_in(conn):
                for statement in (*_TABLES, *_TABLES_2):
                    conn.execute(statement)
                conn.execute("INSERT INTO jianmu_meta VALUES ('format', ?)", (FORMAT,))
            found = self._format(conn)
            while found in _MIGRATIONS:
                found, statements = _MIGRATIONS[found]
                for statement in statements:
                    conn.execute(statement)
                conn.execute("UPDATE jianmu_meta SET value=? WHERE key='format'", (found,))
            # Added without a format step: an older jianmu_like opens the store as before and
            # never sees them (recordings are optional, `checkpoint._recordings`).
            for statement in _RECORDING_TABLES:
                conn.execute(statement)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return found

    def _col(self, name: str) -> str:
        if self._found == FORMAT or (name == "owner" and self._found != "jianmu_like.checkpoint/1"):
            return name
        return "NULL"

    @staticmethod
    def _tables_in(conn: sqlite3.Connection) -> set[str]:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}

    @contextmanager
    def _write(self, thread_id: str, what: str) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE: concurrent writers queue, none is lost)."""
        if self.readonly:
            raise CheckpointError(f"{self.path}: opened read-only; cannot {what}")
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.DatabaseError as exc:
                raise sqlite_problem(self.path, what, exc) from exc

    def _has_journal(self) -> bool:
        return self._v2

    def _has_recordings(self) -> bool:
        return self._recorded

    def _read(self, sql: str, params: tuple[Any, ...], what: str) -> list[Any]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.DatabaseError as exc:
                raise sqlite_problem(self.path, what, exc) from exc

    @asynccontextmanager
    async def watch_decisions(self, interval: float = POLL_INTERVAL) -> AsyncIterator[DecisionChanges]:
        """Report every commit of another connection (another process's decision, or any
        write): SQLite has no notifications, so a connection of its own compares the file's
        `PRAGMA data_version` every `interval` seconds (a cheap read of the WAL index)."""
        try:
            conn = sqlite3.connect(
                f"{self.path.resolve().as_uri()}?mode=ro",
                uri=True,
                check_same_thread=False,
                isolation_level=None,
            )
            seen = conn.execute("PRAGMA data_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise CheckpointError(f"{self.path}: cannot watch for decisions ({exc})") from exc

        async def changes() -> DecisionChanges:
            nonlocal seen
            while True:
                await asyncio.sleep(interval)
                try:
                    now = conn.execute("PRAGMA data_version").fetchone()[0]
                except sqlite3.DatabaseError as exc:
                    raise CheckpointError(f"{self.path}: cannot watch for decisions ({exc})") from exc
                if now != seen:
                    seen = now
                    yield None

        try:
            yield changes()
        finally:
            conn.close()

    def close(self) -> None:
        with self._lock:
            self._conn.close()
