"""A run's client tools and output schema at the agent level (the OpenAI endpoint's tools and
response_format, in `tests/server/test_openai_client_tools.py`): a client tool's call waits like
an approval, is answered with its result, and a run's own schema is checked like an output type."""

from __future__ import annotations

from typing import Any

import pytest

from jianmu_like import Agent, ReActState, create_react_node, human, tool
from jianmu_like.guard._approvals import ApprovalDecision, ApprovalError
from jianmu_like.testing import call, calls, reply, scripted_client

WEATHER = {
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
CLOCK = {"name": "get_time"}
SCHEMA = {"type": "object", "properties": {"sky": {"type": "string"}}, "required": ["sky"]}


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def agent(responder: Any) -> Agent:
    return Agent(
        create_react_node(model_client=scripted_client(responder), tools=[add]), state_schema=ReActState
    )


def weather_then_answer(body: dict[str, Any]) -> Any:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return reply(f'{{"sky": "{last["content"]}"}}')
    return calls(call("add", a=1, b=2), call("get_weather", city="Paris"))


async def test_a_client_tool_call_waits_and_its_result_is_the_observation() -> None:
    bot = agent(weather_then_answer)
    result = await bot.run({"messages": [human("weather?")], "client_tools": {"tools": [WEATHER]}})
    assert result.status == "suspended"
    (waiting,) = result.pending_approvals
    assert (waiting.kind, waiting.tool, waiting.arguments) == (
        "client_tool",
        "get_weather",
        {"city": "Paris"},
    )
    with pytest.raises(ApprovalError, match="waits for the client's result"):
        bot.decide(waiting.id, True)  # nothing to approve: the server has no such tool
    bot.decide(waiting.id, ApprovalDecision(approved=True, output="sunny"))
    result = await bot.resume()
    assert result.status == "success" and result.final_answer == '{"sky": "sunny"}'
    tools = [(m.name, m.content) for m in result.state.messages if m.role == "tool"]
    assert tools == [("add", "3"), ("get_weather", "sunny")]  # the agent's own ran here


async def test_a_denied_client_call_tells_the_model() -> None:
    bot = agent(weather_then_answer)
    result = await bot.run({"messages": [human("weather?")], "client_tools": {"tools": [WEATHER]}})
    bot.deny(result.pending_approvals[0].id, "offline")
    result = await bot.resume()
    assert result.final_answer == '{"sky": "Error: the client did not run this call: offline"}'


async def test_parallel_off_sends_one_client_call_at_a_time() -> None:
    def both(body: dict[str, Any]) -> Any:
        if body["messages"][-1]["role"] == "tool":
            return reply("done")
        return calls(call("get_weather", city="Paris"), call("get_time"))

    bot = agent(both)
    inputs = {"tools": [WEATHER, CLOCK], "parallel": False}
    result = await bot.run({"messages": [human("both")], "client_tools": inputs})
    assert [a.tool for a in result.pending_approvals] == ["get_weather"]
    bot.decide(result.pending_approvals[0].id, ApprovalDecision(approved=True, output="sunny"))
    result = await bot.resume()
    observed = {m.name: m.content for m in result.state.messages if m.role == "tool"}
    assert observed["get_time"].startswith("Error: not sent: this client takes one tool call at a time")


async def test_a_client_tool_named_like_the_agents_own_fails_the_run() -> None:
    bot = agent(weather_then_answer)
    result = await bot.run({"messages": [human("hi")], "client_tools": {"tools": [{"name": "add"}]}})
    assert result.status == "failure" and "client tool 'add' has the name" in (result.error or "")


async def test_a_runs_own_output_schema_is_checked_like_an_output_type() -> None:
    def answers(body: dict[str, Any]) -> Any:
        assert "Final answer: Reply with only a JSON object" in body["messages"][0]["content"]
        return reply('sure: {"sky": "clear"}')

    result = await agent(answers).run({"messages": [human("sky?")], "output_schema": SCHEMA})
    assert result.status == "success" and result.output == {"sky": "clear"}

    prose = agent(lambda body: reply("It is clear."))
    failed = await prose.run({"messages": [human("sky?")], "output_schema": SCHEMA})
    assert failed.status == "failure" and failed.termination is not None
    assert failed.termination["reason"] == "invalid_output"
    plain = await prose.run({"messages": [human("sky?")]})  # the next run asks nothing of its answer
    assert plain.status == "success" and plain.output is None


def test_a_call_left_waiting_for_its_client_is_answered_so() -> None:
    from jianmu_like.models._messages import ToolCall, ai
    from jianmu_like.nodes._open_calls import NO_CLIENT_RESULT, NOT_RUN_WAITING, answer_open_calls

    calls_made = [ToolCall(id="c1", name="get_weather"), ToolCall(id="c2", name="delete")]
    fixed, answered = answer_open_calls(
        [ai(None, tool_calls=calls_made)], waiting=frozenset({"c1", "c2"}), clients=frozenset({"c1"})
    )
    assert [(m.tool_call_id, m.content) for m in fixed[1:]] == [
        ("c1", NO_CLIENT_RESULT),
        ("c2", NOT_RUN_WAITING),
    ]
    assert [a["call_id"] for a in answered] == ["c1", "c2"]
