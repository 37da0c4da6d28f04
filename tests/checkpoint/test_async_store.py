"""The async PostgreSQL store (issue 25, item 1) on a real server: a commit waiting on the
database does not block the event loop; concurrent runs share one loop's connections; one agent
and one store survive a change of event loop (`asyncio.run` twice); a broken connection is an
error naming the store without its credentials, and the next call connects again; outcomes that
finish while a commit is in flight go together in the next one (group commit)."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest

from jianmu_like import Agent, ReActConfig, create_react_node, human, tool
from jianmu_like.checkpoint._contract import (
    AsyncCheckpointer,
    Checkpoint,
    CheckpointError,
    Commit,
    ThreadConflictError,
)
from jianmu_like.checkpoint._postgres import PostgresCheckpointer
from jianmu_like.checkpoint._store import MemoryCheckpointer, SQLiteCheckpointer
from jianmu_like.testing import call, calls, scripted_client
from jianmu_like.testing._postgres import TemporaryPostgres
from jianmu_like.tools.builtin import calculator

LIMIT = 120.0
"""Seconds any condition below may take on a loaded machine (a bound, never a pace)."""


def version(thread: str, seq: int) -> Checkpoint:
    return Checkpoint(
        thread_id=thread, seq=seq, schema_name="S", schema_fingerprint="s", tree_fingerprint="t",
        state={"n": seq},
    )  # fmt: skip


def adder(store: Any, rounds: int = 2, runs: int = 1) -> Agent:
    script = ([call("calculator", expression="1 + 1")] * rounds + ["done"]) * runs
    root = create_react_node(
        "Adder",
        model_client=scripted_client(script, record=False),
        tools=[calculator],
        config=ReActConfig(max_iterations=rounds + 2),
    )
    return Agent(root, checkpointer=store, log_events=False)


async def until(condition: Any, what: str) -> None:
    """Wait (yielding to the loop) until `condition()` holds, for LIMIT seconds at most."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LIMIT
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


def test_only_the_postgres_store_is_async(tmp_path: Any) -> None:
    assert not isinstance(MemoryCheckpointer(), AsyncCheckpointer)
    sqlite = SQLiteCheckpointer(tmp_path / "runs.db")
    assert not isinstance(sqlite, AsyncCheckpointer)
    sqlite.close()


async def test_a_commit_waiting_on_a_lock_leaves_the_loop_running(postgres_url: str) -> None:
    store = PostgresCheckpointer(postgres_url, pool_size=2)
    blocker = psycopg.connect(postgres_url)
    try:
        await store.acommit(Commit("warm", checkpoint=version("warm", 1), expected_seq=0))
        blocker.execute("LOCK TABLE jianmu_checkpoints IN EXCLUSIVE MODE")  # held until rollback
        commit = asyncio.ensure_future(store.acommit(Commit("t", checkpoint=version("t", 1), expected_seq=0)))
        beats = 0

        async def heartbeat() -> None:
            nonlocal beats
            while True:
                beats += 1
                await asyncio.sleep(0)

        beating = asyncio.ensure_future(heartbeat())
        watcher = await psycopg.AsyncConnection.connect(postgres_url, autocommit=True)
        waiting: list[bool] = []

        async def look() -> None:
            cursor = await watcher.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE wait_event_type = 'Lock' AND datname = current_database()"
            )
            row = await cursor.fetchone()
            waiting.append(row is not None and row[0] > 0)

        loop = asyncio.get_running_loop()
        deadline = loop.time() + LIMIT
        while not (waiting and waiting[-1]):
            assert loop.time() < deadline, "the commit never waited on the lock"
            await look()
        seen = beats
        await until(lambda: beats > seen + 100, "the loop to run other tasks")
        assert not commit.done()  # still waiting on the database, and the loop went on
        blocker.rollback()
        await asyncio.wait_for(commit, LIMIT)
        beating.cancel()
        await watcher.close()
        stored = await store.aload("t")
        assert stored is not None and stored.seq == 1
    finally:
        blocker.close()
        await store.aclose()


async def test_concurrent_runs_share_the_loops_connections(postgres_url: str) -> None:
    store = PostgresCheckpointer(postgres_url, pool_size=2, keep=None)
    try:
        agents = [adder(store) for _ in range(6)]
        results = await asyncio.gather(
            *(a.run({"messages": [human("add")]}, thread_id=f"t{i}") for i, a in enumerate(agents))
        )
        assert [r.status for r in results] == ["success"] * 6
        conns = store._loop_connections()
        assert 1 <= conns.count <= 2  # six runs, at most pool_size connections
        for i in range(6):
            assert [e.status for e in store.journal(f"t{i}").values()] == ["finished"] * 2
            head = store.load(f"t{i}")
            assert head is not None and head.status == "success" and head.owner is None
    finally:
        await store.aclose()


def test_one_agent_and_store_across_event_loops(postgres_url: str) -> None:
    store = PostgresCheckpointer(postgres_url, keep=None)
    agent = adder(store, rounds=1, runs=2)
    try:
        first = asyncio.run(agent.run({"messages": [human("add")]}, thread_id="a"))
        assert first.status == "success"
        (old,) = store._by_loop.values()
        assert old.idle  # its connections stay with its (now closed) loop until looked at
        second = asyncio.run(agent.run({"messages": [human("add")]}, thread_id="b"))
        assert second.status == "success"
        assert old.closed and not old.idle  # closed without their loop
        assert len(store._by_loop) == 1
        assert [store.load(t).status for t in ("a", "b")] == ["success", "success"]  # type: ignore[union-attr]
    finally:
        store.close()
    (gone,) = store._by_loop.values() if store._by_loop else (None,)
    assert gone is None


async def test_a_lost_connection_names_the_store_not_its_password(
    postgres_cluster: TemporaryPostgres,
) -> None:
    url = postgres_cluster.new_database()
    secret = url.replace("@", ":s3cret-pw@", 1)
    store = PostgresCheckpointer(secret)
    try:
        assert "s3cret-pw" not in store.label
        await store.acommit(Commit("t", checkpoint=version("t", 1), expected_seq=0))
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        with pytest.raises(CheckpointError) as failed:
            await store.aload("t")
        message = str(failed.value)
        assert message.startswith(f"{store.label}: cannot read checkpoint")
        assert "s3cret-pw" not in message
        assert store._loop_connections().count == 0  # the broken connection was dropped
        again = await store.aload("t")  # and the next call connects again
        assert again is not None and again.seq == 1
    finally:
        await store.aclose()


async def test_a_closed_store_refuses_new_async_work(postgres_url: str) -> None:
    store = PostgresCheckpointer(postgres_url)
    store.close()
    with pytest.raises(CheckpointError, match="the store is closed"):
        await store.aload("t")


class GatedStore(PostgresCheckpointer):
    """The real store, noting each commit's outcomes; its first outcome-only commit waits at a
    gate the test opens."""

    def __init__(self, url: str) -> None:
        super().__init__(url, keep=None)
        self.gate = asyncio.Event()
        self.at_gate = False
        self.commits: list[tuple[str, int]] = []

    async def acommit(self, work: Commit) -> None:
        kind = "save" if work.checkpoint is not None else "started" if work.started else "outcomes"
        self.commits.append((kind, len(work.finished)))
        if kind == "outcomes" and not self.at_gate:
            self.at_gate = True
            await self.gate.wait()
        await super().acommit(work)


async def test_outcomes_finishing_during_a_commit_go_in_the_next_one(postgres_url: str) -> None:
    store = GatedStore(postgres_url)
    release = {name: asyncio.Event() for name in "abcd"}

    def make(name: str) -> Any:
        async def step() -> str:
            """One step of the batch."""
            await release[name].wait()
            return name

        step.__name__ = f"step_{name}"
        return tool(parallel_safe=True)(step)

    root = create_react_node(
        "Batch",
        model_client=scripted_client([calls(*(call(f"step_{n}") for n in "abcd")), "done"], record=False),
        tools=[make(n) for n in "abcd"],
        config=ReActConfig(max_iterations=3),
    )
    agent = Agent(root, checkpointer=store, log_events=False)
    try:
        running = asyncio.ensure_future(agent.run({"messages": [human("go")]}, thread_id="t"))
        release["a"].set()
        await until(lambda: store.at_gate, "the first outcome's commit")
        recorder = agent._core.recorder
        assert recorder is not None
        for name in "bcd":
            release[name].set()
        await until(lambda: len(recorder._outcomes) == 3, "the other three outcomes")
        store.gate.set()
        result = await asyncio.wait_for(running, LIMIT)
        assert result.status == "success" and result.final_answer == "done"
        # a's outcome alone; b, c and d (the batch's last), finished while it was in flight,
        # together in the one commit after it: the save after the batch
        batch = store.commits[store.commits.index(("outcomes", 1)) :]
        assert batch[:2] == [("outcomes", 1), ("save", 3)]
        journal = store.journal("t")
        assert sorted(e.status for e in journal.values()) == ["finished"] * 4
    finally:
        await store.aclose()


async def test_an_async_save_that_fails_fails_the_runs_next_write(postgres_url: str) -> None:
    """`durability="async"`: the save after a tool round goes in the background; when another
    process has saved the thread meanwhile it cannot land, and the run's next write says so
    instead of going on as if it had."""
    store = PostgresCheckpointer(postgres_url, keep=None)
    rival = PostgresCheckpointer(postgres_url, keep=None)

    @tool
    async def meddle() -> str:
        """Another process saves the thread while this run holds it."""
        head = await rival.aload("t")
        assert head is not None
        newer = head.model_copy(update={"seq": head.seq + 1, "owner": None})
        await rival.acommit(Commit("t", checkpoint=newer))
        return "meddled"

    root = create_react_node(
        "Meddler",
        model_client=scripted_client([call("meddle"), call("meddle"), "done"], record=False),
        tools=[meddle],
        config=ReActConfig(max_iterations=4),
    )
    agent = Agent(root, checkpointer=store, log_events=False)
    try:
        with pytest.raises(ThreadConflictError, match="thread 't': saved by another process"):
            await agent.run({"messages": [human("go")]}, thread_id="t", durability="async")
        head = store.load("t")
        assert head is not None and head.owner is None  # the rival's version stands, unclaimed
        assert head.seq == 3  # claim 1, the first save 2, the rival's 3: nothing after it landed
    finally:
        await store.aclose()
        await rival.aclose()


@pytest.mark.parametrize("calls_in_batch", [1, 2, 5])
async def test_a_batch_that_finishes_together_commits_twice(postgres_url: str, calls_in_batch: int) -> None:
    """Started rows with the reply's save, every outcome with the save after the batch: two
    commits for the tool iteration whatever its size, when its calls finish in one pass."""
    store = GatedStore(postgres_url)
    store.at_gate = True  # no gate

    @tool(parallel_safe=True)
    async def echo(i: int) -> int:
        """Return at once."""
        return i

    root = create_react_node(
        "Together",
        model_client=scripted_client(
            [calls(*(call("echo", i=i) for i in range(calls_in_batch))), "done"], record=False
        ),
        tools=[echo],
        config=ReActConfig(max_iterations=3),
    )
    try:
        result = await Agent(root, checkpointer=store, log_events=False).run(
            {"messages": [human("go")]}, thread_id="t"
        )
        assert result.status == "success"
        # the claim; started with the reply's save; the outcomes with the save after; the end
        assert store.commits == [("save", 0), ("save", 0), ("save", calls_in_batch), ("save", 0)]
        assert [e.status for e in store.journal("t").values()] == ["finished"] * calls_in_batch
    finally:
        await store.aclose()


class SaveGatedStore(PostgresCheckpointer):
    """The real store; the commit of a batch's started rows waits at a gate that never opens."""

    def __init__(self, url: str) -> None:
        super().__init__(url, keep=None)
        self.at_gate = False

    async def acommit(self, work: Commit) -> None:
        if work.started:
            self.at_gate = True
            await asyncio.Event().wait()  # until cancelled
        await super().acommit(work)


async def test_a_run_cancelled_while_its_save_waits_ends_cancelled_and_frees_the_thread(
    postgres_url: str,
) -> None:
    store = SaveGatedStore(postgres_url)
    try:
        running = asyncio.ensure_future(adder(store).run({"messages": [human("add")]}, thread_id="t"))
        await until(lambda: store.at_gate, "the batch's commit to wait")
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running  # not a CheckpointError about the save it cut short
        head = store.load("t")
        assert head is not None and head.seq == 1 and head.owner is None  # the claim, released
    finally:
        await store.aclose()
    again = PostgresCheckpointer(postgres_url, keep=None)
    try:
        assert (await adder(again).run({"messages": [human("add")]}, thread_id="t")).status == "success"
    finally:
        await again.aclose()


async def test_callers_beyond_the_limit_wait_in_line_and_a_cancelled_one_loses_nothing(
    postgres_url: str,
) -> None:
    store = PostgresCheckpointer(postgres_url, pool_size=1)
    try:
        conns = store._loop_connections()
        held = await conns.acquire()
        cancelled = asyncio.ensure_future(conns.acquire())
        waiting = asyncio.ensure_future(conns.acquire())
        await until(lambda: len(conns._waiters) == 2, "two callers in line")
        cancelled.cancel()
        conns.release(held)  # handed to the first caller still waiting
        handed = await asyncio.wait_for(waiting, LIMIT)
        assert handed is held and conns.count == 1
        # handed over, then cancelled before it could resume: passed on to the next in line
        late = asyncio.ensure_future(conns.acquire())
        after = asyncio.ensure_future(conns.acquire())
        await until(lambda: len(conns._waiters) == 2, "two callers in line again")
        conns.release(handed)
        late.cancel()
        assert await asyncio.wait_for(after, LIMIT) is held and conns.count == 1
        conns.release(held)
        assert conns.idle == [held]
        assert await store.aload("t") is None  # and it still answers
    finally:
        await store.aclose()
    assert held.closed
