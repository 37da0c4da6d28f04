"""Durable runs on DBOS with real worker processes sharing one PostgreSQL database.

A run is enqueued by one process (the CLI or the Python API), executed by a worker, survives
the SIGKILL of its worker in the middle of a tool batch (finished calls are never run again), and
waits durably for an approval that a third process gives.
"""

from __future__ import annotations

import json
import re

from jianmu_like.durable import DurableClient
from jianmu_like.testing import PATIENCE
from tests.durable.conftest import LEDGER, PAYMENTS, Cluster, executor_of, json_lines


def test_submit_from_the_cli_and_from_python_runs_on_a_worker(cluster: Cluster) -> None:
    cluster.start_worker(LEDGER, "solo")
    cluster.wait_ready("solo")
    done = cluster.cli("submit", LEDGER, "fill the ledger", "--wait", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "success"
    assert result["final_answer"] == "all done"
    tools = [m["content"] for m in result["messages"] if m["role"] == "tool"]
    assert tools == ["appended a", "slow done", "appended b"]  # one observation per call, in order

    with DurableClient(cluster.database) as client:
        handle = client.submit(LEDGER, "again")
        answer = handle.result()
        assert (answer.status, answer.final_answer, answer.run_id) == ("success", "all done", handle.run_id)
        assert handle.status() == "SUCCESS"
        # A model call that fails for good is recorded as a failed step: the run fails, clearly.
        refused = client.submit(LEDGER, "refuse").result()
        assert refused.status == "failure"
        assert refused.error is not None and "the scripted model refuses" in refused.error
    assert executor_of(cluster.database, handle.run_id) == "solo"
    # Each call ran once per run, and saw an idempotency key naming its run and step.
    keys = re.findall(r"key=(\S+)", "\n".join(cluster.ledger()))
    assert len(keys) == 6
    assert len(set(keys)) == 6
    assert sum(k.startswith(handle.run_id + "/") for k in keys) == 3

    listed = json_lines(cluster.cli("runs", LEDGER, "--all").stdout)
    assert {row["run_id"] for row in listed} == {result["run_id"], handle.run_id, refused.run_id}
    assert all(row["status"] == "SUCCESS" for row in listed)
    assert json_lines(cluster.cli("runs").stdout) == []  # nothing enqueued, running or waiting

    worker = cluster.workers["solo"]
    worker.terminate()  # SIGTERM: a graceful stop
    assert worker.wait(timeout=PATIENCE) == 0


def test_sigkill_in_a_tool_batch_the_run_finishes_on_the_other_worker(cluster: Cluster) -> None:
    cluster.block.touch()
    cluster.start_worker(LEDGER, "w1")
    cluster.start_worker(LEDGER, "w2")
    cluster.wait_ready("w1", "w2")
    with DurableClient(cluster.database) as client:
        handle = client.submit(LEDGER, "fill the ledger")
        # The batch [append a, slow, append b] runs in parallel: both appends finish, slow blocks.
        cluster.wait_for(
            lambda: len(cluster.ledger()) == 3 and any("slow started" in line for line in cluster.ledger()),
            "the batch to reach the slow call",
        )
        victim = executor_of(cluster.database, handle.run_id)
        assert victim in ("w1", "w2")
        survivor = "w2" if victim == "w1" else "w1"
        cluster.kill(victim)
        cluster.block.unlink()  # the slow call may now finish, on the survivor

        recovered = cluster.cli("recover", victim)
        assert recovered.returncode == 0, recovered.stderr
        assert recovered.stdout.split() == [handle.run_id]
        result = handle.result()

    assert (result.status, result.final_answer) == ("success", "all done")
    assert executor_of(cluster.database, handle.run_id) == survivor
    ledger = cluster.ledger()
    # Finished calls: their side effect exactly once (replayed from DBOS's record on the survivor).
    assert sum(line.startswith("append a ") for line in ledger) == 1
    assert sum(line.startswith("append b ") for line in ledger) == 1
    # The call the kill interrupted ran again (at-least-once), with the same idempotency key.
    slow = [line for line in ledger if line.startswith("slow started")]
    assert len(slow) == 2
    assert len({line.split("key=")[1] for line in slow}) == 1
    assert [m.content for m in result_messages(result) if m.role == "tool"] == [
        "appended a",
        "slow done",
        "appended b",
    ]


def test_an_approval_from_a_third_process_finishes_the_run_on_another_worker(cluster: Cluster) -> None:
    cluster.start_worker(PAYMENTS, "p1")
    cluster.start_worker(PAYMENTS, "p2")
    cluster.wait_ready("p1", "p2")
    with DurableClient(cluster.database) as client:
        handle = client.submit(PAYMENTS, "pay Bob 5")
        pending = handle.pending_approvals(wait=PATIENCE)
        assert [(a.tool, a.arguments) for a in pending] == [("transfer", {"amount": 5})]
        assert handle.status() == "PENDING"
        [waiting] = handle.interruptions()  # the same waits, as the one record
        assert (waiting.id, waiting.kind, waiting.approval) == (pending[0].id, "approval", pending[0])

        # The worker holding the waiting run dies; the wait itself is durable.
        holder = executor_of(cluster.database, handle.run_id)
        assert holder in ("p1", "p2")
        cluster.kill(holder)
        assert cluster.cli("recover", holder).returncode == 0

        listed = json_lines(cluster.cli("approvals", "list").stdout)
        assert [(row["run_id"], row["id"]) for row in listed] == [(handle.run_id, pending[0].id)]
        approve = ("approvals", "approve", handle.run_id, pending[0].id, "--args")
        wrong = cluster.cli(*approve, '{"amount": "five"}')  # refused before anything is stored
        assert wrong.returncode == 2 and "do not match tool 'transfer'" in wrong.stderr, wrong.stderr
        approved = cluster.cli(*approve, '{"amount": 3}')  # the reviewer corrects the amount
        assert approved.returncode == 0, approved.stderr
        result = handle.result()

    assert (result.status, result.final_answer) == ("success", "sent")
    assert executor_of(cluster.database, handle.run_id) == ("p2" if holder == "p1" else "p1")
    assert [line.split(" pid=")[0] for line in cluster.ledger()] == ["transfer 3"]


def result_messages(result: object) -> list:  # type: ignore[type-arg]
    from jianmu_like.models._messages import Message

    return [Message.model_validate(m) for m in result.messages]  # type: ignore[attr-defined]
