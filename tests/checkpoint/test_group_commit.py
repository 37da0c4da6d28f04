"""Group commit in the async PostgreSQL store (checkpoint._groupcommit), on a real server.

Every test holds the first group's transaction open deterministically — a second connection
holds `LOCK TABLE jianmu_checkpoints IN EXCLUSIVE MODE` until it rolls back, so the first write's
statement waits on it — and queues the writes under test behind it (waiting on the queue's
length, never on time). Then it lets the lock go and looks at what was committed and in which
transaction (`xmin`: the id of the transaction that wrote a row)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from jianmu_like.checkpoint._contract import Checkpoint, CheckpointError, Commit, ThreadConflictError
from jianmu_like.checkpoint._groupcommit import GroupCommit
from jianmu_like.checkpoint._postgres import PostgresCheckpointer
from jianmu_like.state._journal import JournalEntry, finish_entry
from jianmu_like.testing import PATIENCE


def version(thread: str, seq: int, **fields: Any) -> Checkpoint:
    return Checkpoint(
        thread_id=thread, seq=seq, schema_name="S", schema_fingerprint="s", tree_fingerprint="t",
        state={"n": seq}, **fields,
    )  # fmt: skip


def started(key: str) -> JournalEntry:
    return JournalEntry(key=key, tool_call_id=f"call-{key}", tool="calculator", status="started")


def save(thread: str, seq: int = 1, expected: int = 0, **fields: Any) -> Commit:
    """A run's first kind of write: a version and the calls about to run, together."""
    return Commit(
        thread, checkpoint=version(thread, seq, **fields), expected_seq=expected, started=(started(thread),)
    )


async def until(condition: Any, what: str) -> None:
    """Wait (yielding to the loop) until `condition()` holds, for PATIENCE seconds at most."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PATIENCE
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


class Held:
    """The first group held in flight: `start(first)` sends it, waits until its statement is in
    flight behind the lock; `queue(...)` adds writes and waits until they wait in the queue;
    `release()` lets the lock go."""

    def __init__(self, store: PostgresCheckpointer, url: str) -> None:
        self.store, self.url = store, url
        self.blocker = psycopg.connect(url)

    @property
    def writes(self) -> GroupCommit[Any, Any]:
        writes = self.store._loop_connections().writes
        assert writes is not None
        return writes

    async def start(self, first: Commit) -> asyncio.Future[None]:
        await self.store.acommit(Commit("warm", checkpoint=version("warm", 1), expected_seq=0))
        self.blocker.execute("LOCK TABLE jianmu_checkpoints IN EXCLUSIVE MODE")
        self.xid0 = xid(self.url)
        task = asyncio.ensure_future(self.store.acommit(first))
        await until(lambda: self.writes.in_flight == [first.thread_id], "the first group in flight")
        return task

    async def queue(self, *works: Commit) -> list[asyncio.Future[None]]:
        before = self.writes.queued
        tasks = [asyncio.ensure_future(self.store.acommit(work)) for work in works]
        await until(lambda: self.writes.queued == before + len(works), "the writes to queue")
        return tasks

    def release(self) -> None:
        self.blocker.rollback()


@pytest.fixture
async def held(postgres_url: str) -> AsyncIterator[Held]:
    store = PostgresCheckpointer(postgres_url, keep=None, pool_size=4)
    assert store.group_flights == 1  # the writes under test queue behind the one held
    holder = Held(store, postgres_url)
    try:
        yield holder
    finally:
        holder.blocker.close()
        await store.aclose()


def xid(url: str) -> int:
    """The next transaction id (reading it assigns none: `pg_current_xact_id_if_assigned`)."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint").fetchone()
    assert row is not None
    return int(row[0])


def writers(url: str, table: str = "jianmu_checkpoints") -> dict[str, int]:
    """The transaction that wrote each thread's newest row of `table`."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            f"SELECT thread_id, max(xmin::text::bigint) FROM {table} GROUP BY thread_id"
        ).fetchall()
    return {str(r[0]): int(r[1]) for r in rows}


async def test_writes_queued_behind_a_transaction_commit_together_in_the_next(held: Held) -> None:
    first = await held.start(save("t0"))
    queued = await held.queue(*(save(f"t{i}") for i in range(1, 9)))
    groups = held.writes.groups
    held.release()
    await asyncio.wait_for(asyncio.gather(first, *queued), PATIENCE)
    assert held.writes.groups == groups + 2  # the held one, then all eight together
    assert xid(held.url) - held.xid0 == 2  # two write transactions for nine writes
    by = writers(held.url)
    assert len({by[f"t{i}"] for i in range(1, 9)}) == 1 and by["t0"] != by["t1"]
    journal = writers(held.url, "jianmu_journal")  # each write whole: its journal row went with it
    assert all(journal[f"t{i}"] == by[f"t{i}"] for i in range(9))
    for i in range(9):
        head = held.store.load(f"t{i}")
        assert head is not None and head.seq == 1


async def test_a_failing_writer_fails_alone_and_the_others_commit(held: Held) -> None:
    await held.store.acommit(save("stale"))  # at seq 1
    first = await held.start(save("t0"))
    good = await held.queue(save("a"))
    # the server refuses this one (bigint out of range): the group's transaction rolls back
    bad = await held.queue(Commit("bad", checkpoint=version("bad", 2**63), expected_seq=0))
    conflict = await held.queue(save("stale", seq=6, expected=5))  # its claim does not hold
    more = await held.queue(save("b"))
    held.release()
    await asyncio.wait_for(asyncio.gather(first, *good, *more), PATIENCE)
    with pytest.raises(CheckpointError, match="out of range") as refused:
        await asyncio.wait_for(bad[0], PATIENCE)
    assert not isinstance(refused.value, ThreadConflictError)
    with pytest.raises(ThreadConflictError, match="expected 5"):
        await asyncio.wait_for(conflict[0], PATIENCE)
    assert held.store.load("bad") is None and held.store.journal("bad") == {}
    stale = held.store.load("stale")
    assert stale is not None and stale.seq == 1
    for thread in ("t0", "a", "b"):
        head = held.store.load(thread)
        assert head is not None and head.seq == 1 and set(held.store.journal(thread)) == {thread}


async def test_a_conflict_in_a_group_leaves_the_others_in_that_transaction(held: Held) -> None:
    await held.store.acommit(save("stale"))
    first = await held.start(save("t0"))
    conflict = await held.queue(save("stale", seq=6, expected=5))
    good = await held.queue(save("a"), save("b"))
    held.release()
    await asyncio.wait_for(asyncio.gather(first, *good), PATIENCE)
    with pytest.raises(ThreadConflictError):
        await asyncio.wait_for(conflict[0], PATIENCE)
    by = writers(held.url)
    assert by["a"] == by["b"]  # committed together, the conflict notwithstanding


async def test_a_write_cancelled_while_queued_is_never_committed(held: Held) -> None:
    first = await held.start(save("t0"))
    (cancelled,) = await held.queue(save("gone"))
    (kept,) = await held.queue(save("kept"))
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    held.release()
    await asyncio.wait_for(asyncio.gather(first, kept), PATIENCE)
    assert held.store.load("gone") is None and held.store.journal("gone") == {}
    head = held.store.load("kept")
    assert head is not None and head.seq == 1
    await held.store.acommit(save("gone"))  # nothing of it was left: its first version goes in
    again = held.store.load("gone")
    assert again is not None and again.seq == 1


async def test_a_write_cancelled_in_flight_commits_whole_with_its_group(held: Held) -> None:
    first = await held.start(save("t0"))
    (other,) = await held.queue(save("a"))
    first.cancel()  # its statement is on the wire, the lock holding it
    with pytest.raises(asyncio.CancelledError):
        await first
    held.release()
    await asyncio.wait_for(other, PATIENCE)
    await until(lambda: held.writes.in_flight == [] and held.writes.queued == 0, "the queue to drain")
    head = held.store.load("t0")  # the group went on for the others: committed, whole
    assert head is not None and head.seq == 1 and set(held.store.journal("t0")) == {"t0"}


async def test_a_threads_writes_commit_in_the_order_made(held: Held) -> None:
    """A call's start, its outcome and the next save of one thread, queued together: each goes
    in a transaction of its own, in the order made (a group refused as a whole retries its
    writes one at a time and at once: two writes of one thread in it would race)."""
    await held.store.acommit(Commit("t", checkpoint=version("t", 1), expected_seq=0))
    first = await held.start(save("t0"))
    entry = started("k")
    done = finish_entry(entry, {"content": "2"})
    assert done is not None
    queued = await held.queue(
        Commit("t", checkpoint=version("t", 2), expected_seq=1, started=(entry,)),
        save("a"),
        Commit("t", finished=(done,)),  # an outcome on its own (no claim to check: no slow path)
        Commit("t", checkpoint=version("t", 3), expected_seq=2),
    )
    held.release()
    await asyncio.wait_for(asyncio.gather(first, *queued), PATIENCE)
    assert held.store.journal("t")["k"].status == "finished"
    assert [info.seq for info in held.store.history("t")] == [3, 2, 1]
    with psycopg.connect(held.url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT seq, xmin::text::bigint FROM jianmu_checkpoints WHERE thread_id='t' ORDER BY seq"
        ).fetchall()
    xids = [int(r[1]) for r in rows]
    assert xids == sorted(xids) and len(set(xids)) == 3  # one transaction each, in order


async def test_a_release_queues_behind_the_threads_save_in_flight(held: Held) -> None:
    """A run cancelled while its save is in flight releases its claim next: the release must
    not overtake the save, or the save would store the claim again after it."""
    first = await held.start(save("t0", owner="me"))
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    release = asyncio.ensure_future(held.store.arelease("t0", "me"))
    await until(lambda: held.writes.queued == 1, "the release to queue")
    held.release()
    await asyncio.wait_for(release, PATIENCE)
    head = held.store.load("t0")
    assert head is not None and head.seq == 1 and head.owner is None


async def test_a_lone_write_goes_at_once_in_a_group_of_its_own(postgres_url: str) -> None:
    store = PostgresCheckpointer(postgres_url, keep=None)
    try:
        await store.acommit(save("t"))
        writes = store._loop_connections().writes
        assert writes is not None and writes.groups == 1 and writes.queued == 0
        head = store.load("t")
        assert head is not None and head.seq == 1
    finally:
        await store.aclose()


async def test_a_second_group_flies_beside_the_first_but_never_with_its_threads(held: Held) -> None:
    held.store.group_flights = 2
    first = await held.start(save("t0"))
    follow = asyncio.ensure_future(held.store.acommit(save("t0", seq=2, expected=1)))
    other = asyncio.ensure_future(held.store.acommit(save("a")))
    await until(lambda: held.writes.in_flight == ["t0", "a"], "a second group in flight")
    assert held.writes.queued == 1  # t0's next write waits for its first
    held.release()
    await asyncio.wait_for(asyncio.gather(first, follow, other), PATIENCE)
    head = held.store.load("t0")
    assert head is not None and head.seq == 2
    by = writers(held.url)
    assert by["a"] != by["t0"]


CHILD = """
import asyncio, sys
from pathlib import Path
from jianmu_like.checkpoint._contract import Checkpoint, Commit
from jianmu_like.checkpoint._postgres import PostgresCheckpointer
from jianmu_like.state._journal import JournalEntry

def save(thread, journal):
    checkpoint = Checkpoint(thread_id=thread, seq=1, schema_name="S", schema_fingerprint="s",
                            tree_fingerprint="t", state={})
    started = (JournalEntry(key=thread, tool_call_id="c", tool="x", status="started"),) if journal else ()
    return Commit(thread, checkpoint=checkpoint, expected_seq=0, started=started)

async def main(url, marker):
    store = PostgresCheckpointer(url, keep=None)
    store.group_flights = 1
    tasks = [asyncio.ensure_future(store.acommit(save("x", False)))]
    tasks += [asyncio.ensure_future(store.acommit(save(f"k{i}", True))) for i in range(1, 6)]
    conns = store._loop_connections()
    while not (conns.writes and conns.writes.in_flight == ["x"] and conns.writes.queued == 5):
        await asyncio.sleep(0.01)
    Path(marker).write_text("queued")
    await asyncio.gather(*tasks)
    await asyncio.Event().wait()  # until killed

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def test_a_process_killed_mid_group_leaves_the_group_whole_or_absent(
    postgres_url: str, tmp_path: Any
) -> None:
    """SIGKILL while a group's transaction has written part of it (its first write's checkpoint,
    not yet that write's journal row, which a lock holds, nor the writes after it): every write
    of the group is all there, or none is."""
    import signal
    import subprocess
    import sys

    from jianmu_like.testing import exited, wait_until

    PostgresCheckpointer(postgres_url).close()  # the tables
    row_holder, journal_holder = psycopg.connect(postgres_url), psycopg.connect(postgres_url)
    admin = psycopg.connect(postgres_url, autocommit=True)
    marker = tmp_path / "queued"
    child: subprocess.Popen[bytes] | None = None

    def active(pattern: str, wait: str | None = None) -> int:
        row = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' "
            "AND query LIKE %s AND (%s::text IS NULL OR wait_event_type = %s)",
            (pattern, wait, wait),
        ).fetchone()
        return int(row[0]) if row is not None else 0

    try:
        # x's version is held by an uncommitted twin: the first group (x alone) waits on it
        row_holder.execute(
            "INSERT INTO jianmu_checkpoints (thread_id, seq, status, saved_at, data) "
            "VALUES ('x', 1, 'running', 0, '{}')"
        )
        journal_holder.execute("LOCK TABLE jianmu_journal IN EXCLUSIVE MODE")
        child = subprocess.Popen([sys.executable, "-c", CHILD, postgres_url, str(marker)])
        wait_until(marker.exists, "the child's writes to queue behind the first", abort=exited(child))
        row_holder.rollback()  # x commits; the second group (k1..k5) goes, and waits on the lock
        wait_until(
            lambda: active("WITH p0%jianmu_journal%", "Lock"),
            "the second group to wait on the journal's lock",
            abort=exited(child),
        )
        child.send_signal(signal.SIGKILL)
        child.wait(PATIENCE)
        journal_holder.rollback()
        wait_until(lambda: not active("WITH p0%"), "the killed process's statement to end")
    finally:
        if child is not None and child.poll() is None:
            child.kill()
            child.wait(PATIENCE)
        row_holder.close()
        journal_holder.close()
        admin.close()
    store = PostgresCheckpointer(postgres_url, keep=None)
    try:
        assert store.load("x") is not None
        there = {
            f"k{i}": (store.load(f"k{i}") is not None, f"k{i}" in store.journal(f"k{i}")) for i in range(1, 6)
        }
        assert set(there.values()) in ({(True, True)}, {(False, False)}), there
    finally:
        store.close()


async def test_a_write_that_cannot_connect_fails_naming_the_store(postgres_url: str) -> None:
    store = PostgresCheckpointer(postgres_url, keep=None)
    try:
        await store.acommit(save("t"))
        conns = store._loop_connections()
        for conn in conns.idle:  # the connection goes, and the server refuses new ones
            await conn.close()
        conns.idle.clear()
        conns.count = 0
        store._url = postgres_url.rsplit("/", 1)[0] + "/no_such_db"
        with pytest.raises(CheckpointError) as failed:
            await store.acommit(save("u"))
        assert str(failed.value).startswith(f"{store.label}: cannot connect to PostgreSQL")
    finally:
        await store.aclose()
