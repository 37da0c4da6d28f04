"""Exactly-once tool calls and decisions that stick, with real processes on one SQLite file
(and, for the SIGKILL tests of a batch, two resumers and concurrent operators, on one
PostgreSQL database: the async store).

A batch killed mid-way is resumed without running a finished call again; two processes never
both drive one thread; concurrent operators never lose a decision; read-only commands never write.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jianmu_like import human
from jianmu_like._run.review import list_pending, record_decision
from jianmu_like.checkpoint import is_database_url, open_checkpointer
from jianmu_like.checkpoint._store import CheckpointError, SQLiteCheckpointer, ThreadConflictError
from jianmu_like.cli._main import main
from jianmu_like.guard._approvals import ApprovalError
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, ScriptItem, call, calls, reply, wait_until
from tests.integration.approval_agent import build_agent

HERE = Path(__file__).resolve().parent
CLI = [sys.executable, "-m", "jianmu_like"]


def env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "NO_COLOR": "1"}


def spawn(*args: str | Path) -> subprocess.Popen[str]:
    cmd = [sys.executable, *map(str, args)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())


def wait_for(condition: Callable[[], bool], what: str, child: subprocess.Popen[str]) -> None:
    def child_exited() -> str | None:
        return None if child.poll() is None else f"the child exited: {child.communicate()}"

    wait_until(condition, what, abort=child_exited, interval=0.02)


def journal_of(target: str | Path, thread: str) -> list[tuple[str, str]]:
    """(tool, status) of every journaled call, or [] while the store does not exist yet."""
    try:
        store = open_checkpointer(target, readonly=True)
    except CheckpointError:
        return []
    try:
        return sorted((e.tool, e.status) for e in store.journal(thread).values())
    finally:
        store.close()


def store_flags(target: str) -> list[str]:
    """journal_agent.py's flags for `target`: a PostgreSQL URL goes to the async store (a SQLite
    target is the agent's own DB argument)."""
    return ["--store", target] if is_database_url(target) else []


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.parametrize(
    ("mode", "idempotent", "durability"),
    [
        ("serial", False, "sync"),
        ("parallel", False, "sync"),
        ("parallel", True, "sync"),
        # saves in the background: the journal is still written before the run goes on
        ("serial", False, "async"),
        ("parallel", False, "async"),
    ],
)
def test_sigkill_mid_batch_never_runs_a_finished_call_again(
    tmp_path: Path, mode: str, idempotent: bool, durability: str, store_target: str
) -> None:
    db = tmp_path / "runs.db"
    log, block = db.with_suffix(".log"), db.with_suffix(".block")
    block.touch()
    flags = ["--idempotent"] if idempotent else []
    flags += ["--durability", durability, *store_flags(store_target)]
    batch = calls(call("append", item="a"), call("slow"), call("append", item="b"))
    with ScriptedOpenAIServer([batch, reply("all done")]) as srv:
        child = spawn(HERE / "journal_agent.py", srv.base_url, db, "th", mode, "run", *flags)
        # The batch's three calls are journaled as started in one write before the first runs.
        # Serial: `append a` finished, `slow` running, `append b` waiting behind it (started, but
        # chained after `slow`: it never began). Parallel: both appends finished, `slow` running.
        if mode == "serial":
            expected = [("append", "finished"), ("append", "started"), ("slow", "started")]
        else:
            expected = [("append", "finished")] * 2 + [("slow", "started")]

        # ... and `slow` itself has begun.
        def reached_slow() -> bool:
            journal = journal_of(store_target, "th")
            return journal == expected and any(x.startswith("slow started") for x in lines(log))

        wait_for(reached_slow, "the batch to reach `slow`", child)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=PATIENCE)
        block.unlink()

        resumed = spawn(HERE / "journal_agent.py", srv.base_url, db, "th", mode, "resume", *flags)
        out, err = resumed.communicate(timeout=PATIENCE)
        assert resumed.returncode == 0, err
        n_requests = len(srv.requests)
    result = json.loads(out)
    assert result["status"] == "success" and result["final_answer"] == "all done"
    assert n_requests == 2  # the model is not asked again
    effects = lines(log)
    assert effects.count("append a") == 1 and effects.count("append b") == 1  # exactly once
    slow_runs = [line for line in effects if line.startswith("slow started")]
    observations = [m["content"] for m in result["messages"] if m["role"] == "tool"]
    assert observations[0] == "appended a" and observations[2] == "appended b"
    if idempotent:
        assert len(slow_runs) == 2 and observations[1] == "slow done"
        assert slow_runs[0] == slow_runs[1]  # the same idempotency key both times
        assert slow_runs[0].startswith("slow started th/")
    else:
        assert len(slow_runs) == 1  # at most once
        assert "outcome unknown" in observations[1] and "may or may not have taken effect" in observations[1]


@pytest.mark.parametrize(
    ("mode", "kill_at", "effects", "observations"),
    [
        # Killed after the batch's started rows, before any call ran: the model is not asked
        # again (the save of its reply went with them); serially, `a` may have run (unknown) and
        # `b`, chained behind it, certainly did not: it runs now. In parallel both may have run.
        ("serial", "after-start", ["append b"], ["unknown", "appended b"]),
        ("parallel", "after-start", [], ["unknown", "unknown"]),
        # Killed before the commit joining `b`'s outcome with the save: `a`'s outcome was durable
        # at once; `b` ran, but its outcome was lost: never run again, reported unknown.
        ("serial", "before-last", ["append a", "append b"], ["appended a", "unknown"]),
        # Killed right after it: both outcomes are in the checkpoint and the journal.
        ("serial", "after-last", ["append a", "append b"], ["appended a", "appended b"]),
    ],
)
def test_sigkill_at_each_batch_boundary(
    tmp_path: Path, mode: str, kill_at: str, effects: list[str], observations: list[str], store_target: str
) -> None:
    db = tmp_path / "runs.db"
    log = db.with_suffix(".log")
    batch = calls(call("append", item="a"), call("append", item="b"))
    store = store_flags(store_target)
    with ScriptedOpenAIServer([batch, reply("all done")]) as srv:
        child = spawn(
            HERE / "journal_agent.py", srv.base_url, db, "th", mode, "run", "--kill-at", kill_at, *store
        )
        child.communicate(timeout=PATIENCE)
        assert child.returncode == -signal.SIGKILL
        resumed = spawn(HERE / "journal_agent.py", srv.base_url, db, "th", mode, "resume", *store)
        out, err = resumed.communicate(timeout=PATIENCE)
        assert resumed.returncode == 0, err
        n_requests = len(srv.requests)
    result = json.loads(out)
    assert result["status"] == "success" and result["final_answer"] == "all done"
    assert n_requests == 2  # the model is never asked again: its reply was saved with the batch
    assert sorted(lines(log)) == effects  # nothing ran twice
    seen = [m["content"] for m in result["messages"] if m["role"] == "tool"]
    assert ["unknown" if "outcome unknown" in text else text for text in seen] == observations


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_sigkill_during_the_first_model_call_resumes_the_run_from_its_start(
    tmp_path: Path, durability: str
) -> None:
    """Killed while its first model call is in flight, a run has stored only its claim (the first
    tick's save waits for the batch the reply starts): `resume` runs it again from the top, with
    the input it was given, instead of refusing a thread with nothing to resume."""
    db = tmp_path / "runs.db"
    log = db.with_suffix(".log")
    gate, served = threading.Event(), itertools.count()

    def respond(body: dict[str, Any]) -> ScriptItem:
        if next(served) == 0:  # the killed run's call: held until the process is gone
            gate.wait(PATIENCE)
            return reply("never read")
        return reply("all done") if any(m["role"] == "tool" for m in body["messages"]) else batch

    batch = calls(call("append", item="a"))
    with ScriptedOpenAIServer(respond) as srv:
        flags = ("--durability", durability)
        child = spawn(HERE / "journal_agent.py", srv.base_url, db, "th", "serial", "run", *flags)
        wait_for(lambda: len(srv.requests) == 1, "the first model call", child)
        store = SQLiteCheckpointer(db, readonly=True)
        try:
            stored = store.load("th")
            assert stored is not None and stored.status == "running" and stored.seq == 1
            assert all(node.get("status") in (None, "INVALID") for node in stored.tree.values())
        finally:
            store.close()
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=PATIENCE)
        gate.set()
        resumed = spawn(HERE / "journal_agent.py", srv.base_url, db, "th", "serial", "resume", *flags)
        out, err = resumed.communicate(timeout=PATIENCE)
        assert resumed.returncode == 0, err
        asked = [[m["content"] for m in body["messages"] if m["role"] == "user"] for body in srv.requests]
    result = json.loads(out)
    assert result["status"] == "success" and result["final_answer"] == "all done"
    assert asked == [["do the batch"]] * 3  # the input, once, in every request
    assert lines(log) == ["append a"]


def test_sigkill_under_exit_durability_loses_the_run_but_no_finished_call(tmp_path: Path) -> None:
    """ "exit" saves the run's first tick and its end only: killed in the second batch, the thread
    resumes after the first model reply, so the second is asked for again; the journal still
    holds the finished calls, which the repeated batches replay instead of running them again."""
    db = tmp_path / "runs.db"
    log, block = db.with_suffix(".log"), db.with_suffix(".block")
    block.touch()
    first, second = calls(call("append", item="a")), calls(call("append", item="x"), call("slow"))
    with ScriptedOpenAIServer([first, second, second, reply("all done")]) as srv:
        child = spawn(
            HERE / "journal_agent.py", srv.base_url, db, "th", "serial", "run", "--durability", "exit"
        )
        wait_for(lambda: any(x.startswith("slow started") for x in lines(log)), "`slow` to start", child)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=PATIENCE)
        block.unlink()
        resumed = spawn(HERE / "journal_agent.py", srv.base_url, db, "th", "serial", "resume")
        out, err = resumed.communicate(timeout=PATIENCE)
        assert resumed.returncode == 0, err
        n_requests = len(srv.requests)
    result = json.loads(out)
    assert result["status"] == "success" and result["final_answer"] == "all done"
    assert n_requests == 4  # what "exit" gives up: the second reply was not saved, asked again
    effects = lines(log)
    assert effects.count("append a") == 1  # replayed from the journal
    assert effects.count("append x") == 2  # the lost reply's call, asked for again
    observations = [m["content"] for m in result["messages"] if m["role"] == "tool"]
    assert observations[:2] == ["appended a", "appended x"]


async def test_two_processes_resuming_one_thread_run_the_approved_call_once(
    tmp_path: Path, store_target: str
) -> None:
    db, log = tmp_path / "runs.db", tmp_path / "runs.log"
    with ScriptedOpenAIServer([call("delete_file", path="/x"), reply("deleted")]) as srv:
        agent = build_agent(srv.base_url, log, store_target)
        first = await agent.run({"messages": [human("delete /x")]}, thread_id="th")
        await agent.aclose()
        [approval] = first.pending_approvals
        store = open_checkpointer(store_target)
        record_decision(store, "th", approval.id, "approve")
        store.close()
        block = db.with_suffix(".block")
        block.touch()  # the approved call waits until both resumers have had their go
        resumer = (HERE / "approval_agent.py", srv.base_url, db, "th", "resume", "--store", store_target)
        children = [spawn(*resumer) for _ in range(2)]
        loser = wait_until(
            lambda: next((c for c in children if c.poll() is not None), None), "a resumer to be refused"
        )
        _, loser_err = loser.communicate()
        block.unlink()
        [winner] = [c for c in children if c is not loser]
        out, err = winner.communicate(timeout=PATIENCE)
    assert loser.returncode != 0
    assert "ThreadConflictError" in loser_err and "thread 'th'" in loser_err
    assert winner.returncode == 0, err
    assert json.loads(out)["status"] == "success"
    assert lines(log) == ["delete /x"]  # once


def approvals_cli(*args: str | Path) -> subprocess.Popen[str]:
    cmd = [*CLI, "approvals", *map(str, args)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())


@pytest.mark.parametrize(
    ("store_target", "n"), [("sqlite", 8), ("postgres", 3)], indirect=["store_target"]
)  # fewer processes on PostgreSQL: the SQLite case already takes its time
async def test_concurrent_operators_never_lose_a_decision(tmp_path: Path, store_target: str, n: int) -> None:
    log = tmp_path / "runs.log"
    batch = calls(*(call("delete_file", path=f"/f{i}") for i in range(n + 1)))
    with ScriptedOpenAIServer([batch, reply("done")]) as srv:
        agent = build_agent(srv.base_url, log, store_target)
        result = await agent.run({"messages": [human("delete them")]}, thread_id="th")
        await agent.aclose()
    ids = [a.id for a in result.pending_approvals]
    assert len(ids) == n + 1

    approvers = [approvals_cli("approve", store_target, "th", approval_id) for approval_id in ids[:n]]
    outcomes = [(p.wait(timeout=PATIENCE), p.communicate()) for p in approvers]
    assert [code for code, _ in outcomes] == [0] * n, outcomes
    store = open_checkpointer(store_target, readonly=True)
    decided = {p.approval.id: p.decision for p in list_pending(store)}
    assert all(decided[i] is not None and decided[i].approved for i in ids[:n])  # all n stored
    assert decided[ids[n]] is None

    last = ids[n]
    race = [
        approvals_cli("approve", store_target, "th", last),
        approvals_cli("deny", store_target, "th", last, "-r", "no"),
    ]
    codes = [(p.wait(timeout=PATIENCE), p.communicate()) for p in race]
    assert sorted(code for code, _ in codes) == [0, 2], codes  # exactly one wins
    [(_, (_, loser_err))] = [c for c in codes if c[0] == 2]
    assert f"approval '{last}' in thread 'th' was already" in loser_err
    winner = next(p.decision for p in list_pending(store) if p.approval.id == last)
    store.close()
    assert winner is not None and winner.approved == (codes[0][0] == 0)


async def test_a_held_suspended_run_keeps_decisions_stored_by_others(tmp_path: Path) -> None:
    db, log = tmp_path / "runs.db", tmp_path / "runs.log"
    batch = calls(call("delete_file", path="/a"), call("delete_file", path="/b"))
    with ScriptedOpenAIServer([batch, reply("both gone")]) as srv:
        agent = build_agent(srv.base_url, log, db)
        result = await agent.run({"messages": [human("delete")]}, thread_id="th")
        first, second = (a.id for a in result.pending_approvals)
        store = SQLiteCheckpointer(db)
        record_decision(store, "th", second, "approve")  # an operator, from another process
        with pytest.raises(ApprovalError, match=r"already decided \(approved\)"):
            agent.deny(second)  # the stored decision stands
        done = await agent.resume({first: "approve"})  # no reload: the agent held the run
    assert done.status == "success" and done.final_answer == "both gone"
    assert sorted(lines(log)) == ["delete /a", "delete /b"]
    assert list_pending(store) == []
    store.close()


async def test_a_stale_holder_cannot_resume_a_thread_another_process_continued(tmp_path: Path) -> None:
    db, log = tmp_path / "runs.db", tmp_path / "runs.log"
    with ScriptedOpenAIServer([call("delete_file", path="/x"), reply("gone")]) as srv:
        holder = build_agent(srv.base_url, log, db)
        result = await holder.run({"messages": [human("delete /x")]}, thread_id="th")
        other = build_agent(srv.base_url, log, db)
        done = await other.resume({result.pending_approvals[0].id: True}, thread_id="th")
        assert done.status == "success"
        with pytest.raises(ThreadConflictError, match="thread 'th': saved by another process"):
            await holder.resume()
    assert lines(log) == ["delete /x"]
    saved = SQLiteCheckpointer(db, readonly=True).load("th")
    assert saved is not None and saved.status == "success" and saved.owner is None


def cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """The command line, in this process (read-only commands need no process of their own)."""
    code = main(["approvals", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


PRESET_FOR_RESUME = Path(__file__).resolve().parents[2] / "presets" / "react.yaml"


def test_read_only_commands_never_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    code, _, err = cli(capsys, "list", empty)
    assert code == 2 and "empty file, not a checkpoint store" in err
    code, _, err = cli(capsys, "approve", empty, "th", "call_1")
    assert code == 2 and "empty file, not a checkpoint store" in err
    code = main(["resume", str(PRESET_FOR_RESUME), "--checkpoint", str(empty), "--thread", "th"])
    assert code == 2 and "empty file, not a checkpoint store" in capsys.readouterr().err
    assert empty.read_bytes() == b""  # still empty: no database written into it

    missing = tmp_path / "missing.db"
    code, _, err = cli(capsys, "list", missing)
    assert code == 2 and "no such checkpoint file" in err
    assert not missing.exists()

    store = SQLiteCheckpointer(tmp_path / "runs.db")
    store.close()
    before = (tmp_path / "runs.db").read_bytes()
    code, out, err = cli(capsys, "list", tmp_path / "runs.db")
    assert code == 0, err
    assert "no pending approvals" in out
    assert (tmp_path / "runs.db").read_bytes() == before


def test_read_only_commands_on_postgres_never_write_or_show_the_password(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = postgres_url.replace("jianmu@", "jianmu:hunter2@")
    code, _, err = cli(capsys, "list", url)
    assert code == 2 and "no checkpoint store in this database" in err
    code, _, err = cli(capsys, "approve", url, "th", "call_1")
    assert code == 2 and "no checkpoint store in this database" in err
    assert "hunter2" not in err
    with pytest.raises(CheckpointError, match="no checkpoint store"):  # still nothing created
        open_checkpointer(url, readonly=True)

    open_checkpointer(url).close()
    code, out, err = cli(capsys, "list", url)
    assert code == 0, err
    assert "no pending approvals in postgresql://127.0.0.1:" in out and "hunter2" not in out
