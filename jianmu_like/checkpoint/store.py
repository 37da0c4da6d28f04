"""Checkpoints: a run's state and tree progress, saved by thread id, in memory or in SQLite.

A checkpoint lets a suspended run (waiting for an approval) be resumed minutes later by another
process. Only the latest checkpoint of a thread is kept. The SQLite store uses the standard
library's `sqlite3` in WAL mode with one transaction per save, so a process killed at any moment
leaves the previous or the new checkpoint, never half of one. A file that is not a checkpoint
database, or a checkpoint of another state schema or tree, is refused with a clear error and
left untouched.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field, ValidationError

FORMAT = "jianmu_like.checkpoint/1"
CheckpointStatus = Literal["running", "suspended", "success", "failure"]


class CheckpointError(RuntimeError):
    """A checkpoint cannot be read, written, or does not fit the agent restoring it."""


class Checkpoint(BaseModel):
    """Everything needed to continue a run."""

    format: str = FORMAT
    thread_id: str
    seq: int = 0
    """Increases with every save of the thread."""
    status: CheckpointStatus = "running"
    schema_name: str
    schema_fingerprint: str
    tree_fingerprint: str
    state: dict[str, Any]
    tree: dict[str, dict[str, Any]] = Field(default_factory=dict)
    saved_at: float = Field(default_factory=time.time)


def schema_fingerprint(schema: type[BaseModel]) -> str:
    """Identifies a state schema by its field names and types (a changed schema cannot load)."""
    shape = "\n".join(f"{name}:{info.annotation!r}" for name, info in schema.model_fields.items())
    return hashlib.sha256(shape.encode()).hexdigest()[:16]


@runtime_checkable
class Checkpointer(Protocol):
    """Stores the latest checkpoint per thread id."""

    def save(self, checkpoint: Checkpoint) -> None: ...

    def load(self, thread_id: str) -> Checkpoint | None: ...

    def threads(self) -> list[str]: ...

    def delete(self, thread_id: str) -> None: ...


class MemoryCheckpointer:
    """Checkpoints in a dict: for tests and single-process use (copies on save and load)."""

    def __init__(self) -> None:
        self._data: dict[str, str] = {}
        self._lock = threading.Lock()

    def save(self, checkpoint: Checkpoint) -> None:
        with self._lock:
            self._data[checkpoint.thread_id] = checkpoint.model_dump_json()

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


_SCHEMA = """
CREATE TABLE IF NOT EXISTS jianmu_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jianmu_checkpoints (
    thread_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    status TEXT NOT NULL,
    saved_at REAL NOT NULL,
    data TEXT NOT NULL
);
"""


class SQLiteCheckpointer:
    """Checkpoints in a SQLite file (created on first use; a foreign database is refused)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.DatabaseError as exc:
            raise CheckpointError(f"{self.path}: not a SQLite checkpoint file ({exc})") from exc
        ours = {"jianmu_meta", "jianmu_checkpoints"}
        if tables and not ours <= tables:
            conn.close()
            raise CheckpointError(
                f"{self.path}: a SQLite database that is not a jianmu_like checkpoint store "
                f"(tables: {', '.join(sorted(tables))}); refusing to write into it"
            )
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            if not tables:
                conn.executescript(_SCHEMA)
                conn.execute("INSERT OR IGNORE INTO jianmu_meta VALUES ('format', ?)", (FORMAT,))
            row = conn.execute("SELECT value FROM jianmu_meta WHERE key='format'").fetchone()
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise CheckpointError(f"{self.path}: unreadable checkpoint store ({exc})") from exc
        if row is None or row[0] != FORMAT:
            conn.close()
            raise CheckpointError(f"{self.path}: checkpoint format {row and row[0]!r} is not {FORMAT!r}")
        return conn

    def save(self, checkpoint: Checkpoint) -> None:
        data = checkpoint.model_dump_json()
        with self._lock:
            try:
                self._conn.execute(
                    "INSERT INTO jianmu_checkpoints (thread_id, seq, status, saved_at, data) "
                    "VALUES (?,?,?,?,?) ON CONFLICT(thread_id) DO UPDATE SET seq=excluded.seq, "
                    "status=excluded.status, saved_at=excluded.saved_at, data=excluded.data",
                    (checkpoint.thread_id, checkpoint.seq, checkpoint.status, checkpoint.saved_at, data),
                )
            except sqlite3.DatabaseError as exc:
                raise CheckpointError(f"{self.path}: cannot save checkpoint ({exc})") from exc

    def load(self, thread_id: str) -> Checkpoint | None:
        with self._lock:
            try:
                row = self._conn.execute(
                    "SELECT data FROM jianmu_checkpoints WHERE thread_id=?", (thread_id,)
                ).fetchone()
            except sqlite3.DatabaseError as exc:
                raise CheckpointError(f"{self.path}: cannot read checkpoint ({exc})") from exc
        if row is None:
            return None
        try:
            return Checkpoint.model_validate(json.loads(row[0]))
        except (ValueError, ValidationError) as exc:
            raise CheckpointError(
                f"{self.path}: checkpoint of thread {thread_id!r} is corrupt ({exc})"
            ) from exc

    def threads(self) -> list[str]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT thread_id FROM jianmu_checkpoints ORDER BY thread_id"
            ).fetchall()
        return [row[0] for row in rows]

    def delete(self, thread_id: str) -> None:
        with self._lock:
            self._conn.execute("DELETE FROM jianmu_checkpoints WHERE thread_id=?", (thread_id,))

    def close(self) -> None:
        with self._lock:
            self._conn.close()
