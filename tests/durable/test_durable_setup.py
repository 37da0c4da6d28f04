"""A run submitted before any worker has ever started on the database (the README's quick start
starts workers with `&` and submits at once): the client creates DBOS's system tables as a worker
would, the run waits on its queue, and the first worker executes it."""

from __future__ import annotations

import psycopg
from conftest import LEDGER, Cluster

from jianmu_like.durable import DurableClient


def test_submit_before_the_first_worker_waits_on_the_queue_for_it(cluster: Cluster) -> None:
    listed = cluster.cli("approvals", "list")
    assert (listed.returncode, listed.stdout) == (0, "")  # stdout stays JSON lines; the note is on stderr
    assert "no pending approvals in postgresql://" in listed.stderr
    submitted = cluster.cli("submit", LEDGER, "fill the ledger")
    assert submitted.returncode == 0, submitted.stderr
    run_id = submitted.stdout.strip()
    assert run_id
    with psycopg.connect(cluster.database) as conn:
        triggers = conn.execute(
            "SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'dbos' AND NOT t.tgisinternal"
        ).fetchone()
    assert triggers is not None and triggers[0] > 0  # the LISTEN/NOTIFY triggers a worker's launch adds

    cluster.start_worker(LEDGER, "late")
    with DurableClient(cluster.database) as client:
        result = client.run(run_id).result()
    assert (result.status, result.final_answer) == ("success", "all done")
