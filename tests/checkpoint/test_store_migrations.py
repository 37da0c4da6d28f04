"""Stores written by the previous release (one row per thread, the latest checkpoint only) open
with this one, are migrated in place (versioned), keep their thread, and then keep versions."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import psycopg

from jianmu_like.checkpoint import open_checkpointer
from jianmu_like.checkpoint._contract import Checkpoint
from jianmu_like.checkpoint._postgres import SCHEMA_VERSION
from jianmu_like.checkpoint._store import FORMAT, SQLiteCheckpointer

# The schema SQL of the previous release, verbatim (checkpoint format 2 / PostgreSQL version 1).
OLD_SQLITE = (
    "CREATE TABLE jianmu_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE jianmu_checkpoints (thread_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, status TEXT NOT NULL,"
    " saved_at REAL NOT NULL, data TEXT NOT NULL, owner TEXT);"
    "CREATE TABLE jianmu_journal (thread_id TEXT NOT NULL, call_key TEXT NOT NULL, data TEXT NOT NULL,"
    " PRIMARY KEY (thread_id, call_key));"
    "CREATE TABLE jianmu_decisions (thread_id TEXT NOT NULL, approval_id TEXT NOT NULL, digest TEXT NOT NULL,"
    " decision TEXT NOT NULL, PRIMARY KEY (thread_id, approval_id));"
    "INSERT INTO jianmu_meta VALUES ('format', 'jianmu_like.checkpoint/2');"
)
OLD_POSTGRES = (
    "CREATE TABLE jianmu_schema_version ("
    "version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
    """CREATE TABLE jianmu_checkpoints (
        thread_id TEXT PRIMARY KEY, seq BIGINT NOT NULL, status TEXT NOT NULL,
        saved_at DOUBLE PRECISION NOT NULL, data TEXT NOT NULL, owner TEXT)""",
    """CREATE TABLE jianmu_journal (
        thread_id TEXT NOT NULL, call_key TEXT NOT NULL, data TEXT NOT NULL,
        PRIMARY KEY (thread_id, call_key))""",
    """CREATE TABLE jianmu_decisions (
        thread_id TEXT NOT NULL, approval_id TEXT NOT NULL, digest TEXT NOT NULL,
        decision TEXT NOT NULL, PRIMARY KEY (thread_id, approval_id))""",
    "INSERT INTO jianmu_schema_version (version) VALUES (1)",
)


def old_record(seq: int) -> str:
    """A checkpoint as the previous release wrote it (no parent_seq, no summary)."""
    data = Checkpoint(
        thread_id="t",
        seq=seq,
        status="success",
        schema_name="S",
        schema_fingerprint="s",
        tree_fingerprint="f",
        state={"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]},
    ).model_dump(mode="json", exclude={"parent_seq", "summary"})
    data["format"] = "jianmu_like.checkpoint/2"
    return json.dumps(data)


def new_version(seq: int) -> Checkpoint:
    return Checkpoint(
        thread_id="t",
        seq=seq,
        parent_seq=seq - 1,
        schema_name="S",
        schema_fingerprint="s",
        tree_fingerprint="f",
        state={"messages": []},
    )


def check_migrated(target: str | Path) -> None:
    store = open_checkpointer(target)
    try:
        loaded = store.load("t")
        assert loaded is not None and loaded.seq == 3 and loaded.status == "success"
        [info] = store.history("t")
        assert (info.seq, info.parent_seq, info.messages, info.status) == (3, None, 2, "success")
        store.save(new_version(4), expected_seq=3)
        assert [i.seq for i in store.history("t")] == [4, 3]  # the old checkpoint stays a version
        old = store.load("t", 3)
        assert old is not None and len(old.state["messages"]) == 2
        assert [h.seq for h in store.heads()] == [4] and store.threads() == ["t"]
        store.append_recording("t", "r1", b"x\n", status="success")  # the recording tables came too
        assert store.read_recording("t", "r1") == b"x\n"
    finally:
        store.close()


def test_a_sqlite_store_of_the_previous_format_is_migrated(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:
        conn.executescript(OLD_SQLITE)
        conn.execute(
            "INSERT INTO jianmu_checkpoints VALUES ('t', 3, 'success', 0, ?, NULL)", (old_record(3),)
        )
    reader = SQLiteCheckpointer(db, readonly=True)  # read as it is, never written
    assert [i.seq for i in reader.history("t")] == [3] and reader.heads()[0].messages == 2
    reader.close()
    check_migrated(db)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT value FROM jianmu_meta WHERE key='format'").fetchone() == (FORMAT,)
    check_migrated_again = SQLiteCheckpointer(db)  # a second open finds the work done
    assert [i.seq for i in check_migrated_again.history("t")] == [4, 3]
    check_migrated_again.close()


def test_a_postgres_store_of_the_previous_version_is_migrated(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for statement in OLD_POSTGRES:
            conn.execute(statement)
        conn.execute(
            "INSERT INTO jianmu_checkpoints VALUES ('t', 3, 'success', 0, %s, NULL)", (old_record(3),)
        )
    check_migrated(postgres_url)
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute("SELECT version FROM jianmu_schema_version ORDER BY 1").fetchall()
    assert [r[0] for r in rows] == list(range(1, SCHEMA_VERSION + 1)) and SCHEMA_VERSION == 3
