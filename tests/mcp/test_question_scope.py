"""A run's questions are its own, though its MCP server (and so its question box) is shared by
every conversation of a template: a run lists and answers only the questions that may be its
own, and its end cancels only those that can be nobody else's. Two conversations of one
`AgentTemplate` over one server-everything session (stdio), the real `openai` client against the
scripted model server: run A's question is asked while only A calls the server (A's alone), run
B's while both do (it may be either's, so A lists it but B's end is what ends it)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from jianmu_like import AgentTemplate, Conversation, create_react_node, human
from jianmu_like.guard import InterruptionError
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, reply, wait_until_async
from jianmu_like.tools import MCPToolProvider
from jianmu_like.tools._questions import Question
from tests.mcp.everything import everything_command, needs_everything

pytestmark = needs_everything


def model(body: dict[str, Any]) -> Any:
    results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    return reply(f"done: {results[-1]}") if results else call("trigger-elicitation-request")


def shared_template(srv: ScriptedOpenAIServer) -> AgentTemplate:
    node, *args = everything_command("stdio")
    provider = MCPToolProvider(
        name="ev", command=node, args=args, elicitation="ask", allow=["trigger-elicitation-request"]
    )
    return AgentTemplate.from_prototype(
        create_react_node(model_client=srv.client(), tool_providers=[provider]), log_events=False
    )


def ids(questions: list[Question]) -> list[str]:
    return [question.id for question in questions]


async def two_questions(
    a: Conversation, b: Conversation
) -> tuple[asyncio.Task[Any], asyncio.Task[Any], Question, Question]:
    """Run A until its question waits, then run B until its own does (A's call still waits)."""
    run_a = asyncio.create_task(a.run({"messages": [human("ask my name")]}))
    [qa] = await wait_until_async(a.pending_elicitations, "run A's question")
    run_b = asyncio.create_task(b.run({"messages": [human("ask my name")]}))
    [qb] = await wait_until_async(b.pending_elicitations, "run B's question")
    assert qb.id != qa.id
    # A's question was asked while only A called the server: B neither lists nor answers it.
    assert ids(b.pending_elicitations()) == [qb.id]
    assert [i.id for i in b.pending_interruptions()] == [qb.id]
    # B's was asked while both calls waited: it may be A's as well, so A lists it too.
    assert ids(a.pending_elicitations()) == [qa.id, qb.id]
    return run_a, run_b, qa, qb


async def finish_b(b: Conversation, run_b: asyncio.Task[Any], qb: Question) -> None:
    """B's question outlived run A: still open, answered, and B finishes with the answer."""
    assert ids(b.pending_elicitations()) == [qb.id]
    b.decide(qb.id, {"action": "accept", "content": {"name": "Grace"}})
    result = await asyncio.wait_for(run_b, PATIENCE)
    assert result.status == "success", result.error
    assert result.final_answer is not None and "Grace" in result.final_answer


async def test_a_run_that_finishes_leaves_another_runs_question_open() -> None:
    with ScriptedOpenAIServer(model) as srv:
        template = shared_template(srv)
        a, b = template.conversation("a"), template.conversation("b")
        try:
            run_a, run_b, qa, qb = await two_questions(a, b)
            with pytest.raises(InterruptionError, match=rf"unknown interruption id {qa.id!r}"):
                b.decide(qa.id, {"action": "accept", "content": {"name": "Mallory"}})
            a.decide(qa.id, {"action": "accept", "content": {"name": "Ada"}})
            result = await asyncio.wait_for(run_a, PATIENCE)
            assert result.status == "success", result.error
            assert result.final_answer is not None and "Ada" in result.final_answer
            # A ended: B's question is B's alone now, and no longer A's to list.
            assert a.pending_elicitations() == []
            await finish_b(b, run_b, qb)
        finally:
            await template.aclose()


async def test_a_cancelled_run_cancels_its_own_question_only() -> None:
    with ScriptedOpenAIServer(model) as srv:
        template = shared_template(srv)
        a, b = template.conversation("a"), template.conversation("b")
        try:
            run_a, run_b, _, qb = await two_questions(a, b)
            run_a.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run_a
            # A's end answers A's question `cancel` (it waits in the MCP session, not in the
            # cancelled call), and leaves B's open for B.
            await wait_until_async(lambda: a.pending_elicitations() == [], "run A's question cancelled")
            await finish_b(b, run_b, qb)
        finally:
            await template.aclose()
