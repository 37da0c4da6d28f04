"""Review with edits: a reviewer approves a tool call with corrected arguments (checked against
the tool's schema, then by the guard like a call of the model's), or denies it with a message the
model reads. Over real HTTP (the scripted OpenAI server, the real `openai` client), in process,
through a SQLite checkpoint, and with the `jianmu-like approvals` command as a subprocess."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jianmu_like import Agent, ReActConfig, create_react_node, human, tool
from jianmu_like._run.review import list_pending, record_decision
from jianmu_like.checkpoint import SQLiteCheckpointer
from jianmu_like.guard import ArgumentRule, GuardEnforcer, RequireApproval
from jianmu_like.guard._approvals import ApprovalDecision, InvalidEdit
from jianmu_like.testing import ScriptedOpenAIServer, call, reply

deleted: list[str] = []


@tool
def delete_file(path: str, force: bool = False) -> str:
    """Delete a file.

    Args:
        path: The file.
        force: Delete even if it is read-only.
    """
    deleted.append(path)
    return f"deleted {path}" + (" (forced)" if force else "")


def build(srv: ScriptedOpenAIServer, checkpointer: Any = None) -> Agent:
    guard = GuardEnforcer(
        [
            RequireApproval(tools="delete_file"),
            ArgumentRule("delete_file", "path", pattern=r"/tmp/.+", message="only files under /tmp/"),
        ]
    )
    config = ReActConfig(max_iterations=4)
    root = create_react_node(model_client=srv.client(), tools=[delete_file], constraints=guard, config=config)
    return Agent(root, checkpointer=checkpointer)


def observation(request: dict[str, Any]) -> str:
    content: str = next(m for m in reversed(request["messages"]) if m["role"] == "tool")["content"]
    return content


async def test_approved_with_corrected_arguments_the_call_runs_with_them() -> None:
    deleted.clear()
    script = [call("delete_file", path="/tmp/report-final.txt"), reply("Done.")]
    async with ScriptedOpenAIServer(script) as srv:
        agent = build(srv)
        events: list[Any] = []
        agent.telemetry.subscribe(events.append)
        suspended = await agent.run({"messages": [human("delete the draft")]})
        [approval] = suspended.pending_approvals
        assert approval.parameters is not None and "path" in approval.parameters["properties"]
        agent.approve(approval.id, "the draft, not the final", arguments={"path": "/tmp/report-draft.txt"})
        result = await agent.resume()
        seen = observation(srv.requests[1])
    assert result.status == "success" and result.final_answer == "Done."
    assert deleted == ["/tmp/report-draft.txt"]
    assert seen == (
        '[a human reviewer approved this call with corrected arguments: {"path": "/tmp/report-draft.txt"}]'
        "\ndeleted /tmp/report-draft.txt"
    )
    resolved = next(e for e in events if e.type == "approval.resolved")
    assert resolved.data["arguments"] == {"path": "/tmp/report-draft.txt"}


async def test_corrected_arguments_that_break_the_schema_are_refused_and_the_approval_waits() -> None:
    deleted.clear()
    script = [call("delete_file", path="/tmp/a"), reply("Done.")]
    async with ScriptedOpenAIServer(script) as srv:
        agent = build(srv)
        [approval] = (await agent.run({"messages": [human("delete a")]})).pending_approvals
        with pytest.raises(InvalidEdit, match=r"path must be of type string"):
            agent.approve(approval.id, arguments={"path": 5})
        with pytest.raises(InvalidEdit, match=r"path is required"):
            agent.approve(approval.id, arguments={"force": True})
        with pytest.raises(ValueError, match="not a denial"):
            ApprovalDecision(approved=False, arguments={"path": "/tmp/b"})
        assert [a.id for a in agent.pending_approvals()] == [approval.id]  # nothing recorded
        agent.approve(approval.id, arguments={"path": "/tmp/b", "force": True})
        result = await agent.resume()
    assert result.status == "success" and deleted == ["/tmp/b"]


async def test_the_guard_checks_the_corrected_call_again() -> None:
    deleted.clear()
    script = [call("delete_file", path="/tmp/a"), reply("I may not delete that.")]
    async with ScriptedOpenAIServer(script) as srv:
        agent = build(srv)
        [approval] = (await agent.run({"messages": [human("delete a")]})).pending_approvals
        agent.approve(approval.id, arguments={"path": "/etc/passwd"})  # valid, but against the rule
        result = await agent.resume()
        seen = observation(srv.requests[1])
    assert result.status == "success" and deleted == []
    assert seen == "Error: denied by policy: only files under /tmp/"


async def test_a_denial_message_is_the_models_observation() -> None:
    deleted.clear()
    script = [call("delete_file", path="/tmp/a"), reply("OK, I will keep it.")]
    async with ScriptedOpenAIServer(script) as srv:
        agent = build(srv)
        [approval] = (await agent.run({"messages": [human("delete a")]})).pending_approvals
        agent.deny(approval.id, "keep it, it is the only copy")
        await agent.resume()
        seen = observation(srv.requests[1])
    assert deleted == [] and seen == "Error: denied by a human reviewer: keep it, it is the only copy"


async def test_an_operator_edit_through_the_checkpoint_store_reaches_the_resumed_run(tmp_path: Path) -> None:
    deleted.clear()
    db = tmp_path / "runs.db"
    script = [call("delete_file", path="/tmp/wrong"), reply("Done.")]
    async with ScriptedOpenAIServer(script) as srv:
        agent = build(srv, SQLiteCheckpointer(db))
        await agent.run({"messages": [human("delete it")]}, thread_id="t1")
        store = SQLiteCheckpointer(db)
        [pending] = list_pending(store)
        edit = ApprovalDecision(approved=True, arguments={"path": 7})
        with pytest.raises(InvalidEdit, match="do not match tool 'delete_file'"):
            record_decision(store, "t1", pending.approval.id, edit)
        decision = ApprovalDecision(approved=True, arguments={"path": "/tmp/right"})
        record_decision(store, "t1", pending.approval.id, decision)
        [pending] = list_pending(store)
        assert pending.decision is not None and pending.decision.arguments == {"path": "/tmp/right"}
        fresh = build(srv, SQLiteCheckpointer(db))  # another agent, as a new process would
        result = await fresh.resume(thread_id="t1")
        seen = observation(srv.requests[1])
    assert result.status == "success" and deleted == ["/tmp/right"]
    assert seen.endswith("deleted /tmp/right")
