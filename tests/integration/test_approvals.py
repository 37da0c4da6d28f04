"""Guard approvals end to end: suspend, decide (in-process or from another process), resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from jianmu_like import human
from jianmu_like.checkpoint._store import CheckpointError, SQLiteCheckpointer
from jianmu_like.guard._approvals import ApprovalError
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, calls, reply
from tests.integration.approval_agent import build_agent

HERE = Path(__file__).resolve().parent


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def model_calls(requests: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """The conversation as the model saw it, one tuple of roles per request."""
    return [tuple(m["role"] for m in r["messages"]) for r in requests]


async def test_suspend_then_approve_in_a_new_agent_from_sqlite(tmp_path: Path) -> None:
    db, log = tmp_path / "runs.db", tmp_path / "effects.log"
    script = [call("delete_file", path="/tmp/x"), reply("Deleted /tmp/x.")]
    with ScriptedOpenAIServer(script) as srv:
        first = build_agent(srv.base_url, log, db)
        result = await first.run({"messages": [human("delete /tmp/x")]}, thread_id="t1")
        assert result.status == "suspended" and result.thread_id == "t1"
        [approval] = result.pending_approvals
        assert approval.tool == "delete_file" and approval.arguments == {"path": "/tmp/x"}
        assert "needs a human" in approval.reason
        assert lines(log) == []  # nothing deleted yet
        assert len(srv.requests) == 1

        second = build_agent(srv.base_url, log, db)  # another Agent, same file
        assert [a.id for a in second.pending_approvals()] == []  # nothing loaded yet
        done = await second.resume({approval.id: "approve"}, thread_id="t1")
        requests = srv.requests

    assert done.status == "success" and done.final_answer == "Deleted /tmp/x."
    assert lines(log) == ["delete /tmp/x"]
    assert len(requests) == 2  # no model call repeated
    assert model_calls(requests)[1] == ("system", "user", "assistant", "tool")
    assert requests[1]["messages"][3]["content"] == "deleted /tmp/x"
    assert done.pending_approvals == []
    assert done.state.rounds == 2  # run-scoped counters survived the restore


async def test_denial_becomes_an_observation_and_the_model_answers(tmp_path: Path) -> None:
    log = tmp_path / "effects.log"
    script = [call("delete_file", path="/etc"), reply("I was not allowed to delete /etc.")]
    with ScriptedOpenAIServer(script) as srv:
        agent = build_agent(srv.base_url, log)
        events: list[Any] = []
        agent.telemetry.subscribe(events.append)
        suspended = await agent.run({"messages": [human("delete /etc")]})
        approval_id = suspended.pending_approvals[0].id
        agent.deny(approval_id, "never touch /etc")
        result = await agent.resume()
        tool_msg = srv.requests[1]["messages"][3]
    assert result.status == "success" and result.final_answer == "I was not allowed to delete /etc."
    assert tool_msg["content"] == "Error: denied by a human reviewer: never touch /etc"
    assert lines(log) == []
    types = [e.type for e in events]
    assert types.count("approval.requested") == 1 and types.count("approval.resolved") == 1
    resolved = next(e for e in events if e.type == "approval.resolved")
    assert resolved.data["approved"] is False and resolved.data["approval_id"] == approval_id


async def test_parallel_batch_only_the_guarded_call_waits(tmp_path: Path) -> None:
    db, log = tmp_path / "runs.db", tmp_path / "effects.log"
    batch = calls(
        call("list_files", folder="/a"), call("delete_file", path="/a/old"), call("list_files", folder="/b")
    )
    with ScriptedOpenAIServer([batch, reply("done")]) as srv:
        agent = build_agent(srv.base_url, log, db)
        result = await agent.run({"messages": [human("tidy")]}, thread_id="p")
        assert result.status == "suspended"
        assert sorted(lines(log)) == ["list /a", "list /b"]  # the unguarded calls already ran
        assert result.state.messages[-1].role == "assistant"  # observations wait for the batch

        other = build_agent(srv.base_url, log, db)
        done = await other.resume({result.pending_approvals[0].id: True}, thread_id="p")
        sent = srv.requests[1]["messages"]
    assert done.status == "success"
    assert sorted(lines(log)) == ["delete /a/old", "list /a", "list /b"]  # each exactly once
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool", "tool"]
    assert [m["content"] for m in sent[3:]] == ["a.txt b.txt", "deleted /a/old", "a.txt b.txt"]
    ids = [tc["id"] for tc in sent[2]["tool_calls"]]
    assert [m["tool_call_id"] for m in sent[3:]] == ids


async def test_unknown_and_repeated_decisions_are_clear_errors(tmp_path: Path) -> None:
    with ScriptedOpenAIServer([call("delete_file", path="/x"), reply("ok")]) as srv:
        agent = build_agent(srv.base_url, tmp_path / "effects.log")
        result = await agent.run({"messages": [human("go")]})
        approval_id = result.pending_approvals[0].id
        with pytest.raises(ApprovalError, match=r"unknown approval id 'nope' \(pending: "):
            agent.approve("nope")
        agent.approve(approval_id)
        with pytest.raises(ApprovalError, match=r"already decided \(approved\)"):
            agent.deny(approval_id)
        done = await agent.resume()
        assert done.status == "success"
        with pytest.raises(ApprovalError, match="unknown approval id"):
            agent.approve(approval_id)  # consumed: no longer pending
        with pytest.raises(RuntimeError, match="nothing to resume"):
            await agent.resume()


async def test_abandoning_a_suspended_run_answers_the_waiting_call(tmp_path: Path) -> None:
    with ScriptedOpenAIServer([call("delete_file", path="/x"), reply("fresh")]) as srv:
        agent = build_agent(srv.base_url, tmp_path / "effects.log")
        await agent.run({"messages": [human("delete")]})
        result = await agent.run({"messages": [human("never mind")]})  # a fresh run instead
        sent = srv.requests[1]["messages"]
    assert result.status == "success"
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
    assert "waiting for human approval" in sent[3]["content"]


async def test_a_new_run_on_a_thread_suspended_with_approvals_is_refused(tmp_path: Path) -> None:
    from jianmu_like._run.review import ThreadSuspendedError, list_pending

    db, log = tmp_path / "runs.db", tmp_path / "effects.log"
    with ScriptedOpenAIServer([call("delete_file", path="/x"), reply("gone")]) as srv:
        agent = build_agent(srv.base_url, log, db)
        first = await agent.run({"messages": [human("delete /x")]}, thread_id="t")
        [waiting] = first.pending_approvals
        for runner in (agent, build_agent(srv.base_url, log, db)):  # this process, or a new agent
            with pytest.raises(
                ThreadSuspendedError, match=rf"thread 't' is suspended .*{waiting.id} \(delete_file"
            ):
                await runner.run({"messages": [human("something else")]}, thread_id="t")
        assert len(srv.requests) == 1  # the refused runs asked no model
        [kept] = list_pending(SQLiteCheckpointer(db))
        assert kept.approval == waiting and kept.decision is None
        agent.approve(waiting.id)  # the agent that was refused is as it was: it decides and resumes
        done = await agent.resume()
    assert done.status == "success" and done.final_answer == "gone"
    assert lines(log) == ["delete /x"]


def test_bad_checkpoint_files_are_refused_and_left_untouched(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"this is not sqlite" * 100)
    before = corrupt.read_bytes()
    with pytest.raises(CheckpointError, match="not a SQLite checkpoint file"):
        SQLiteCheckpointer(corrupt)
    assert corrupt.read_bytes() == before

    import sqlite3

    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE users (name TEXT)")
    before = foreign.read_bytes()
    with pytest.raises(CheckpointError, match="not a jianmu_like checkpoint store"):
        SQLiteCheckpointer(foreign)
    assert foreign.read_bytes() == before


async def test_incompatible_schema_or_tree_is_refused(tmp_path: Path) -> None:
    from jianmu_like import Agent, ReActState, create_react_node
    from jianmu_like.testing import scripted_client

    db = tmp_path / "runs.db"
    with ScriptedOpenAIServer([call("delete_file", path="/x")]) as srv:
        agent = build_agent(srv.base_url, tmp_path / "effects.log", db)
        await agent.run({"messages": [human("go")]}, thread_id="t")
    store = SQLiteCheckpointer(db)
    saved = store.load("t")
    assert saved is not None and saved.status == "suspended"

    class OtherState(ReActState):
        extra_field: int = 0

    other_schema = Agent(
        create_react_node("Janitor", model_client=scripted_client([])), OtherState, checkpointer=store
    )
    with pytest.raises(CheckpointError, match="state schema"):
        await other_schema.resume(thread_id="t")
    other_tree = Agent(create_react_node("Other", model_client=scripted_client([])), checkpointer=store)
    with pytest.raises(CheckpointError, match="different tree"):
        await other_tree.resume(thread_id="t")
    with pytest.raises(CheckpointError, match="no checkpoint for thread 'missing'"):
        await other_tree.resume(thread_id="missing")
    after = store.load("t")
    assert after is not None and after.model_dump() == saved.model_dump()  # nothing overwritten


def run_child(*args: str, hang: bool = False) -> subprocess.Popen[str]:
    cmd = [sys.executable, str(HERE / "approval_agent.py"), *args] + (["--hang"] if hang else [])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
    }
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_sigkill_while_suspended_then_resume_in_a_new_process(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    batch = calls(call("list_files", folder="/a"), call("delete_file", path="/a/x"))
    with ScriptedOpenAIServer([batch, reply("all done")]) as srv:
        child = run_child(srv.base_url, str(db), "th", "run", hang=True)
        assert child.stdout is not None
        before = json.loads(child.stdout.readline())
        assert before["status"] == "suspended"
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=PATIENCE)
        assert child.returncode == -signal.SIGKILL

        # What the checkpoint holds after the kill is exactly what the dead process had.
        saved = SQLiteCheckpointer(db).load("th")
        assert saved is not None and saved.status == "suspended"
        assert [m["content"] for m in saved.state["messages"]] == [m["content"] for m in before["messages"]]
        assert saved.state["usage"] == before["usage"]
        assert [a["id"] for a in saved.state["pending_approvals"]] == [a["id"] for a in before["pending"]]

        decision = json.dumps({before["pending"][0]["id"]: "approve"})
        resumed = run_child(srv.base_url, str(db), "th", "resume", decision)
        out, err = resumed.communicate(timeout=PATIENCE)
        assert resumed.returncode == 0, err
        after = json.loads(out)
        n_requests = len(srv.requests)
    assert after["status"] == "success" and after["final_answer"] == "all done"
    assert n_requests == 2  # the killed process's model call was not repeated
    assert lines(db.with_suffix(".log")) == ["list /a", "delete /a/x"]  # each side effect once
    assert after["usage"]["calls"] == 2 and after["usage"]["total_tokens"] == 30
    roles = [m["role"] for m in after["messages"]]
    assert roles == ["user", "assistant", "tool", "tool", "assistant"]


async def test_operator_decides_from_the_checkpoint_file(tmp_path: Path) -> None:
    from jianmu_like._run.review import list_pending, record_decision

    db, log = tmp_path / "runs.db", tmp_path / "effects.log"
    with ScriptedOpenAIServer([call("delete_file", path="/q"), reply("gone")]) as srv:
        agent = build_agent(srv.base_url, log, db)
        await agent.run({"messages": [human("delete /q")]}, thread_id="ops")

        store = SQLiteCheckpointer(db)
        [pending] = list_pending(store)
        assert pending.thread_id == "ops" and pending.approval.tool == "delete_file"
        assert pending.decision is None
        with pytest.raises(ApprovalError, match="unknown approval id 'zzz' in thread 'ops'"):
            record_decision(store, "ops", "zzz", "approve")
        with pytest.raises(ApprovalError, match="no checkpoint for thread 'nope'"):
            record_decision(store, "nope", pending.approval.id, "approve")
        record_decision(store, "ops", pending.approval.id, ("approve", "checked by ops"))
        with pytest.raises(ApprovalError, match=r"already decided \(approved\)"):
            record_decision(store, "ops", pending.approval.id, "deny")
        assert list_pending(store)[0].decision is not None

        # The same agent object (alive all along) resumes and sees the operator's decision.
        result = await agent.resume(thread_id="ops")
    assert result.status == "success" and result.final_answer == "gone"
    assert lines(log) == ["delete /q"]
    assert list_pending(SQLiteCheckpointer(db)) == []


async def test_breakpoint_every_n_rounds_suspends_and_resumes(tmp_path: Path) -> None:
    """`breakpoint_every: 2` (YAML): round 2's calls wait for a human; the run resumes on
    approval and round 4 waits again; a denial becomes an observation."""
    from jianmu_like import load_agent

    path = tmp_path / "agent.yaml"
    path.write_text("name: Pauser\ntools: [calculator]\nbreakpoint_every: 2\n")
    script = [call("calculator", expression=f"{n} + {n}") for n in range(1, 5)] + [reply("Done.")]
    with ScriptedOpenAIServer(script) as srv:
        agent = load_agent(path, model_client=srv.client())
        first = await agent.run({"messages": [human("add things")]})
        assert first.status == "suspended" and len(srv.requests) == 2
        [approval] = first.pending_approvals
        assert approval.arguments == {"expression": "2 + 2"} and "breakpoint: round 2" in approval.reason
        second = await agent.resume({approval.id: "approve"})
        assert second.status == "suspended" and len(srv.requests) == 4
        [again] = second.pending_approvals
        assert again.arguments == {"expression": "4 + 4"}
        done = await agent.resume({again.id: "deny"})
        requests = srv.requests
    assert done.status == "success" and done.final_answer == "Done."
    observations = [m.content for m in done.state.messages if m.role == "tool"]
    assert observations[:3] == ["2", "4", "6"] and "denied by a human reviewer" in (observations[3] or "")
    assert len(requests) == 5  # no round repeated
