"""The model's reasoning surfaced, never sent back: `reasoning_content` / `reasoning` from a
reasoning server (the scripted server plays one over real HTTP, the real `openai` client reads
it) becomes `reasoning.delta` events while a reply streams and `reply.completed.reasoning` once
it is whole; the next request's messages carry no reasoning."""

from __future__ import annotations

from typing import Any

import pytest

from jianmu_like import Agent, ReActConfig, create_react_node, human
from jianmu_like._base.config import ToolProtocol
from jianmu_like.server import ChannelMapper
from jianmu_like.telemetry import events as ev
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import ScriptedOpenAIServer, call, calls, fault_reply, reply, scripted_client
from jianmu_like.tools.builtin import calculator

THINK_1 = "Six times seven: I should use the calculator."
THINK_2 = "The tool said 42, so that is the answer."


def _script(**fields: Any) -> list[Any]:
    return [
        calls(call("calculator", expression="6 * 7"), reasoning_content=THINK_1, **fields),
        reply("It is 42.", reasoning_content=THINK_2, **fields),
    ]


def _agent(client: Any, *, stream: bool, protocol: ToolProtocol | None = None) -> tuple[Agent, list[Event]]:
    config = ReActConfig(max_iterations=4, stream=stream, tool_protocol=protocol)
    agent = Agent(create_react_node(model_client=client, tools=[calculator], config=config))
    events: list[Event] = []
    agent.telemetry.subscribe(events.append)
    return agent, events


def _by_reply(events: list[Event]) -> list[str]:
    """The reasoning deltas, joined per reply (a reply's deltas come before its completion)."""
    out: list[str] = []
    current: list[str] = []
    for event in events:
        if event.type == ev.REASONING_DELTA:
            current.append(event.data["delta"])
        elif event.type == ev.REPLY_COMPLETED:
            out.append("".join(current))
            current = []
    return out


def _no_reasoning_sent(requests: list[dict[str, Any]]) -> None:
    for body in requests:
        for message in body["messages"]:
            assert not {"reasoning_content", "reasoning"} & set(message), message
            assert THINK_1 not in str(message.get("content")), message


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_streamed_reasoning_becomes_deltas_and_the_whole_on_reply_completed(field: str) -> None:
    async with ScriptedOpenAIServer(_script(reasoning_field=field)) as srv:
        agent, events = _agent(srv.client(), stream=True)
        result = await agent.run({"messages": [human("What is 6 * 7?")]})
    assert result.status == "success" and result.final_answer == "It is 42."
    assert all(body.get("stream") for body in srv.requests)
    assert _by_reply(events) == [THINK_1, THINK_2]
    assert len([e for e in events if e.type == ev.REASONING_DELTA]) > 2  # word by word, not whole
    completed = [e.data["reasoning"] for e in events if e.type == ev.REPLY_COMPLETED]
    assert completed == [THINK_1, THINK_2]
    text = "".join(e.data["delta"] for e in events if e.type == ev.TEXT_DELTA)
    assert THINK_1 not in text and THINK_2 not in text  # reasoning never mixes into the answer's text
    assert [m.reasoning_content for m in result.state.messages if m.role == "assistant"] == [THINK_1, THINK_2]
    _no_reasoning_sent(srv.requests)
    assert len(srv.requests) == 2 and any(m["role"] == "tool" for m in srv.requests[1]["messages"])


async def test_a_reply_not_streamed_has_its_reasoning_whole_and_no_deltas() -> None:
    async with ScriptedOpenAIServer(_script()) as srv:
        agent, events = _agent(srv.client(), stream=False)
        result = await agent.run({"messages": [human("What is 6 * 7?")]})
    assert result.final_answer == "It is 42."
    assert not [e for e in events if e.type == ev.REASONING_DELTA]
    assert [e.data["reasoning"] for e in events if e.type == ev.REPLY_COMPLETED] == [THINK_1, THINK_2]
    _no_reasoning_sent(srv.requests)


async def test_the_json_protocol_streams_the_reasoning_but_not_its_protocol_text() -> None:
    script = [
        reply('{"tool": "calculator", "arguments": {"expression": "6 * 7"}}', reasoning_content=THINK_1),
        reply('{"answer": "It is 42."}', reasoning_content=THINK_2),
    ]
    async with ScriptedOpenAIServer(script) as srv:
        agent, events = _agent(srv.client(), stream=True, protocol="json")
        result = await agent.run({"messages": [human("What is 6 * 7?")]})
    assert result.final_answer == "It is 42."
    assert _by_reply(events) == [THINK_1, THINK_2]
    text = "".join(e.data["delta"] for e in events if e.type == ev.TEXT_DELTA)
    assert '"tool"' not in text and text == "It is 42."  # the answer once parsed, no JSON
    _no_reasoning_sent(srv.requests)


async def test_an_attempt_cut_off_mid_stream_voids_its_reasoning() -> None:
    script = [
        fault_reply("truncated_stream", content=None, reasoning_content="a first try that is lost"),
        reply("It is 42.", reasoning_content=THINK_2),
    ]
    async with ScriptedOpenAIServer(script) as srv:
        agent, events = _agent(srv.client(max_retries=1), stream=True)
        result = await agent.run({"messages": [human("What is 6 * 7?")]})
    assert result.final_answer == "It is 42."
    [reset] = [e for e in events if e.type == ev.TEXT_RESET]
    assert (
        reset.data["reasoning_discarded"] == len("a first try that is lost") and reset.data["discarded"] == 0
    )
    # what a client shows: the SSE mapping withdraws the lost reasoning before the retry's
    mapper = ChannelMapper()
    shown: list[str] = []
    for event in events:
        for channel, data in mapper.map(event):
            if channel == "reasoning":
                shown = [] if data["status"] == "reset" else [*shown, data["content"]]
    assert "".join(shown) == THINK_2


async def test_the_in_process_scripted_model_streams_reasoning_too() -> None:
    agent, events = _agent(scripted_client(_script()), stream=True)
    result = await agent.run({"messages": [human("What is 6 * 7?")]})
    assert result.final_answer == "It is 42."
    assert _by_reply(events) == [THINK_1, THINK_2]


async def test_a_reply_without_reasoning_emits_no_reasoning_events() -> None:
    async with ScriptedOpenAIServer([call("calculator", expression="1 + 1"), "2"]) as srv:
        agent, events = _agent(srv.client(), stream=True)
        await agent.run({"messages": [human("1 + 1?")]})
    assert not [e for e in events if e.type == ev.REASONING_DELTA]
    assert [e.data["reasoning"] for e in events if e.type == ev.REPLY_COMPLETED] == [None, None]
