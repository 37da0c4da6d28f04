"""Durable runs on a thread: a run submitted with `thread_id` continues the conversation the
thread's earlier runs left (kept in the durable database's checkpoint tables), and appends its
end as a new version, once, even when a worker dies between the save and DBOS's record of it; a
run without one starts empty, as before."""

from __future__ import annotations

import asyncio
from typing import Any

from jianmu_like import Agent, create_react_node, human
from jianmu_like.checkpoint._postgres import PostgresCheckpointer
from jianmu_like.durable import DurableClient
from jianmu_like.durable._naming import THREAD_SAVE_STEP
from jianmu_like.durable._threads import close_stores, save_thread, version_source
from jianmu_like.testing import scripted_client
from tests.durable.conftest import LEDGER, Cluster, executor_of


def test_a_thread_continues_across_durable_runs(cluster: Cluster) -> None:
    cluster.start_worker(LEDGER, "solo")
    cluster.wait_ready("solo")
    done = cluster.cli("submit", LEDGER, "fill the ledger", "--thread", "book", "--wait", "--json")
    assert done.returncode == 0, done.stderr
    with DurableClient(cluster.database) as client:
        second = client.submit(LEDGER, "once more", thread_id="book").result()
        alone = client.submit(LEDGER, "alone").result()
    assert second.status == "success"
    users = [m["content"] for m in second.messages if m["role"] == "user"]
    assert users == ["fill the ledger", "once more"]  # the thread's first run carried over
    assert [m["content"] for m in alone.messages if m["role"] == "user"] == ["alone"]

    store = PostgresCheckpointer(cluster.database, pool_size=1)
    try:
        history = store.history("book")
        newest = store.load("book")
    finally:
        store.close()
    assert [(v.seq, v.parent_seq, v.status) for v in history] == [(2, 1, "success"), (1, None, "success")]
    assert newest is not None and len(newest.state["messages"]) == len(second.messages)


_HOLD = (7301, 20)  # an advisory lock key of this test's own (two-int form: no clash with others)


def _hold_step_records(database: str, step_name: str) -> Any:
    """Make DBOS's recording of every `step_name` step wait while the returned connection holds
    an advisory lock: a trigger on DBOS's step table, so the step's effect is done and committed
    while its record is not (the window a SIGKILL must hit). Closing the connection lets go."""
    import psycopg

    holder = psycopg.connect(database, autocommit=True)
    holder.execute("SELECT pg_advisory_lock(%s, %s)", _HOLD)
    holder.execute(f"""
        CREATE FUNCTION public.hold_step_record() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.function_name = '{step_name}' THEN
                PERFORM pg_advisory_xact_lock({_HOLD[0]}, {_HOLD[1]});
            END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER hold_step_record BEFORE INSERT ON dbos.operation_outputs
            FOR EACH ROW EXECUTE FUNCTION public.hold_step_record();
    """)  # fmt: skip
    return holder


def _record_waits(holder: Any) -> bool:
    """A worker's record of the held step is waiting on the lock (the kill's moment)."""
    row = holder.execute(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        " AND classid = %s AND objid = %s",
        _HOLD,
    ).fetchone()
    return bool(row and row[0])


def test_a_save_replayed_after_a_sigkill_between_its_effect_and_its_record_appends_once(
    cluster: Cluster,
) -> None:
    cluster.start_worker(LEDGER, "t1")
    cluster.start_worker(LEDGER, "t2")
    cluster.wait_ready("t1", "t2")
    holder = _hold_step_records(cluster.database, THREAD_SAVE_STEP)
    store = PostgresCheckpointer(cluster.database, pool_size=1)
    try:
        with DurableClient(cluster.database) as client:
            handle = client.submit(LEDGER, "fill the ledger", thread_id="book")
            # The save committed its version; DBOS's record of the step waits on the lock.
            cluster.wait_for(lambda: _record_waits(holder), "DBOS's record of the save to wait")
            assert len(store.history("book")) == 1
            victim = executor_of(cluster.database, handle.run_id)
            assert victim in ("t1", "t2")
            cluster.kill(victim)
            # Let go: the dead worker's backend finishes the insert, finds its client gone and
            # rolls back (no COMMIT ever comes), so the step stays unrecorded.
            holder.execute("SELECT pg_advisory_unlock(%s, %s)", _HOLD)
            holder.execute("DROP TRIGGER hold_step_record ON dbos.operation_outputs")
            recovered = cluster.cli("recover", victim)
            assert recovered.stdout.split() == [handle.run_id], recovered.stderr
            result = handle.result()
        history = store.history("book")
        saved = store.load("book")
    finally:
        holder.close()
        store.close()
    assert result.status == "success"
    assert executor_of(cluster.database, handle.run_id) == ("t2" if victim == "t1" else "t1")
    # The replayed save found the version its first execution stored: one version, not two.
    assert [(v.seq, v.parent_seq, v.status) for v in history] == [(1, None, "success")]
    assert saved is not None and saved.source == version_source(handle.run_id)
    # Every tool call was recorded before the kill: none ran again.
    assert sorted(line.split(" pid=")[0] for line in cluster.ledger()) == [
        "append a",
        "append b",
        "slow started",
    ]


def test_a_replayed_save_finds_its_version_below_those_other_runs_appended_since(
    postgres_url: str,
) -> None:
    """The replay may come after other runs of the thread appended: the run's version is then
    below the head, found by its mark, and still nothing is appended."""
    agent = Agent(create_react_node("T", model_client=scripted_client(["hello"])), log_events=False)
    result = asyncio.run(agent.run({"messages": [human("hi")]}))

    def save(run_id: str, parent: int | None) -> int:
        return asyncio.run(save_thread(postgres_url, "talk", parent, agent, result, "fp", run_id))

    try:
        assert save("run-a", None) == 1
        assert save("run-b", None) == 2  # another run of the thread, started before run-a ended
        assert save("run-c", 2) == 3
        assert save("run-a", None) == 1  # run-a's save step replayed: its own version, found
        assert save("run-c", 2) == 3
        assert save("run-d", 3) == 4  # a new run still appends
        store = PostgresCheckpointer(postgres_url, pool_size=1)
        try:
            history = store.history("talk")
        finally:
            store.close()
    finally:
        close_stores()
    assert [(v.seq, v.parent_seq) for v in history] == [(4, 3), (3, 2), (2, None), (1, None)]
