"""The stores agree on a thread's recordings (memory, SQLite, PostgreSQL): chunks appended in
order and read back as written, a listing with run id, times, size and status, delete, the
retention (oldest dropped first, never the one being written), a killed run's recording marked
incomplete when the thread records again, and everything gone with the thread."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jianmu_like.checkpoint import open_checkpointer
from jianmu_like.checkpoint._recordings import UnknownRecordingError
from jianmu_like.checkpoint._store import Checkpointer, MemoryCheckpointer, SQLiteCheckpointer


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Checkpointer]:
    if request.param == "memory":
        yield MemoryCheckpointer()
        return
    target = tmp_path / "runs.db" if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    opened = open_checkpointer(target)
    yield opened
    opened.close()


def test_chunks_read_back_as_written_and_the_listing_follows_the_status(store: Checkpointer) -> None:
    assert store.recordings("t") == []
    store.append_recording("t", "run_a", b'{"kind":"header"}\n', status="running")
    store.append_recording("t", "run_a", b'{"kind":"run"}\n{"kind":"event"}\n', status="running")
    [info] = store.recordings("t")
    assert (info.run_id, info.number, info.status, info.ended_at, info.truncated) == (
        "run_a",
        1,
        "running",
        None,
        False,
    )
    assert info.size == len(b'{"kind":"header"}\n{"kind":"run"}\n{"kind":"event"}\n')
    store.append_recording("t", "run_a", b"", status="suspended")  # an operation ends: no bytes
    [info] = store.recordings("t")
    assert info.status == "suspended" and info.ended_at is not None and info.ended_at >= info.started_at
    assert not info.replayable or info.status == "suspended"
    store.append_recording("t", "run_a", b'{"kind":"run","op":"resume"}\n', status="running")
    assert store.recordings("t")[0].ended_at is None  # a resume runs again
    store.append_recording("t", "run_a", b'{"kind":"result"}\n', status="success")
    assert store.read_recording("t", "run_a") == (
        b'{"kind":"header"}\n{"kind":"run"}\n{"kind":"event"}\n{"kind":"run","op":"resume"}\n{"kind":"result"}\n'
    )
    [info] = store.recordings("t")
    assert (
        info.status == "success" and info.replayable and info.size == len(store.read_recording("t", "run_a"))
    )
    with pytest.raises(
        UnknownRecordingError, match=r"thread 't' has no recording of run 'nope' \(recordings: run_a\)"
    ):
        store.read_recording("t", "nope")
    with pytest.raises(UnknownRecordingError, match=r"recordings: none"):
        store.read_recording("other", "run_a")
    assert store.recordings("other") == []


def test_a_running_recording_left_behind_becomes_incomplete_when_the_thread_records_again(
    store: Checkpointer,
) -> None:
    store.append_recording("t", "killed", b'{"kind":"header"}\n', status="running")  # then SIGKILL
    store.append_recording("u", "other_thread", b"x\n", status="running")
    store.append_recording("t", "next", b'{"kind":"header"}\n', status="running")
    by_id = {i.run_id: i for i in store.recordings("t")}
    assert by_id["killed"].status == "incomplete" and not by_id["killed"].replayable
    assert by_id["next"].status == "running" and by_id["next"].number == 2
    assert store.recordings("u")[0].status == "running"  # another thread is not touched
    store.append_recording("t", "cut", b"y\n", status="running", truncated=True)
    store.append_recording("t", "cut", b"", status="success")
    cut = store.recordings("t")[0]
    assert cut.run_id == "cut" and cut.truncated and not cut.replayable  # truncation sticks


def test_retention_drops_the_oldest_first_and_never_the_one_being_written(store: Checkpointer) -> None:
    for n in range(1, 6):
        store.append_recording("t", f"r{n}", b"x" * (10 * n), status="success")
    assert store.prune_recordings("t", max_runs=3) == ["r1", "r2"]
    assert [i.run_id for i in store.recordings("t")] == ["r5", "r4", "r3"]  # newest first
    # 30 + 40 + 50 bytes: at most 60 keeps r5 alone (the one being written stays even past it)
    assert store.prune_recordings("t", max_bytes=60, keep=["r5"]) == ["r3", "r4"]
    assert store.prune_recordings("t", max_bytes=10, max_runs=1, keep=["r5"]) == []
    assert [i.run_id for i in store.recordings("t")] == ["r5"]
    store.append_recording("t", "r6", b"z", status="running")
    assert [(i.run_id, i.number) for i in store.recordings("t")] == [("r6", 6), ("r5", 5)]
    assert store.delete_recording("t", "r5") is True
    assert store.delete_recording("t", "r5") is False
    assert [i.run_id for i in store.recordings("t")] == ["r6"]


def test_deleting_the_thread_drops_its_recordings(store: Checkpointer) -> None:
    store.append_recording("t", "r1", b"x\n", status="success")
    store.append_recording("u", "r2", b"y\n", status="success")
    store.delete("t")
    assert store.recordings("t") == []
    assert store.read_recording("u", "r2") == b"y\n"


def test_recordings_survive_reopening_the_store(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    for target in (tmp_path / "runs.db", request.getfixturevalue("postgres_url")):
        first = open_checkpointer(target)
        first.append_recording("t", "r1", b'{"kind":"header"}\n', status="success")
        first.close()
        again = open_checkpointer(target, readonly=True)
        try:
            assert again.read_recording("t", "r1") == b'{"kind":"header"}\n'
            assert [i.status for i in again.recordings("t")] == ["success"]
        finally:
            again.close()


def test_a_store_made_before_recordings_lists_none_read_only_and_gains_the_tables_when_written(
    tmp_path: Path,
) -> None:
    import sqlite3

    db = tmp_path / "old.db"
    SQLiteCheckpointer(db).close()
    with sqlite3.connect(db) as conn:  # as the previous release left it
        conn.execute("DROP TABLE jianmu_recordings")
        conn.execute("DROP TABLE jianmu_recording_chunks")
    reader = SQLiteCheckpointer(db, readonly=True)
    assert reader.recordings("t") == []
    with pytest.raises(UnknownRecordingError):
        reader.read_recording("t", "r1")
    reader.close()
    writer = SQLiteCheckpointer(db)
    writer.append_recording("t", "r1", b"x\n", status="success")
    assert writer.read_recording("t", "r1") == b"x\n"
    writer.close()
