"""A durable run commits at most twice per iteration (issue 25): the batch's started rows with
the save of the model's reply, the batch's last outcome with the save after it; and on
PostgreSQL each of those commits is one statement whose claim check is inside it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import psycopg
import pytest

from jianmu_like import Agent, ReActConfig, create_react_node, human
from jianmu_like._base.config import ConfigError, get_config, load_config
from jianmu_like.checkpoint import _recorder, open_checkpointer
from jianmu_like.checkpoint._contract import Checkpoint, Commit, ThreadConflictError
from jianmu_like.checkpoint._owner import new_owner
from jianmu_like.checkpoint._postgres import PostgresCheckpointer
from jianmu_like.checkpoint._store import SQLiteCheckpointer
from jianmu_like.state._journal import JournalEntry
from jianmu_like.telemetry import events as ev
from jianmu_like.testing import PATIENCE, call, reply, scripted_client
from jianmu_like.tools.builtin import calculator

ITERATIONS = 3  # two calculator rounds, then the answer


def agent(store: Any) -> Agent:
    script = [call("calculator", expression="1 + 1")] * (ITERATIONS - 1) + ["done"]
    root = create_react_node(
        "Counted",
        model_client=scripted_client(script, record=False),
        tools=[calculator],
        config=ReActConfig(max_iterations=ITERATIONS + 1),
    )
    return Agent(root, checkpointer=store, log_events=False)


class CountingSQLite(SQLiteCheckpointer):
    """The real SQLite store, counting its write transactions."""

    commits = 0
    releases = 0

    def commit(self, work: Commit) -> None:
        type(self).commits += 1
        super().commit(work)

    def release(self, thread_id: str, owner: str) -> None:
        type(self).releases += 1
        super().release(thread_id, owner)


async def test_a_sqlite_run_commits_twice_per_iteration(tmp_path: Path) -> None:
    CountingSQLite.commits = 0
    store = CountingSQLite(tmp_path / "runs.db", keep=None)
    try:
        result = await agent(store).run({"messages": [human("add")]}, thread_id="t")
        assert result.status == "success"
        # the claim (with the old journal forgotten), 2 per tool round, the final save
        assert CountingSQLite.commits == 1 + 2 * (ITERATIONS - 1) + 1
        assert CountingSQLite.releases == 0  # the final save released the claim
        journal = store.journal("t")
        assert [e.status for e in journal.values()] == ["finished"] * (ITERATIONS - 1)
        assert store.history("t")[0].status == "success"
    finally:
        store.close()


async def test_a_run_builds_a_checkpoint_only_for_a_version_it_saves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A tick whose save waits for the run's next write (the one starting a model call) keeps
    # its fields only: that write saves the state as it is then, so a checkpoint (its summary,
    # the model) built on that tick would be thrown away on every iteration.
    built: list[Checkpoint] = []

    def counted(**fields: Any) -> Checkpoint:
        built.append(Checkpoint(**fields))
        return built[-1]

    monkeypatch.setattr(_recorder, "Checkpoint", counted)
    store = SQLiteCheckpointer(tmp_path / "runs.db", keep=None)
    try:
        result = await agent(store).run({"messages": [human("add")]}, thread_id="t")
        assert result.status == "success"
        versions = store.history("t")
        assert len(versions) == 1 + 2 * (ITERATIONS - 1) + 1  # the claim, 2 per tool round, the end
        assert sorted(c.seq for c in built) == sorted(v.seq for v in versions)
    finally:
        store.close()


async def test_a_run_cancelled_while_its_model_thinks_saves_the_tick_that_asked(tmp_path: Path) -> None:
    # The tick that starts the model call saves with the run's next write (the batch of the
    # reply); a run cancelled before it (Ctrl-C while the model thinks) saves that tick as it
    # was, the model node running, not the tree as the cancel left it (halted).
    script = [reply("done", delay=PATIENCE)]
    root = create_react_node("Cut", model_client=scripted_client(script, record=False), tools=[calculator])
    store = SQLiteCheckpointer(tmp_path / "runs.db", keep=None)
    agent = Agent(root, checkpointer=store, log_events=False)
    asked = asyncio.Event()
    agent.telemetry.subscribe(lambda event: asked.set() if event.type == ev.MODEL_CALL_STARTED else None)
    try:
        task = asyncio.create_task(agent.run({"messages": [human("add")]}, thread_id="t"))
        async with asyncio.timeout(PATIENCE):
            await asked.wait()
        task.cancel()
        async with asyncio.timeout(PATIENCE):
            await asyncio.gather(task, return_exceptions=True)
        newest = store.load("t")
        assert newest is not None and newest.status == "running"
        assert newest.seq == 2  # the claim, then the tick that asked
        assert newest.summary is not None and newest.summary.node == "Cut/Cut.Loop/Cut.LLM"
        assert [m["role"] for m in newest.state["messages"]] == ["user"]
    finally:
        await agent.aclose()
        store.close()


@pytest.mark.parametrize(
    ("durability", "commits"),
    [
        # per tool round: the batch start, the outcome; the save after it goes in the background
        ("async", 1 + 3 * (ITERATIONS - 1) + 1),
        # per tool round: the batch start and the outcome only; one save at the end
        ("exit", 1 + 2 * (ITERATIONS - 1) + 1),
    ],
)
async def test_durability_modes(tmp_path: Path, durability: str, commits: int) -> None:
    CountingSQLite.commits = 0
    store = CountingSQLite(tmp_path / "runs.db", keep=None)
    try:
        result = await agent(store).run({"messages": [human("add")]}, thread_id="t", durability=durability)  # type: ignore[arg-type]
        assert result.status == "success" and result.final_answer == "done"
        assert CountingSQLite.commits == commits
        saved = [info.status for info in store.history("t")]
        assert saved[0] == "success"
        if durability == "exit":
            assert saved == ["success", "running", "running"]  # claim, first tick (with the batch), end
        journal = store.journal("t")
        assert [e.status for e in journal.values()] == ["finished"] * (ITERATIONS - 1)
    finally:
        store.close()


def test_durability_from_the_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "jianmu.yaml"
    config.write_text("checkpoints:\n  durability: exit\n")
    assert load_config(config).checkpoints.durability == "exit"
    config.write_text("checkpoints:\n  durability: later\n")
    with pytest.raises(ConfigError, match="durability"):
        load_config(config)
    monkeypatch.setenv("JIANMU__CHECKPOINTS__DURABILITY", "async")
    get_config(reload=True)
    try:
        assert Agent(agent(None).root)._core.durability_of(None) == "async"
        assert Agent(agent(None).root, durability="exit")._core.durability_of(None) == "exit"
        assert Agent(agent(None).root, durability="exit")._core.durability_of("sync") == "sync"
    finally:
        monkeypatch.delenv("JIANMU__CHECKPOINTS__DURABILITY")
        get_config(reload=True)


def write_xids(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_current_xact_id()::text::bigint").fetchone()
    assert row is not None
    return int(row[0])


async def test_a_postgres_run_makes_two_write_transactions_per_iteration(postgres_url: str) -> None:
    store = open_checkpointer(postgres_url, keep=None)
    try:
        before = write_xids(postgres_url)
        result = await agent(store).run({"messages": [human("add")]}, thread_id="t")
        after = write_xids(postgres_url)
        assert result.status == "success" and result.final_answer == "done"
        assert after - before - 1 == 1 + 2 * (ITERATIONS - 1) + 1  # minus the reading's own xid
        journal = store.journal("t")
        assert sorted(e.status for e in journal.values()) == ["finished"] * (ITERATIONS - 1)
    finally:
        store.close()


def version(seq: int, owner: str | None) -> Checkpoint:
    return Checkpoint(
        thread_id="t", seq=seq, owner=owner, schema_name="s", schema_fingerprint="f", tree_fingerprint="t",
        state={},
    )  # fmt: skip


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_commit_that_loses_its_claim_writes_nothing(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The claim is checked inside the commit: a stale saver's started rows never land, and the
    error names the conflict (PostgreSQL's one-statement path falls back to the locked check)."""
    target = tmp_path / "runs.db" if kind == "sqlite" else request.getfixturevalue("postgres_url")
    store = open_checkpointer(target, keep=None)
    mine, theirs = new_owner().encode(), new_owner().encode()
    try:
        store.save(version(1, mine), expected_seq=0, holder=mine)
        store.save(version(2, theirs), expected_seq=1, holder=mine)  # handed over (same process)
        started = JournalEntry(key="k", tool_call_id="c", tool="calculator", status="started")
        stale = Commit(
            "t", checkpoint=version(2, mine), expected_seq=1, holder=mine, started=(started,), owner=mine
        )
        with pytest.raises(ThreadConflictError, match="already being run by process"):
            store.commit(stale)
        with pytest.raises(ThreadConflictError, match="no longer owned"):
            store.commit(Commit("t", started=(started,), owner=mine))
        assert store.journal("t") == {}
        assert [info.seq for info in store.history("t")] == [2, 1]
    finally:
        store.close()


def test_postgres_commits_are_single_statements(postgres_url: str) -> None:
    """What one commit sends: one statement (no BEGIN, lock, SELECT, COMMIT round trips)."""
    store = open_checkpointer(postgres_url, keep=2)
    assert isinstance(store, PostgresCheckpointer)
    sent: list[str] = []
    owner = new_owner().encode()
    try:
        original = psycopg.Connection.execute

        def traced(self: psycopg.Connection[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
            sent.append(str(query).split()[0])
            return original(self, query, *args, **kwargs)

        psycopg.Connection.execute = traced  # type: ignore[method-assign]  # the pool's connections
        try:
            store.save(version(1, owner), expected_seq=0, holder=owner)
            entry = JournalEntry(key="k", tool_call_id="c", tool="calculator", status="started")
            store.commit(
                Commit(
                    "t",
                    checkpoint=version(2, owner),
                    expected_seq=1,
                    holder=owner,
                    started=(entry,),
                    owner=owner,
                )
            )
        finally:
            psycopg.Connection.execute = original  # type: ignore[method-assign]
        assert sent == ["WITH", "WITH"]
        assert [e.status for e in store.journal("t").values()] == ["started"]
    finally:
        store.close()
