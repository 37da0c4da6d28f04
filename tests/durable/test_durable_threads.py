"""Durable runs on a thread: a run submitted with `thread_id` continues the conversation the
thread's earlier runs left (kept in the durable database's checkpoint tables), and appends its
end as a new version; a run without one starts empty, as before."""

from __future__ import annotations

from conftest import LEDGER, Cluster

from jianmu_like.checkpoint._postgres import PostgresCheckpointer
from jianmu_like.durable import DurableClient


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
