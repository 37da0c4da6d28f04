"""Hostile model replies and tool errors over real HTTP (the scripted server, the real `openai`
client): arguments nested 100,000 deep, a 5,000-digit integer, megabytes of one string, in
native tool calls (whole and streamed) and in the json/text protocols, become an "invalid
arguments" observation and the run goes on; a reply of 16,000 `{` is read; a tool raising with a
50 MB message is cut like an output in the observation, the state, the events and the next
request. (How long the readers take on such replies: bench/json_scan.py.)"""

from __future__ import annotations

import json

import pytest

from jianmu_like import Agent, ReActConfig, create_react_node, human, tool
from jianmu_like.models._json_text import KEPT_INVALID_CHARS, MAX_ARGUMENTS_CHARS
from jianmu_like.telemetry import events as ev
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import ScriptedOpenAIServer, ScriptedToolCall, call, calls, reply
from jianmu_like.tools.builtin import calculator

DEEP = "[" * 100_000 + "]" * 100_000
LONG_INT = '{"expression": ' + "9" * 5000 + "}"
LONG_STRING = '{"expression": "' + "1" * (MAX_ARGUMENTS_CHARS + 10) + '"}'
PROBLEMS = ["nested deeper than 64 levels", "a number has more than 4300 digits", "too long ("]
INVALID = "Error: invalid arguments for tool 'calculator': "


def _agent(srv: ScriptedOpenAIServer, **config: object) -> tuple[Agent, list[Event]]:
    root = create_react_node(
        model_client=srv.client(), tools=[calculator], config=ReActConfig(**{"max_iterations": 5, **config})
    )
    agent = Agent(root)
    events: list[Event] = []
    agent.telemetry.subscribe(events.append)
    return agent, events


def _observations(agent_messages: list[object]) -> list[str]:
    return [m.content or "" for m in agent_messages if getattr(m, "role", None) == "tool"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("stream", [False, True])
async def test_hostile_native_arguments_become_observations(stream: bool) -> None:
    hostile = calls(
        *(ScriptedToolCall(name="calculator", arguments=a) for a in (DEEP, LONG_INT, LONG_STRING))
    )
    async with ScriptedOpenAIServer([hostile, reply("I could not compute it.")]) as srv:
        agent, events = _agent(srv, stream=stream)
        result = await agent.run({"messages": [human("What is 2 + 2?")]})
        requests = srv.requests
    assert result.status == "success" and result.final_answer == "I could not compute it."
    observations = _observations(result.state.messages)
    assert len(observations) == 3
    for text, problem in zip(observations, PROBLEMS, strict=True):
        assert text.startswith(INVALID) and problem in text
    failed = [e.data["error"] for e in events if e.type == ev.TOOL_CALL_FAILED]
    assert [problem in error for error, problem in zip(failed, PROBLEMS, strict=True)] == [True] * 3
    # The model saw every observation; the calls it made come back cut, not megabytes long.
    sent = requests[1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool", "tool"]
    assert [m["content"] for m in sent[3:]] == observations
    echoed = [c["function"]["arguments"] for c in sent[2]["tool_calls"]]
    assert all(len(a) <= KEPT_INVALID_CHARS + 40 for a in echoed)


@pytest.mark.parametrize(
    ("protocol", "template"),
    [
        ("json", '{{"tool": "calculator", "arguments": {}}}'),
        ("text", "Thought: compute it\nAction: calculator\nAction Input: {}"),
    ],
)
async def test_hostile_protocol_arguments_become_observations(protocol: str, template: str) -> None:
    answer = (
        '{"answer": "I could not compute it."}'
        if protocol == "json"
        else "Final Answer: I could not compute it."
    )
    script = [*(template.format(a) for a in (DEEP, LONG_INT, LONG_STRING)), answer]
    async with ScriptedOpenAIServer(script) as srv:
        agent, _ = _agent(srv, tool_protocol=protocol, max_tool_failures=5)
        result = await agent.run({"messages": [human("What is 2 + 2?")]})
        requests = srv.requests
    assert result.status == "success" and result.final_answer == "I could not compute it."
    observations = _observations(result.state.messages)
    assert len(observations) == 3
    for text, problem in zip(observations, PROBLEMS, strict=True):
        assert text.startswith(INVALID) and problem in text
    last = requests[-1]["messages"]
    assert sum(len(m["content"] or "") for m in last) < 200_000  # no megabytes echoed back


async def test_a_reply_of_sixteen_thousand_open_braces_is_read() -> None:
    script = [
        "{" * 16_000 + '{"tool": "calculator", "arguments": {"expression": "2 + 2"}}',
        '{"answer": "4"}',
    ]
    async with ScriptedOpenAIServer(script) as srv:
        agent, _ = _agent(srv, tool_protocol="json")
        result = await agent.run({"messages": [human("What is 2 + 2?")]})
    assert result.status == "success" and result.final_answer == "4"
    assert _observations(result.state.messages) == ["4"]


async def test_a_final_answer_of_open_braces_passes_the_answer_check() -> None:
    braces = "{" * 16_000
    async with ScriptedOpenAIServer([braces]) as srv:
        agent, events = _agent(srv)
        result = await agent.run({"messages": [human("Say something odd.")]})
    assert result.status == "success" and result.final_answer == braces
    assert not [e for e in events if e.type == ev.ANSWER_REJECTED]


async def test_a_fifty_megabyte_tool_error_is_cut_like_an_output() -> None:
    @tool
    def explode() -> str:
        """Fails with an enormous message."""
        raise ValueError("x" * 50_000_000)

    async with ScriptedOpenAIServer([call("explode"), reply("It failed.")]) as srv:
        root = create_react_node(
            model_client=srv.client(), tools=[explode], config=ReActConfig(max_output_chars=1000)
        )
        agent = Agent(root)
        events: list[Event] = []
        agent.telemetry.subscribe(events.append)
        result = await agent.run({"messages": [human("go")]})
        requests = srv.requests
    assert result.status == "success" and result.final_answer == "It failed."
    (observation,) = _observations(result.state.messages)
    reason = "tool 'explode' raised ValueError: " + "x" * 50_000_000
    omitted = len(reason) - 1000
    cut = reason[:666] + f"\n\n[... {omitted} of {len(reason)} characters omitted ...]\n\n" + "x" * 334
    assert observation == "Error: " + cut  # the observation in the state
    (sent,) = [m for m in requests[1]["messages"] if m["role"] == "tool"]
    assert sent["content"] == observation  # the next request
    (failed,) = [e for e in events if e.type == ev.TOOL_CALL_FAILED]
    assert failed.data["error"] == cut  # the event
    assert sum(len(json.dumps(e.data, default=str)) for e in events) < 100_000  # nothing else carries it
