"""The checkpoint contract in SQL, written once for every SQL store (SQLite, PostgreSQL).

Both stores keep the same three tables (`jianmu_checkpoints`: one row per version of a thread,
keyed by (thread_id, seq), the newest carrying the thread's owner; `jianmu_journal`,
`jianmu_decisions`) and answer every contract call with the same statements; what differs is how
a store connects, creates its schema, and what one write transaction is (SQLite: BEGIN IMMEDIATE
on its one connection; PostgreSQL: a pooled connection holding the thread's advisory lock). A
store supplies those as `_write`, `_read` and `_sql` (placeholder style); the statements here use
`?` and portable `INSERT ... ON CONFLICT DO UPDATE` upserts.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, cast

from pydantic import ValidationError

from ..state._journal import JournalEntry, finish_entry
from ._contract import (
    Checkpoint,
    CheckpointError,
    Commit,
    StoredDecision,
    check_claim,
    check_new_version,
    check_owner,
    summary_of,
)
from ._history import CheckpointInfo, info_of
from ._recordings import ENDED, RecordingStatus, StoredRecording, to_prune, unknown_recording

_HEAD_SEQ = "SELECT seq FROM jianmu_checkpoints WHERE thread_id=? ORDER BY seq DESC LIMIT 1"
_HEAD_OWNER = "SELECT owner FROM jianmu_checkpoints WHERE thread_id=? ORDER BY seq DESC LIMIT 1"
JOURNAL = "SELECT data FROM jianmu_journal WHERE thread_id=?"
"""A thread's journal rows (`journal_of` reads them)."""
RELEASE = "UPDATE jianmu_checkpoints SET owner=NULL WHERE thread_id=? AND owner=?"
"""Clear a claim (the owner column; a version's content never changes)."""
RECORDING_TABLES = (
    """CREATE TABLE jianmu_recordings (
        thread_id TEXT NOT NULL, run_id TEXT NOT NULL, number BIGINT NOT NULL,
        started_at DOUBLE PRECISION NOT NULL, ended_at DOUBLE PRECISION, status TEXT NOT NULL,
        size BIGINT NOT NULL, truncated INTEGER NOT NULL, chunks BIGINT NOT NULL,
        PRIMARY KEY (thread_id, run_id))""",
    """CREATE TABLE jianmu_recording_chunks (
        thread_id TEXT NOT NULL, run_id TEXT NOT NULL, n BIGINT NOT NULL, data BYTEA NOT NULL,
        PRIMARY KEY (thread_id, run_id, n))""",
)
"""A thread's recordings (checkpoint._recordings): one listing row per recording, its bytes in
chunks appended as the run goes (PostgreSQL's types; SQLite stores BYTEA as BLOB)."""
_RECORDING_ROW = (
    "SELECT thread_id, run_id, number, started_at, ended_at, status, size, truncated FROM jianmu_recordings"
)


def journal_of(rows: list[Any]) -> dict[str, JournalEntry]:
    """The journal entries of `JOURNAL`'s rows, by key."""
    entries = (JournalEntry.model_validate_json(row[0]) for row in rows)
    return {entry.key: entry for entry in entries}


@dataclass(frozen=True)
class Part:
    """One statement of a commit (`role` names the guarded writes whose row count matters)."""

    sql: str
    params: tuple[Any, ...]
    role: str = ""


class SqlCheckpointStore(ABC):
    """The contract's methods over a store's `_write` / `_read` primitives (see module docstring)."""

    label: str
    """How messages name the store (a path, or a URL without credentials)."""
    keep: int | None = None
    """Versions kept per thread (the newest N; None: all)."""
    thread_order = "thread_id"
    """ORDER BY clause listing threads (PostgreSQL sorts bytewise with COLLATE "C", as SQLite)."""

    # ------------------------------------------------------------------ primitives
    @abstractmethod
    def _write(self, thread_id: str, what: str) -> AbstractContextManager[Any]:
        """One write transaction for `thread_id` (errors become CheckpointError naming `what`)."""

    @abstractmethod
    def _read(self, sql: str, params: tuple[Any, ...], what: str) -> list[Any]:
        """All rows of one query (errors become CheckpointError naming `what`)."""

    def _sql(self, sql: str) -> str:
        """`sql` in the store's placeholder style (written here with `?`)."""
        return sql

    def _has_journal(self) -> bool:
        """Whether the journal and decision tables exist (a read-only old store may lack them)."""
        return True

    def _has_recordings(self) -> bool:
        """Whether the recording tables exist (a read-only old SQLite store may lack them)."""
        return True

    def _decided(self, conn: Any, thread_id: str) -> None:
        """Inside the transaction that stored a decision: tell watchers (PostgreSQL notifies;
        SQLite watchers see the file change)."""
        return None

    def _exec(self, conn: Any, sql: str, params: tuple[Any, ...] = ()) -> Any:
        return conn.execute(self._sql(sql), params)

    def _select(self, sql: str, params: tuple[Any, ...], what: str) -> list[Any]:
        return self._read(self._sql(sql), params, what)

    # ------------------------------------------------------------------ checkpoints
    def _col(self, name: str) -> str:
        """The SQL for column `name` of `jianmu_checkpoints` (an old store opened read-only,
        which cannot be migrated, answers NULL for columns it lacks)."""
        return name

    def _head(self, conn: Any, thread_id: str) -> tuple[int, str | None] | None:
        row = self._exec(
            conn,
            f"SELECT seq, {self._col('owner')} FROM jianmu_checkpoints WHERE thread_id=? "
            "ORDER BY seq DESC LIMIT 1",
            (thread_id,),
        ).fetchone()
        return None if row is None else (int(row[0]), row[1])

    def save(
        self, checkpoint: Checkpoint, *, expected_seq: int | None = None, holder: str | None = None
    ) -> None:
        self.commit(
            Commit(checkpoint.thread_id, checkpoint=checkpoint, expected_seq=expected_seq, holder=holder)
        )

    def commit(self, work: Commit) -> None:
        """One write transaction: the head read and checked here, then the work's statements."""
        tid, checkpoint = work.thread_id, work.checkpoint
        what = "save checkpoint" if checkpoint is not None else "journal tool calls"
        with self._write(tid, what) as conn:
            owner: str | None = None
            if checkpoint is not None or (work.started and work.owner is not None):
                stored = self._head(conn, tid)
                owner = stored[1] if stored is not None else None
                if checkpoint is not None:
                    if work.expected_seq is not None:
                        check_claim(tid, stored, checkpoint, work.expected_seq, work.holder)
                    else:
                        check_new_version(tid, stored, checkpoint)
                    owner = checkpoint.owner
            if work.started:
                check_owner(tid, work.owner, owner)
            for part in self._parts(work, guarded=False):
                self._exec(conn, part.sql, part.params)

    def _parts(self, work: Commit, *, guarded: bool) -> list[Part]:
        """The statements of `work`, in order. `guarded`: each write that needs the thread's
        claim carries it in its own WHERE (the head's seq and owner, read in the statement), so
        the work can run as one statement without a prior read (PostgreSQL's one round trip);
        a guarded write that matched no row means the claim did not hold."""
        tid, checkpoint = work.thread_id, work.checkpoint
        guard, guard_params = "1=1", cast(tuple[Any, ...], ())
        if guarded and checkpoint is not None:
            guard, guard_params = self._claim(work)
        parts: list[Part] = []
        if work.forget:
            parts += [
                Part(f"DELETE FROM {table} WHERE thread_id=? AND {guard}", (tid, *guard_params))
                for table in ("jianmu_journal", "jianmu_decisions")
            ]
        if checkpoint is not None:
            parts.append(
                Part(
                    "INSERT INTO jianmu_checkpoints "
                    "(thread_id, seq, parent_seq, status, saved_at, data, owner, summary) "
                    "SELECT CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS TEXT), "
                    "CAST(? AS DOUBLE PRECISION), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT) "
                    f"WHERE {guard}",
                    (
                        tid,
                        checkpoint.seq,
                        checkpoint.parent_seq,
                        checkpoint.status,
                        checkpoint.saved_at,
                        checkpoint.model_dump_json(),
                        checkpoint.owner,
                        summary_of(checkpoint).model_dump_json(),
                        *guard_params,
                    ),
                    "checkpoint",
                )
            )
            if self.keep is not None:
                parts.append(
                    Part(
                        f"DELETE FROM jianmu_checkpoints WHERE thread_id=? AND seq<=? AND {guard}",
                        (tid, checkpoint.seq - self.keep, *guard_params),
                    )
                )
        if work.started:
            where, where_params = guard, guard_params
            if guarded and checkpoint is None and work.owner is not None:
                where, where_params = f"({_HEAD_OWNER})=?", (tid, work.owner)
            rows = ",".join("(?,?,?)" for _ in work.started)
            values = tuple(v for e in work.started for v in (tid, e.key, e.model_dump_json()))
            parts.append(
                Part(
                    "INSERT INTO jianmu_journal (thread_id, call_key, data) SELECT column1, column2, "
                    f"column3 FROM (VALUES {rows}) AS v WHERE {where} "
                    "ON CONFLICT (thread_id, call_key) DO UPDATE SET data=excluded.data",
                    (*values, *where_params),
                    "started",
                )
            )
        parts += [
            Part(
                f"UPDATE jianmu_journal SET data=? WHERE thread_id=? AND call_key=? AND {guard}",
                (entry.model_dump_json(), tid, entry.key, *guard_params),
            )
            for entry in work.finished
        ]
        return parts

    def _claim(self, work: Commit) -> tuple[str, tuple[Any, ...]]:
        """The claim of a conditional save as a WHERE clause: the head is the expected version and
        unowned or owned by the saver (a live-process check of another owner needs the slow path)."""
        assert work.checkpoint is not None
        tid = work.thread_id
        if work.expected_seq is None:  # an unconditional save: only a newer version
            return f"coalesce(({_HEAD_SEQ}), 0)<?", (tid, work.checkpoint.seq)
        return (
            f"coalesce(({_HEAD_SEQ}), 0)=? AND coalesce(({_HEAD_OWNER}), '') IN ('', ?, ?)",
            (tid, work.expected_seq, tid, work.holder or "", work.checkpoint.owner or ""),
        )

    def load(self, thread_id: str, seq: int | None = None) -> Checkpoint | None:
        return self._loaded(thread_id, self._select(*self._load_query(thread_id, seq), "read checkpoint"))

    def _load_query(self, thread_id: str, seq: int | None) -> tuple[str, tuple[Any, ...]]:
        """The query of `load` (`?` placeholders): (data, owner of the head) of the version."""
        owner = self._col("owner")
        if seq is None:
            return (
                f"SELECT data, {owner} FROM jianmu_checkpoints WHERE thread_id=? ORDER BY seq DESC LIMIT 1",
                (thread_id,),
            )
        return (
            f"SELECT data, CASE WHEN seq=(SELECT max(seq) FROM jianmu_checkpoints WHERE thread_id=?) "
            f"THEN {owner} END FROM jianmu_checkpoints WHERE thread_id=? AND seq=?",
            (thread_id, thread_id, seq),
        )

    def _loaded(self, thread_id: str, rows: list[Any]) -> Checkpoint | None:
        """The checkpoint `_load_query` found (CheckpointError naming the store when corrupt)."""
        if not rows:
            return None
        try:
            checkpoint = Checkpoint.model_validate_json(rows[0][0])
        except (ValueError, ValidationError) as exc:
            raise CheckpointError(
                f"{self.label}: checkpoint of thread {thread_id!r} is corrupt ({exc})"
            ) from exc
        checkpoint.owner = rows[0][1]
        return checkpoint

    def _infos(self, where: str, params: tuple[Any, ...], what: str) -> list[CheckpointInfo]:
        summary = self._col("summary")
        rows = self._select(
            f"SELECT thread_id, seq, {self._col('parent_seq')}, status, saved_at, {summary}, "
            f"CASE WHEN {summary} IS NULL THEN data END FROM jianmu_checkpoints c WHERE {where}",
            params,
            what,
        )
        try:
            return [info_of(str(r[0]), int(r[1]), r[2], str(r[3]), float(r[4]), r[5], r[6]) for r in rows]
        except (ValueError, ValidationError) as exc:
            raise CheckpointError(f"{self.label}: a checkpoint is corrupt ({exc})") from exc

    def history(self, thread_id: str) -> list[CheckpointInfo]:
        return self._infos("thread_id=? ORDER BY seq DESC", (thread_id,), "read history")

    def heads(self) -> list[CheckpointInfo]:
        return self._infos(
            "seq=(SELECT max(seq) FROM jianmu_checkpoints d WHERE d.thread_id=c.thread_id) "
            f"ORDER BY {self.thread_order}",
            (),
            "list threads",
        )

    def threads(self) -> list[str]:
        rows = self._select(
            f"SELECT thread_id FROM jianmu_checkpoints GROUP BY thread_id ORDER BY {self.thread_order}",
            (),
            "list threads",
        )
        return [str(row[0]) for row in rows]

    def delete(self, thread_id: str) -> None:
        with self._write(thread_id, "delete thread") as conn:
            for table in (
                "jianmu_checkpoints",
                "jianmu_journal",
                "jianmu_decisions",
                "jianmu_recordings",
                "jianmu_recording_chunks",
            ):
                self._exec(conn, f"DELETE FROM {table} WHERE thread_id=?", (thread_id,))

    def release(self, thread_id: str, owner: str) -> None:
        """Clear the claim (the owner column; a version's content never changes)."""
        with self._write(thread_id, "release thread") as conn:
            self._exec(conn, RELEASE, (thread_id, owner))

    # ------------------------------------------------------------------ journal
    def journal(self, thread_id: str) -> dict[str, JournalEntry]:
        if not self._has_journal():
            return {}
        return journal_of(self._select(JOURNAL, (thread_id,), "read journal"))

    def journal_start(self, thread_id: str, entry: JournalEntry, *, owner: str | None = None) -> None:
        self.commit(Commit(thread_id, started=(entry,), owner=owner))

    def journal_finish(self, thread_id: str, key: str, outcome: dict[str, Any]) -> None:
        sql = "SELECT data FROM jianmu_journal WHERE thread_id=? AND call_key=?"
        rows = self._select(sql, (thread_id, key), "read journal")
        done = finish_entry(JournalEntry.model_validate_json(rows[0][0]), outcome) if rows else None
        if done is not None:
            self.commit(Commit(thread_id, finished=(done,)))

    # ------------------------------------------------------------------ decisions
    def record_decision(
        self, thread_id: str, approval_id: str, digest: str, decision: dict[str, Any]
    ) -> StoredDecision:
        with self._write(thread_id, "record decision") as conn:
            row = self._exec(
                conn,
                "SELECT digest, decision FROM jianmu_decisions WHERE thread_id=? AND approval_id=?",
                (thread_id, approval_id),
            ).fetchone()
            if row is not None and row[0] == digest:
                return StoredDecision(
                    approval_id=approval_id, digest=digest, decision=json.loads(row[1]), new=False
                )
            self._exec(
                conn,
                "INSERT INTO jianmu_decisions (thread_id, approval_id, digest, decision) "
                "VALUES (?,?,?,?) ON CONFLICT (thread_id, approval_id) "
                "DO UPDATE SET digest=excluded.digest, decision=excluded.decision",
                (thread_id, approval_id, digest, json.dumps(decision)),
            )
            self._decided(conn, thread_id)
        return StoredDecision(approval_id=approval_id, digest=digest, decision=dict(decision))

    def decisions(self, thread_id: str) -> dict[str, StoredDecision]:
        if not self._has_journal():
            return {}
        rows = self._select(
            "SELECT approval_id, digest, decision FROM jianmu_decisions WHERE thread_id=?",
            (thread_id,),
            "read decisions",
        )
        return {r[0]: StoredDecision(approval_id=r[0], digest=r[1], decision=json.loads(r[2])) for r in rows}

    def forget(self, thread_id: str) -> None:
        self.commit(Commit(thread_id, forget=True))

    # ------------------------------------------------------------------ recordings
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
        with self._write(thread_id, "store the run's recording") as conn:
            row = self._exec(
                conn,
                "SELECT chunks FROM jianmu_recordings WHERE thread_id=? AND run_id=?",
                (thread_id, run_id),
            ).fetchone()
            if row is None:
                self._exec(
                    conn,
                    "UPDATE jianmu_recordings SET status='incomplete', ended_at=? "
                    "WHERE thread_id=? AND status='running'",
                    (now, thread_id),
                )
                self._exec(
                    conn,
                    "INSERT INTO jianmu_recordings "
                    "(thread_id, run_id, number, started_at, status, size, truncated, chunks) "
                    "SELECT CAST(? AS TEXT), CAST(? AS TEXT), coalesce(max(number), 0) + 1, "
                    "CAST(? AS DOUBLE PRECISION), CAST(? AS TEXT), 0, 0, 0 "
                    "FROM jianmu_recordings WHERE thread_id=?",
                    (thread_id, run_id, now, status, thread_id),
                )
            n = 0 if row is None else int(row[0])
            if chunk:
                self._exec(
                    conn,
                    "INSERT INTO jianmu_recording_chunks (thread_id, run_id, n, data) VALUES (?,?,?,?)",
                    (thread_id, run_id, n, bytes(chunk)),
                )
            self._exec(
                conn,
                "UPDATE jianmu_recordings SET size=size+?, chunks=chunks+?, status=?, ended_at=?, "
                "truncated=CASE WHEN ?=1 THEN 1 ELSE truncated END WHERE thread_id=? AND run_id=?",
                (
                    len(chunk),
                    1 if chunk else 0,
                    status,
                    now if status in ENDED else None,
                    1 if truncated else 0,
                    thread_id,
                    run_id,
                ),
            )

    @staticmethod
    def _recording_infos(rows: list[Any]) -> list[StoredRecording]:
        return [
            StoredRecording(
                thread_id=str(r[0]),
                run_id=str(r[1]),
                number=int(r[2]),
                started_at=float(r[3]),
                ended_at=None if r[4] is None else float(r[4]),
                status=r[5],
                size=int(r[6]),
                truncated=bool(r[7]),
            )
            for r in rows
        ]

    def recordings(self, thread_id: str) -> list[StoredRecording]:
        if not self._has_recordings():
            return []
        rows = self._select(
            f"{_RECORDING_ROW} WHERE thread_id=? ORDER BY number DESC", (thread_id,), "list recordings"
        )
        return self._recording_infos(rows)

    def read_recording(self, thread_id: str, run_id: str) -> bytes:
        if self._has_recordings():
            held = self._select(
                "SELECT 1 FROM jianmu_recordings WHERE thread_id=? AND run_id=?",
                (thread_id, run_id),
                "read recording",
            )
            if held:
                rows = self._select(
                    "SELECT data FROM jianmu_recording_chunks WHERE thread_id=? AND run_id=? ORDER BY n",
                    (thread_id, run_id),
                    "read recording",
                )
                return b"".join(bytes(row[0]) for row in rows)
        raise unknown_recording(thread_id, run_id, self.recordings(thread_id), self.label)

    def delete_recording(self, thread_id: str, run_id: str) -> bool:
        with self._write(thread_id, "delete recording") as conn:
            self._exec(
                conn,
                "DELETE FROM jianmu_recording_chunks WHERE thread_id=? AND run_id=?",
                (thread_id, run_id),
            )
            cursor = self._exec(
                conn, "DELETE FROM jianmu_recordings WHERE thread_id=? AND run_id=?", (thread_id, run_id)
            )
            return bool(cursor.rowcount)

    def prune_recordings(
        self,
        thread_id: str,
        *,
        max_runs: int | None = None,
        max_bytes: int | None = None,
        keep: Sequence[str] = (),
    ) -> list[str]:
        with self._write(thread_id, "prune recordings") as conn:
            rows = self._exec(conn, f"{_RECORDING_ROW} WHERE thread_id=?", (thread_id,)).fetchall()
            dropped = to_prune(self._recording_infos(rows), max_runs=max_runs, max_bytes=max_bytes, keep=keep)
            for run_id in dropped:
                for table in ("jianmu_recording_chunks", "jianmu_recordings"):
                    self._exec(
                        conn, f"DELETE FROM {table} WHERE thread_id=? AND run_id=?", (thread_id, run_id)
                    )
        return dropped
