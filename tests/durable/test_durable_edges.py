"""Durable runs at their edges, with real worker processes on one PostgreSQL database: the
SIGKILL of a worker inside a child built during the run (supervisor sub-agents, plan steps), an
agent file changed between the crash and the recovery, two files of one name in two folders,
two processes deciding one approval, an unknown approval id, and `recover` on a live worker."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jianmu_like.durable import DurableClient
from jianmu_like.durable._fingerprint import AgentChangedError
from jianmu_like.guard import AlreadyDecided, ApprovalError, InterruptionError
from tests.durable.conftest import DESK, HERE, PAYMENTS, PLANNER, Cluster, executor_of


def _status(cluster: Cluster, run_id: str) -> object:
    with DurableClient(cluster.database) as client:
        found = client.dbos.retrieve_workflow(run_id).get_status()
        return (found.status, found.executor_id, str(found.error)[:2000])


def _kill_the_holder_and_recover(cluster: Cluster, run_id: str, workers: tuple[str, str]) -> str:
    """Kill the worker executing the run, let the slow call finish, hand the run to the other."""
    victim = executor_of(cluster.database, run_id)
    assert victim in workers
    cluster.kill(victim)
    cluster.block.unlink()
    recovered = cluster.cli("recover", victim)
    assert recovered.returncode == 0, recovered.stderr
    assert recovered.stdout.split() == [run_id], (_status(cluster, run_id), cluster.ledger())
    return workers[1] if victim == workers[0] else workers[0]


@pytest.mark.parametrize(
    ("agent_file", "appended"),
    [(DESK, 2), (PLANNER, 1)],  # sub-agents run side by side; plan steps one after the other
    ids=["supervisor", "plan_execute"],
)
def test_sigkill_inside_a_child_built_during_the_run_never_repeats_its_finished_calls(
    cluster: Cluster, agent_file: Path, appended: int
) -> None:
    cluster.block.touch()
    cluster.start_worker(agent_file, "c1")
    cluster.start_worker(agent_file, "c2")
    cluster.wait_ready("c1", "c2")
    with DurableClient(cluster.database) as client:
        handle = client.submit(agent_file, "do both parts")
        # The children's appends finished, the first child's slow call is in flight: kill there.
        cluster.wait_for(
            lambda: (
                any(line.startswith("slow started") for line in cluster.ledger())
                and sum(line.startswith("append ") for line in cluster.ledger()) == appended
            ),
            "the children to append and the first to reach its slow call",
        )
        survivor = _kill_the_holder_and_recover(cluster, handle.run_id, ("c1", "c2"))
        result = handle.result()
    assert (result.status, result.final_answer) == ("success", "both parts done")
    assert executor_of(cluster.database, handle.run_id) == survivor
    ledger = cluster.ledger()
    # Each child's finished call: its side effect exactly once (replayed from DBOS's record).
    assert sum(line.startswith("append first part ") for line in ledger) == 1
    assert sum(line.startswith("append second part ") for line in ledger) == 1
    # The call the kill interrupted ran again, with the same `<run>/<step>` idempotency key.
    slow = [line.split("key=")[1] for line in ledger if line.startswith("slow started")]
    assert len(slow) == 2 and len(set(slow)) == 1
    keys = re.findall(r"key=(\S+)", "\n".join(ledger))
    assert all(re.fullmatch(re.escape(handle.run_id) + r"/\d+", key) for key in keys), keys


def test_a_run_recovered_with_a_changed_agent_file_fails_before_any_step(
    cluster: Cluster, tmp_path: Path
) -> None:
    ledger_file = tmp_path / "ledger.yaml"
    shutil.copy(HERE / "ledger.yaml", ledger_file)
    allow = ("--allow-module", "ledger_tools")
    cluster.block.touch()
    cluster.start_worker(ledger_file, "v1", *allow)
    cluster.wait_ready("v1")
    with DurableClient(cluster.database) as client:
        handle = client.submit(ledger_file, "fill the ledger")
        cluster.wait_for(lambda: len(cluster.ledger()) == 3, "the batch to reach the slow call")
        cluster.kill("v1")
        cluster.block.unlink()
        # Between the crash and the recovery, a tool is removed from the file.
        text = ledger_file.read_text().replace("ledger_tools:append, ", "")
        ledger_file.write_text(text)
        cluster.start_worker(ledger_file, "v2", *allow)
        cluster.wait_ready("v2")
        assert cluster.cli("recover", "v1").stdout.split() == [handle.run_id]
        with pytest.raises(AgentChangedError, match="started with another version of its agent"):
            handle.result()
        assert handle.status() == "ERROR"
    # Nothing was replayed, nothing ran again: the three calls of the first worker only.
    assert sorted(line.split(" pid=")[0] for line in cluster.ledger()) == [
        "append a",
        "append b",
        "slow started",
    ]


def test_two_agent_files_of_one_name_in_two_folders_never_share_runs(
    cluster: Cluster, tmp_path: Path
) -> None:
    guarded, open_ = tmp_path / "guarded" / "agent.yaml", tmp_path / "open" / "agent.yaml"
    guarded.parent.mkdir()
    open_.parent.mkdir()
    shutil.copy(PAYMENTS, guarded)  # every transfer waits for a human
    open_.write_text(PAYMENTS.read_text().split("guard:")[0])  # the same agent, unguarded
    allow = ("--allow-module", "ledger_tools")
    cluster.start_worker(open_, "open", *allow)
    cluster.wait_ready("open")
    with DurableClient(cluster.database) as client:
        first = client.submit(guarded, "pay Bob 5")  # first in: a shared queue would hand it over
        second = client.submit(open_, "pay Bob 5")
        assert second.result().status == "success"
        assert first.status() == "ENQUEUED"  # the open file's worker never took it
        assert [line.split(" pid=")[0] for line in cluster.ledger()] == ["transfer 5"]
        cluster.start_worker(guarded, "guarded", *allow)
        cluster.wait_ready("guarded")
        pending = first.pending_approvals(wait=90)
        assert [a.tool for a in pending] == ["transfer"]  # guarded: it waits for a human
    assert executor_of(cluster.database, first.run_id) == "guarded"
    assert len(cluster.ledger()) == 1


def _cli_process(cluster: Cluster, *args: str) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "jianmu_like", *args, "--database", cluster.database]
    return subprocess.Popen(cmd, env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_approvals_are_decided_once_ids_must_exist_and_live_workers_are_not_recovered(
    cluster: Cluster,
) -> None:
    cluster.start_worker(PAYMENTS, "p1")
    cluster.wait_ready("p1")
    with DurableClient(cluster.database) as client:
        handle = client.submit(PAYMENTS, "pay Bob 5")
        [approval] = handle.pending_approvals(wait=90)

        unknown = cluster.cli("approvals", "approve", handle.run_id, "nope")
        assert unknown.returncode == 2
        assert (
            f"unknown approval id 'nope' in run '{handle.run_id}' (pending: {approval.id})" in unknown.stderr
        )
        with pytest.raises(ApprovalError, match="unknown approval id 'nope'"):  # Agent.decide's forms
            client.answer(handle.run_id, "nope", "approve")
        with pytest.raises(InterruptionError, match="a durable run never waits on one"):  # one path,
            client.answer(handle.run_id, approval.id, {"action": "decline"})  # a question's answer
        [still] = handle.interruptions()
        assert (still.id, still.kind) == (approval.id, "approval")  # nothing was answered

        # A live worker's runs are not handed to anyone: it is still executing them; nor does a
        # second worker start with its executor id.
        twin = _cli_process(cluster, "worker", str(PAYMENTS), "--executor-id", "p1")
        try:
            live = cluster.cli("recover", "p1")
            assert live.returncode == 2 and "belong to a live worker" in live.stderr, live.stderr
            assert handle.status() == "PENDING" and executor_of(cluster.database, handle.run_id) == "p1"
            _, twin_err = twin.communicate(timeout=120)
        finally:
            twin.kill()  # a no-op once it exited (as it must)
        assert twin.returncode == 2 and "executor id 'p1' is in use by a live worker" in twin_err, twin_err

        # Two processes decide at once: exactly one wins, the other is told what stands.
        racing = [
            _cli_process(cluster, "approvals", verdict, handle.run_id, approval.id, "--reason", "racing")
            for verdict in ("approve", "deny")
        ]
        outcomes: list[tuple[int, str, str]] = []
        for process in racing:
            out, err = process.communicate(timeout=120)
            outcomes.append((process.returncode, out, err))
        codes = sorted(code for code, _, _ in outcomes)
        assert codes == [0, 2], outcomes
        loser = next(err for code, _, err in outcomes if code == 2)
        won = "approved" if outcomes[0][0] == 0 else "denied"
        assert f"approval '{approval.id}' in run '{handle.run_id}' was already decided ({won}) at " in loser
        again = cluster.cli("approvals", "deny", handle.run_id, approval.id, "--reason", "late")
        assert again.returncode == 2 and f"was already decided ({won})" in again.stderr
        with pytest.raises(AlreadyDecided, match=rf"was already decided \({won}\)"):
            client.answer(handle.run_id, approval.id, ("deny", "late"))  # Agent.decide's forms
        result = handle.result()
    assert result.status == "success"
    transfers = [line for line in cluster.ledger() if line.startswith("transfer")]
    assert len(transfers) == (1 if won == "approved" else 0)
