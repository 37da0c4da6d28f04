"""Every store keeps versions the same way (memory, SQLite, PostgreSQL): a save appends, a saved
version never changes, the newest carries the claim, retention drops the oldest."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jianmu_like.checkpoint import open_checkpointer
from jianmu_like.checkpoint._contract import Checkpoint, Checkpointer, ThreadConflictError
from jianmu_like.checkpoint._history import CheckpointSummary
from jianmu_like.checkpoint._owner import new_owner
from jianmu_like.checkpoint._store import MemoryCheckpointer


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def kept(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Checkpointer, Checkpointer]]:
    """(a store keeping every version, one keeping the newest 2) of one kind."""
    if request.param == "memory":
        yield MemoryCheckpointer(keep=None), MemoryCheckpointer(keep=2)
        return
    if request.param == "sqlite":
        targets: tuple[str | Path, str | Path] = (tmp_path / "all.db", tmp_path / "two.db")
    else:
        targets = (
            request.getfixturevalue("postgres_url"),
            request.getfixturevalue("postgres_cluster").new_database(),
        )
    every, two = open_checkpointer(targets[0], keep=None), open_checkpointer(targets[1], keep=2)
    yield every, two
    every.close()
    two.close()


def version(seq: int, parent: int | None, owner: str | None = None, thread: str = "t") -> Checkpoint:
    return Checkpoint(
        thread_id=thread,
        seq=seq,
        parent_seq=parent,
        owner=owner,
        schema_name="S",
        schema_fingerprint="s",
        tree_fingerprint="f",
        state={"n": seq},
        summary=CheckpointSummary(node="root/llm", iteration=seq, messages=seq, pending_approvals=["c1"]),
    )


def test_versions_append_and_never_change(kept: tuple[Checkpointer, Checkpointer]) -> None:
    store, two = kept
    mine = new_owner().encode()
    store.save(version(1, None, mine), expected_seq=0)
    store.save(version(2, 1, mine), expected_seq=1, holder=mine)
    store.save(version(3, 1, mine), expected_seq=2, holder=mine)  # a fork of version 1
    with pytest.raises(ThreadConflictError, match="version 2 is not newer than the stored 3"):
        store.save(version(2, 1))  # even unconditionally, a saved version never changes
    store.release("t", mine)
    history = store.history("t")
    assert [(i.seq, i.parent_seq) for i in history] == [(3, 1), (2, 1), (1, None)]
    assert history[0].model_dump(exclude={"saved_at"}) == {
        "thread_id": "t",
        "seq": 3,
        "parent_seq": 1,
        "status": "running",
        "node": "root/llm",
        "iteration": 3,
        "messages": 3,
        "pending_approvals": ["c1"],
    }
    newest, first = store.load("t"), store.load("t", 1)
    assert newest is not None and newest.seq == 3 and newest.owner is None  # released
    assert first is not None and first.state == {"n": 1} and store.load("t", 9) is None
    store.save(version(1, None, thread="u"))
    assert [(h.thread_id, h.seq) for h in store.heads()] == [("t", 3), ("u", 1)]
    assert store.history("nope") == [] and store.load("nope") is None

    for seq in range(1, 5):
        two.save(version(seq, seq - 1 or None), expected_seq=seq - 1)
    assert [i.seq for i in two.history("t")] == [4, 3] and two.load("t", 2) is None
