"""The model's reasoning on `reply.completed` from the nodes that ask once (a single-call LLM
node, plain or structured; the presets' `PromptCall`s, e.g. plan-execute's planner and answer;
the supervisor's answer), as the ReAct loop's LLM node puts it — over real HTTP: the scripted
server plays a reasoning server for the real `openai` client."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from jianmu_like import (
    Agent,
    ReActConfig,
    ReActState,
    SupervisorConfig,
    create_plan_execute_node,
    create_supervisor_node,
    human,
)
from jianmu_like.models import Usage
from jianmu_like.nodes import LLMCallNode
from jianmu_like.telemetry import events as ev
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import ScriptedOpenAIServer, call, reply
from jianmu_like.tools.builtin import calculator

THOUGHT = "It looks like an advert, so spam."


class Verdict(BaseModel):
    label: str


def _completed(events: list[Event]) -> list[tuple[str | None, str | None]]:
    return [(e.data.get("content"), e.data.get("reasoning")) for e in events if e.type == ev.REPLY_COMPLETED]


async def _run(node: Any, script: Any, inputs: dict[str, Any], **server: Any) -> tuple[Any, list[Event]]:
    async with ScriptedOpenAIServer(script, **server) as srv:
        agent = Agent(node(srv.client()), ReActState)
        events: list[Event] = []
        agent.telemetry.subscribe(events.append)
        result = await agent.run(inputs)
    assert result.status == "success", result.error
    return result, events


@pytest.mark.parametrize("stream", [False, True])
async def test_a_single_call_node_puts_the_reasoning_on_reply_completed(stream: bool) -> None:
    result, events = await _run(
        lambda client: LLMCallNode(
            "Classify", client, prompt="Classify: {text}", config=ReActConfig(stream=stream)
        ),
        [reply("spam", reasoning_content=THOUGHT)],
        {"text": "WIN A PRIZE"},
    )
    assert _completed(events) == [("spam", THOUGHT)]
    assert result.state.messages[-1].reasoning_content == THOUGHT


async def test_a_structured_call_puts_the_reasoning_of_the_reply_it_read() -> None:
    """Native level: the schema tool's call carries the reasoning."""
    result, events = await _run(
        lambda client: LLMCallNode("Classify", client, prompt="Classify: {text}", output_schema=Verdict),
        [reply(tool_calls=[call("Verdict", label="spam")], reasoning_content=THOUGHT)],
        {"text": "WIN A PRIZE"},
    )
    assert _completed(events) == [('{"label": "spam"}', THOUGHT)]
    assert result.state.messages[-1].reasoning_content == THOUGHT


async def test_a_structured_call_re_asked_has_the_reasoning_of_the_retry() -> None:
    """The native level gets prose, JSON mode's first reply is invalid and re-asked once: the
    value is read from the retry, and so is the reasoning `reply.completed` carries."""
    script = [
        reply("no JSON here", reasoning_content="native: no tool call"),
        reply("still no JSON", reasoning_content="a first guess"),
        reply('{"label": "spam"}', reasoning_content=THOUGHT),
    ]
    _, events = await _run(
        lambda client: LLMCallNode("Classify", client, prompt="Classify: {text}", output_schema=Verdict),
        script,
        {"text": "WIN A PRIZE"},
        ignores_response_format=True,
    )
    assert _completed(events) == [('{"label": "spam"}', THOUGHT)]


async def test_plan_execute_planner_and_answer_put_their_reasoning() -> None:
    script = [
        reply(tool_calls=[call("Plan", steps=[{"task": "multiply 6 by 7"}])], reasoning_content="plan it"),
        reply("42", reasoning_content="step thought"),
        reply("6*7 is 42.", reasoning_content="answer thought"),
    ]
    _, events = await _run(
        lambda client: create_plan_execute_node("Solve", model_client=client, tools=[calculator]),
        script,
        {"messages": [human("What is 6*7?")]},
    )
    reasoning = [r for _, r in _completed(events)]
    assert reasoning == ["plan it", "step thought", "answer thought"], _completed(events)


async def test_the_supervisors_answer_puts_its_reasoning() -> None:
    def responder(body: dict[str, Any]) -> Any:
        tools = {t["function"]["name"] for t in body.get("tools") or []}
        if "SupervisorPlan" in tools:
            return reply(tool_calls=[call("SupervisorPlan", sub_questions=["What is 6*7?"])])
        if "SupervisorDecision" in tools:
            decision = call("SupervisorDecision", answer="It is 42.", follow_ups=[])
            return reply(tool_calls=[decision], reasoning_content="the sub-agent said 42")
        return reply("42", usage=Usage(prompt_tokens=1, completion_tokens=1, total_tokens=2))

    _, events = await _run(
        lambda client: create_supervisor_node(
            model_client=client,
            tools=[calculator],
            supervisor=SupervisorConfig(max_agents=1, max_follow_ups=0),
        ),
        responder,
        {"messages": [human("What is 6*7?")]},
    )
    assert ("It is 42.", "the sub-agent said 42") in _completed(events), _completed(events)
