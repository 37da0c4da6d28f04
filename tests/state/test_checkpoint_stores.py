"""The checkpoint stores agree (memory, SQLite, PostgreSQL): conditional saves, the tool
journal, decisions; an old SQLite store is upgraded in place; PostgreSQL schemas are versioned."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from jianmu_like.checkpoint import open_checkpointer
from jianmu_like.checkpoint._owner import new_owner
from jianmu_like.checkpoint._store import (
    Checkpoint,
    Checkpointer,
    CheckpointError,
    MemoryCheckpointer,
    SQLiteCheckpointer,
    ThreadConflictError,
)
from jianmu_like.state._journal import JournalEntry


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Checkpointer]:
    if request.param == "memory":
        yield MemoryCheckpointer()
        return
    target = tmp_path / "runs.db" if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    opened = open_checkpointer(target)
    yield opened
    opened.close()


def checkpoint(seq: int, owner: str | None = None, status: str = "running") -> Checkpoint:
    return Checkpoint(
        thread_id="t",
        seq=seq,
        owner=owner,
        status=status,  # type: ignore[arg-type]
        schema_name="S",
        schema_fingerprint="s",
        tree_fingerprint="t",
        state={"n": seq},
    )


def test_conditional_saves_refuse_a_stale_seq_and_a_live_owner(store: Checkpointer) -> None:
    mine = new_owner().encode()
    store.save(checkpoint(1, mine), expected_seq=0)
    store.save(checkpoint(2, mine), expected_seq=1, holder=mine)
    with pytest.raises(
        ThreadConflictError, match=r"thread 't': saved by another process .*seq 2, expected 1"
    ):
        store.save(checkpoint(2, mine), expected_seq=1, holder=mine)
    other = new_owner().encode()  # another claim of this (live) process
    with pytest.raises(ThreadConflictError, match="thread 't': already being run by process"):
        store.save(checkpoint(3, other), expected_seq=2)
    store.release("t", mine)
    store.save(checkpoint(3, other), expected_seq=2)  # released: free to claim
    dead = mine.replace(f"/{new_owner().pid}/", "/999999999/")  # a process that is gone
    store.save(checkpoint(4, dead), expected_seq=3, holder=other)
    store.save(checkpoint(5, other), expected_seq=4)
    loaded = store.load("t")
    assert loaded is not None and loaded.seq == 5 and loaded.owner == other


def test_journal_and_decisions(store: Checkpointer) -> None:
    mine = new_owner().encode()
    store.save(checkpoint(1, mine), expected_seq=0)
    store.journal_start(
        "t", JournalEntry(key="k1", tool_call_id="c1", tool="x", status="started"), owner=mine
    )
    store.journal_finish("t", "k1", {"content": "ok"})
    store.journal_finish("t", "k1", {"content": "later"})  # a finished call keeps its outcome
    [entry] = store.journal("t").values()
    assert entry.status == "finished" and entry.outcome == {"content": "ok"}
    with pytest.raises(ThreadConflictError, match="no longer owned"):
        store.journal_start(
            "t", JournalEntry(key="k2", tool_call_id="c2", tool="x", status="started"), owner="x"
        )

    first = store.record_decision("t", "c1", "d1", {"approved": True})
    again = store.record_decision("t", "c1", "d1", {"approved": False})
    assert first.new and not again.new and again.decision == {"approved": True}
    reused = store.record_decision("t", "c1", "d2", {"approved": False})  # a new approval, same id
    assert reused.new and store.decisions("t")["c1"].digest == "d2"
    store.forget("t")
    assert store.journal("t") == {} and store.decisions("t") == {}


def test_a_format_1_store_is_upgraded_and_readonly_never_writes(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:
        conn.executescript(
            "CREATE TABLE jianmu_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
            "CREATE TABLE jianmu_checkpoints (thread_id TEXT PRIMARY KEY, seq INTEGER NOT NULL,"
            " status TEXT NOT NULL, saved_at REAL NOT NULL, data TEXT NOT NULL);"
            "INSERT INTO jianmu_meta VALUES ('format', 'jianmu_like.checkpoint/1');"
        )
        conn.execute(
            "INSERT INTO jianmu_checkpoints VALUES ('t', 1, 'suspended', 0, ?)",
            (checkpoint(1, status="suspended").model_dump_json(),),
        )
    before = db.read_bytes()
    old = SQLiteCheckpointer(db, readonly=True)
    assert old.threads() == ["t"] and old.decisions("t") == {} and old.journal("t") == {}
    old.close()
    assert db.read_bytes() == before

    upgraded = SQLiteCheckpointer(db)
    upgraded.save(checkpoint(2), expected_seq=1)
    upgraded.record_decision("t", "c", "d", {"approved": True})
    upgraded.close()
    with pytest.raises(CheckpointError, match="opened read-only"):
        SQLiteCheckpointer(db, readonly=True).save(checkpoint(3))


async def test_a_decision_stored_by_another_process_reaches_a_watcher(store_target: str) -> None:
    """SQLite reports any commit of another connection (None: look at every thread); PostgreSQL
    the thread named by the NOTIFY sent in the decision's own transaction."""
    import asyncio
    import subprocess
    import sys

    from jianmu_like.checkpoint._contract import WatchableCheckpointer

    decide = (
        "import sys; from jianmu_like.checkpoint import open_checkpointer; "
        "s = open_checkpointer(sys.argv[1]); "
        "s.record_decision('t9', 'call_1', 'digest', {'approved': True}); s.close()"
    )
    store = open_checkpointer(store_target)
    try:
        assert isinstance(store, WatchableCheckpointer)
        async with store.watch_decisions() as changes:
            waiting = asyncio.ensure_future(anext(changes))
            done = await asyncio.to_thread(
                subprocess.run, [sys.executable, "-c", decide, store_target], capture_output=True, timeout=120
            )
            assert done.returncode == 0, done.stderr
            changed = await asyncio.wait_for(waiting, 120)
        assert changed == (None if store_target.endswith(".db") else "t9")
        assert store.decisions("t9")["call_1"].decision == {"approved": True}
    finally:
        store.close()
