"""Checkpoints: a run's state and tree progress, saved by thread id, in memory or in SQLite.

A checkpoint lets a suspended run (waiting for an approval) be resumed minutes later by another
process. Only the latest checkpoint of a thread is kept. Next to it, a store keeps two things a
later save must never overwrite: the *journal* of the thread's tool calls (started / finished
with the outcome, written while a batch runs) and the human *decisions* on its approvals (one row
each, so concurrent operators never lose one).

The SQLite store uses the standard library's `sqlite3` in WAL mode with one transaction per
write, so a process killed at any moment leaves the previous or the new record, never half of
one. A save may be conditional (`expected_seq`): it happens only if the stored checkpoint is the
one this process last loaded or saved and no other live process owns the thread; otherwise
`ThreadConflictError`. A file that is not a checkpoint database, or a checkpoint of another state
schema or tree, is refused with a clear error and left untouched; a store opened `readonly`
never creates or changes a file.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field, ValidationError

from ..state.journal import JournalEntry
from .owner import Owner, owner_alive

FORMAT = "jianmu_like.checkpoint/2"
_OLD_FORMATS = ("jianmu_like.checkpoint/1",)
CheckpointStatus = Literal["running", "suspended", "success", "failure"]


class CheckpointError(RuntimeError):
    """A checkpoint cannot be read, written, or does not fit the agent restoring it."""


class ThreadConflictError(CheckpointError):
    """Another process owns the thread, or saved it since this process loaded it."""

    def __init__(self, thread_id: str, detail: str) -> None:
        super().__init__(f"thread {thread_id!r}: {detail}")
        self.thread_id = thread_id


class DecisionConflictError(CheckpointError):
    """A different decision was already stored for an approval."""


class Checkpoint(BaseModel):
    """Everything needed to continue a run."""

    format: str = FORMAT
    thread_id: str
    seq: int = 0
    """Increases with every save of the thread."""
    status: CheckpointStatus = "running"
    owner: str | None = None
    """The process running the thread (see checkpoint.owner); None when nobody does."""
    schema_name: str
    schema_fingerprint: str
    tree_fingerprint: str
    state: dict[str, Any]
    tree: dict[str, dict[str, Any]] = Field(default_factory=dict)
    saved_at: float = Field(default_factory=time.time)


class StoredDecision(BaseModel):
    """A human decision on one approval, as stored (outside the checkpoint's state)."""

    approval_id: str
    digest: str
    """Fingerprint of the approval it answers: a later call reusing the id is a new approval."""
    decision: dict[str, Any]
    new: bool = True
    """False when `record_decision` found this decision already stored (and stored nothing)."""


def schema_fingerprint(schema: type[BaseModel]) -> str:
    """Identifies a state schema by its field names and types (a changed schema cannot load)."""
    shape = "\n".join(f"{name}:{info.annotation!r}" for name, info in schema.model_fields.items())
    return hashlib.sha256(shape.encode()).hexdigest()[:16]


@runtime_checkable
class Checkpointer(Protocol):
    """Stores the latest checkpoint per thread id, the thread's tool journal and decisions."""

    def save(
        self, checkpoint: Checkpoint, *, expected_seq: int | None = None, holder: str | None = None
    ) -> None:
        """Store `checkpoint`; with `expected_seq`, only if the stored seq equals it (0: no
        checkpoint yet) and no live process other than `holder` (the saver's claim, if it has
        one) owns the thread, else ThreadConflictError."""
        ...

    def load(self, thread_id: str) -> Checkpoint | None: ...

    def threads(self) -> list[str]: ...

    def delete(self, thread_id: str) -> None: ...

    def release(self, thread_id: str, owner: str) -> None:
        """Clear the thread's owner if it is still `owner`."""
        ...

    def journal(self, thread_id: str) -> dict[str, JournalEntry]: ...

    def journal_start(self, thread_id: str, entry: JournalEntry, *, owner: str | None = None) -> None:
        """Record a call as started; with `owner`, only while that owner holds the thread."""
        ...

    def journal_finish(self, thread_id: str, key: str, outcome: dict[str, Any]) -> None: ...

    def record_decision(
        self, thread_id: str, approval_id: str, digest: str, decision: dict[str, Any]
    ) -> StoredDecision:
        """Store a decision unless one for the same approval exists (atomically); returns the
        stored one, with `new=False` when it was there before."""
        ...

    def decisions(self, thread_id: str) -> dict[str, StoredDecision]: ...

    def forget(self, thread_id: str) -> None:
        """Drop the thread's journal and decisions (a fresh run starts a new story)."""
        ...


def _check_claim(
    thread_id: str,
    stored: tuple[int, str | None] | None,
    checkpoint: Checkpoint,
    expected_seq: int,
    holder: str | None,
) -> None:
    """Raise ThreadConflictError unless `checkpoint` may replace the stored (seq, owner)."""
    seq, owner = stored if stored is not None else (0, None)
    if owner is not None and owner not in (holder, checkpoint.owner) and owner_alive(owner):
        running = Owner.decode(owner)
        who = running.describe() if running is not None else owner
        raise ThreadConflictError(
            thread_id, f"already being run by {who}; wait for it to finish or suspend, then resume"
        )
    if seq != expected_seq:
        raise ThreadConflictError(
            thread_id,
            f"saved by another process since this one loaded it (stored seq {seq}, expected "
            f"{expected_seq}); reload the thread (resume(thread_id=...)) to continue it",
        )


class MemoryCheckpointer:
    """Checkpoints in a dict: for tests and single-process use (copies on save and load)."""

    def __init__(self) -> None:
        self._data: dict[str, str] = {}
        self._meta: dict[str, tuple[int, str | None]] = {}
        self._journal: dict[str, dict[str, str]] = {}
        self._decisions: dict[str, dict[str, StoredDecision]] = {}
        self._lock = threading.Lock()

    def save(
        self, checkpoint: Checkpoint, *, expected_seq: int | None = None, holder: str | None = None
    ) -> None:
        tid = checkpoint.thread_id
        with self._lock:
            if expected_seq is not None:
                _check_claim(tid, self._meta.get(tid), checkpoint, expected_seq, holder)
            self._data[tid] = checkpoint.model_dump_json()
            self._meta[tid] = (checkpoint.seq, checkpoint.owner)

    def load(self, thread_id: str) -> Checkpoint | None:
        with self._lock:
            raw = self._data.get(thread_id)
        return None if raw is None else Checkpoint.model_validate_json(raw)

    def threads(self) -> list[str]:
        with self._lock:
            return sorted(self._data)

    def delete(self, thread_id: str) -> None:
        with self._lock:
            self._data.pop(thread_id, None)
            self._meta.pop(thread_id, None)
            self._journal.pop(thread_id, None)
            self._decisions.pop(thread_id, None)

    def release(self, thread_id: str, owner: str) -> None:
        with self._lock:
            meta = self._meta.get(thread_id)
            if meta is not None and meta[1] == owner:
                self._meta[thread_id] = (meta[0], None)
                data = Checkpoint.model_validate_json(self._data[thread_id])
                self._data[thread_id] = data.model_copy(update={"owner": None}).model_dump_json()

    def journal(self, thread_id: str) -> dict[str, JournalEntry]:
        with self._lock:
            rows = dict(self._journal.get(thread_id, {}))
        return {key: JournalEntry.model_validate_json(raw) for key, raw in rows.items()}

    def journal_start(self, thread_id: str, entry: JournalEntry, *, owner: str | None = None) -> None:
        with self._lock:
            if owner is not None:
                holder = self._meta.get(thread_id, (0, None))[1]
                if holder != owner:
                    raise ThreadConflictError(
                        thread_id, "no longer owned by this process; not running the call"
                    )
            self._journal.setdefault(thread_id, {})[entry.key] = entry.model_dump_json()

    def journal_finish(self, thread_id: str, key: str, outcome: dict[str, Any]) -> None:
        with self._lock:
            rows = self._journal.setdefault(thread_id, {})
            raw = rows.get(key)
            if raw is None:
                return
            entry = JournalEntry.model_validate_json(raw)
            if entry.status == "started":
                done = entry.model_copy(
                    update={"status": "finished", "outcome": outcome, "finished_at": time.time()}
                )
                rows[key] = done.model_dump_json()

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
        with self._lock:
            self._journal.pop(thread_id, None)
            self._decisions.pop(thread_id, None)


_TABLES = (
    "CREATE TABLE IF NOT EXISTS jianmu_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS jianmu_checkpoints (
        thread_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, status TEXT NOT NULL,
        saved_at REAL NOT NULL, data TEXT NOT NULL, owner TEXT)""",
)
_TABLES_2 = (
    """CREATE TABLE IF NOT EXISTS jianmu_journal (
        thread_id TEXT NOT NULL, call_key TEXT NOT NULL, data TEXT NOT NULL,
        PRIMARY KEY (thread_id, call_key))""",
    """CREATE TABLE IF NOT EXISTS jianmu_decisions (
        thread_id TEXT NOT NULL, approval_id TEXT NOT NULL, digest TEXT NOT NULL,
        decision TEXT NOT NULL, PRIMARY KEY (thread_id, approval_id))""",
)
_OURS = {"jianmu_meta", "jianmu_checkpoints"}


class SQLiteCheckpointer:
    """Checkpoints in a SQLite file (created on first use; a foreign database is refused).

    `readonly=True` opens an existing store without ever writing to it (listing approvals).
    """

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self._lock = threading.Lock()
        self._conn = self._open_readonly() if readonly else self._open()

    def _tables(self, conn: sqlite3.Connection) -> set[str]:
        try:
            return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.DatabaseError as exc:
            conn.close()
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
        found = self._format(conn)
        if found != FORMAT and found not in _OLD_FORMATS:
            conn.close()
            raise CheckpointError(f"{self.path}: checkpoint format {found!r} is not {FORMAT!r}")
        self._v2 = {"jianmu_journal", "jianmu_decisions"} <= tables
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
            raise CheckpointError(f"{self.path}: unreadable checkpoint store ({exc})") from exc
        if found != FORMAT:
            conn.close()
            raise CheckpointError(f"{self.path}: checkpoint format {found!r} is not {FORMAT!r}")
        self._v2 = True
        return conn

    def _create_or_migrate(self, conn: sqlite3.Connection) -> str | None:
        """Create the tables of a new store, or add this format's tables to a format-1 store
        (one transaction: concurrent openers queue and the second finds the work done)."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            if not self._tables_in(conn):
                for statement in _TABLES:
                    conn.execute(statement)
                conn.execute("INSERT OR IGNORE INTO jianmu_meta VALUES ('format', ?)", (FORMAT,))
            found = self._format(conn)
            if found in _OLD_FORMATS:
                conn.execute("ALTER TABLE jianmu_checkpoints ADD COLUMN owner TEXT")
                conn.execute("UPDATE jianmu_meta SET value=? WHERE key='format'", (FORMAT,))
                found = FORMAT
            if found == FORMAT:
                for statement in _TABLES_2:
                    conn.execute(statement)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return found

    @staticmethod
    def _tables_in(conn: sqlite3.Connection) -> set[str]:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}

    @contextmanager
    def _write(self, what: str) -> Iterator[sqlite3.Connection]:
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
                raise CheckpointError(f"{self.path}: cannot {what} ({exc})") from exc

    def _read(self, sql: str, params: tuple[Any, ...], what: str) -> list[Any]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.DatabaseError as exc:
                raise CheckpointError(f"{self.path}: cannot {what} ({exc})") from exc

    def save(
        self, checkpoint: Checkpoint, *, expected_seq: int | None = None, holder: str | None = None
    ) -> None:
        data = checkpoint.model_dump_json()
        tid = checkpoint.thread_id
        with self._write("save checkpoint") as conn:
            if expected_seq is not None:
                row = conn.execute(
                    "SELECT seq, owner FROM jianmu_checkpoints WHERE thread_id=?", (tid,)
                ).fetchone()
                _check_claim(tid, None if row is None else (row[0], row[1]), checkpoint, expected_seq, holder)
            conn.execute(
                "INSERT INTO jianmu_checkpoints (thread_id, seq, status, saved_at, data, owner) "
                "VALUES (?,?,?,?,?,?) ON CONFLICT(thread_id) DO UPDATE SET seq=excluded.seq, "
                "status=excluded.status, saved_at=excluded.saved_at, data=excluded.data, "
                "owner=excluded.owner",
                (tid, checkpoint.seq, checkpoint.status, checkpoint.saved_at, data, checkpoint.owner),
            )

    def load(self, thread_id: str) -> Checkpoint | None:
        rows = self._read(
            "SELECT data FROM jianmu_checkpoints WHERE thread_id=?", (thread_id,), "read checkpoint"
        )
        if not rows:
            return None
        try:
            return Checkpoint.model_validate(json.loads(rows[0][0]))
        except (ValueError, ValidationError) as exc:
            raise CheckpointError(
                f"{self.path}: checkpoint of thread {thread_id!r} is corrupt ({exc})"
            ) from exc

    def threads(self) -> list[str]:
        rows = self._read("SELECT thread_id FROM jianmu_checkpoints ORDER BY thread_id", (), "list threads")
        return [row[0] for row in rows]

    def delete(self, thread_id: str) -> None:
        with self._write("delete thread") as conn:
            for table in ("jianmu_checkpoints", "jianmu_journal", "jianmu_decisions"):
                conn.execute(f"DELETE FROM {table} WHERE thread_id=?", (thread_id,))

    def release(self, thread_id: str, owner: str) -> None:
        with self._write("release thread") as conn:
            conn.execute(
                "UPDATE jianmu_checkpoints SET owner=NULL, data=json_set(data, '$.owner', NULL) "
                "WHERE thread_id=? AND owner=?",
                (thread_id, owner),
            )

    def journal(self, thread_id: str) -> dict[str, JournalEntry]:
        if not self._v2:
            return {}
        rows = self._read("SELECT data FROM jianmu_journal WHERE thread_id=?", (thread_id,), "read journal")
        entries = (JournalEntry.model_validate_json(row[0]) for row in rows)
        return {entry.key: entry for entry in entries}

    def journal_start(self, thread_id: str, entry: JournalEntry, *, owner: str | None = None) -> None:
        with self._write("journal a tool call") as conn:
            if owner is not None:
                row = conn.execute(
                    "SELECT owner FROM jianmu_checkpoints WHERE thread_id=?", (thread_id,)
                ).fetchone()
                if row is None or row[0] != owner:
                    raise ThreadConflictError(
                        thread_id, "no longer owned by this process; not running the call"
                    )
            conn.execute(
                "INSERT OR REPLACE INTO jianmu_journal (thread_id, call_key, data) VALUES (?,?,?)",
                (thread_id, entry.key, entry.model_dump_json()),
            )

    def journal_finish(self, thread_id: str, key: str, outcome: dict[str, Any]) -> None:
        with self._write("journal a tool outcome") as conn:
            row = conn.execute(
                "SELECT data FROM jianmu_journal WHERE thread_id=? AND call_key=?", (thread_id, key)
            ).fetchone()
            if row is None:
                return
            entry = JournalEntry.model_validate_json(row[0])
            if entry.status != "started":
                return
            done = entry.model_copy(
                update={"status": "finished", "outcome": outcome, "finished_at": time.time()}
            )
            conn.execute(
                "UPDATE jianmu_journal SET data=? WHERE thread_id=? AND call_key=?",
                (done.model_dump_json(), thread_id, key),
            )

    def record_decision(
        self, thread_id: str, approval_id: str, digest: str, decision: dict[str, Any]
    ) -> StoredDecision:
        with self._write("record decision") as conn:
            row = conn.execute(
                "SELECT digest, decision FROM jianmu_decisions WHERE thread_id=? AND approval_id=?",
                (thread_id, approval_id),
            ).fetchone()
            if row is not None and row[0] == digest:
                return StoredDecision(
                    approval_id=approval_id, digest=digest, decision=json.loads(row[1]), new=False
                )
            conn.execute(
                "INSERT OR REPLACE INTO jianmu_decisions (thread_id, approval_id, digest, decision) "
                "VALUES (?,?,?,?)",
                (thread_id, approval_id, digest, json.dumps(decision)),
            )
        return StoredDecision(approval_id=approval_id, digest=digest, decision=dict(decision))

    def decisions(self, thread_id: str) -> dict[str, StoredDecision]:
        if not self._v2:
            return {}
        rows = self._read(
            "SELECT approval_id, digest, decision FROM jianmu_decisions WHERE thread_id=?",
            (thread_id,),
            "read decisions",
        )
        return {r[0]: StoredDecision(approval_id=r[0], digest=r[1], decision=json.loads(r[2])) for r in rows}

    def forget(self, thread_id: str) -> None:
        with self._write("clear journal") as conn:
            conn.execute("DELETE FROM jianmu_journal WHERE thread_id=?", (thread_id,))
            conn.execute("DELETE FROM jianmu_decisions WHERE thread_id=?", (thread_id,))

    def close(self) -> None:
        with self._lock:
            self._conn.close()
