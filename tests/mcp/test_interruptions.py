"""One `Interruption` in Python: an approval (a guarded tool call of one agent) and a question (an
MCP server's elicitation, asked during a tool call of its sibling) of one run, listed side by side
by `Agent.pending_interruptions()` and answered by the same call, `Agent.decide`. Against
`@modelcontextprotocol/server-everything` over stdio and the real `openai` client against the
strict scripted model server."""

from __future__ import annotations

import asyncio
from typing import Any

import py_trees
import pytest

from jianmu_like import Agent, ToolCall, create_react_node, human, tool
from jianmu_like.guard import GuardDecision, GuardEnforcer, Interruption
from jianmu_like.guard._approvals import Approval, ApprovalError
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, reply, wait_until_async
from jianmu_like.tools import ElicitationError, ElicitationRequest, MCPToolProvider
from tests.mcp.everything import everything_command, needs_everything

pytestmark = needs_everything


def needs_approval(call: ToolCall, _tool: Any, _ctx: Any) -> GuardDecision | None:
    return GuardDecision.pending("deleting needs a human") if call.name == "delete_file" else None


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def model(body: dict[str, Any]) -> Any:
    """Agent `a` deletes a file, agent `b` calls the tool whose server asks; then each answers."""
    results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if results:
        return reply(f"done: {results[-1]}")
    asked = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return call("delete_file", path="/tmp/x") if "delete" in asked else call("trigger-elicitation-request")


def agents_waiting(srv: ScriptedOpenAIServer) -> Agent:
    """Two agents side by side (namespaces `a` and `b`): `a`'s call waits for a person's
    approval (the run goes on), while `b`'s server asks a question during its call."""
    node, *args = everything_command("stdio")
    provider = MCPToolProvider(
        name="ev", command=node, args=args, elicitation="ask", allow=["trigger-elicitation-request"]
    )
    gate = GuardEnforcer([needs_approval])
    client = srv.client()
    both = py_trees.composites.Parallel(
        "Both",
        policy=py_trees.common.ParallelPolicy.SuccessOnAll(),
        children=[
            create_react_node("A", namespace="a", model_client=client, tools=[delete_file], constraints=gate),
            create_react_node("B", namespace="b", model_client=client, tool_providers=[provider]),
        ],
    )
    return Agent(both, output_namespace="b")


def both(agent: Agent) -> list[Interruption] | None:
    found = agent.pending_interruptions()
    return found if {i.kind for i in found} == {"approval", "question"} else None


async def test_one_listing_and_one_call_for_an_approval_and_a_question() -> None:
    with ScriptedOpenAIServer(model) as srv:
        agent = agents_waiting(srv)
        try:
            inputs = {"a.messages": [human("delete /tmp/x")], "b.messages": [human("ask my name")]}
            run = asyncio.create_task(agent.run(inputs))
            listed = await wait_until_async(lambda: both(agent), "an approval and a question at once")
            approval, question = sorted(listed, key=lambda i: i.kind)
            assert isinstance(approval.approval, Approval) and approval.approval.tool == "delete_file"
            assert approval.namespace == "a"
            assert isinstance(question.question, ElicitationRequest) and question.question.server == "ev"
            assert question.question.requested_schema["required"] == ["name"]
            # The older views are the same records, filtered by kind.
            assert agent.pending_approvals() == [approval.approval]
            assert agent.pending_elicitations() == [question.question]

            # The answer of the other kind's form is refused; nothing is answered.
            with pytest.raises(ElicitationError, match=r"accept .*decline or cancel"):
                agent.decide(question.id, "approve")
            with pytest.raises(ValueError, match="not a decision"):
                agent.decide(approval.id, {"action": "accept"})
            with pytest.raises(ElicitationError, match="name: required key is missing"):
                agent.decide(question.id, {"action": "accept", "content": {}})
            with pytest.raises(
                ApprovalError, match=rf"unknown interruption id 'nope' \(pending: {approval.id}, "
            ):
                agent.decide("nope", "approve")
            assert {i.id for i in agent.pending_interruptions()} == {approval.id, question.id}

            # One call answers either kind.
            assert agent.decide(question.id, {"action": "accept", "content": {"name": "Ada"}}) == question
            assert agent.decide(approval.id, "approve") == approval
            async with asyncio.timeout(PATIENCE):
                result = await run
        finally:
            await agent.aclose()
    assert result.status == "success"
    assert result.agents["a"].final_answer == "done: deleted /tmp/x"
    assert "Ada" in (result.final_answer or "")
    assert agent.pending_interruptions() == []


SHAPE = {"interruption.requested": {"id", "kind", "tool", "call_id", "request"}}
SHAPE["interruption.decided"] = {"id", "kind", "tool", "call_id", "answer"}


async def test_one_pair_of_events_for_an_approval_and_a_question_with_one_shape() -> None:
    """Each kind opens and closes with the same two events, their data of the same keys: the
    request is the listed interruption's payload, the answer the kind's answer model."""
    with ScriptedOpenAIServer(model) as srv:
        agent = agents_waiting(srv)
        seen: list[Any] = []
        agent.telemetry.subscribe(seen.append)
        try:
            inputs = {"a.messages": [human("delete /tmp/x")], "b.messages": [human("ask my name")]}
            run = asyncio.create_task(agent.run(inputs))
            listed = await wait_until_async(lambda: both(agent), "an approval and a question at once")
            approval, question = sorted(listed, key=lambda i: i.kind)
            agent.decide(question.id, {"action": "accept", "content": {"name": "Ada"}})
            agent.decide(approval.id, "approve")
            async with asyncio.timeout(PATIENCE):
                result = await run
        finally:
            await agent.aclose()
    assert result.status == "success"
    pairs = [e for e in seen if e.type.startswith("interruption.")]
    for event in pairs:
        assert set(event.data) == SHAPE[event.type]
    by_id = {i.id: [(e.type, e.namespace) for e in pairs if e.data["id"] == i.id] for i in listed}
    assert by_id == {
        approval.id: [("interruption.requested", "a"), ("interruption.decided", "a")],
        question.id: [("interruption.requested", "b"), ("interruption.decided", "b")],
    }
    requested = {e.data["id"]: e.data for e in pairs if e.type == "interruption.requested"}
    decided = {e.data["id"]: e.data for e in pairs if e.type == "interruption.decided"}
    for item in (approval, question):
        assert requested[item.id]["kind"] == decided[item.id]["kind"] == item.kind
        assert requested[item.id]["request"] == item.payload.model_dump(mode="json")
    assert (requested[approval.id]["tool"], requested[approval.id]["call_id"]) == ("delete_file", approval.id)
    assert requested[question.id]["tool"] == "trigger-elicitation-request"
    assert decided[approval.id]["answer"]["approved"] is True
    answer = decided[question.id]["answer"]  # the content as the server got it: defaults filled in
    assert answer["action"] == "accept" and answer["content"]["name"] == "Ada"
    assert answer["content"]["integer"] == 42
    # The older events still go out, once each, for readers written against them.
    older = [e.type for e in seen if e.type.split(".")[0] in ("approval", "elicitation")]
    assert sorted(older) == sorted(
        ["approval.requested", "approval.resolved", "elicitation.requested", "elicitation.resolved"]
    )
