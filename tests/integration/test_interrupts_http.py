"""`Agent.inject` over real HTTP (real `openai` client, the scripted server): follow-ups land
after the tool results, merge into one message, and hold back a final answer."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from jianmu_like import Agent, AgentTemplate, ReActConfig, create_react_node, human, load_agent, tool
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import ScriptedOpenAIServer, await_within, call, calls, reply

started: asyncio.Event
release: asyncio.Event
"""Made by the test that uses them (an event belongs to the loop that first waits on it)."""


@tool
async def hold(label: str) -> str:
    """Wait until the test releases it.

    Args:
        label: A label.
    """
    started.set()
    await release.wait()
    return f"{label} released"


@tool
def echo(text: str) -> str:
    """Echo a text.

    Args:
        text: Anything.
    """
    return text


def _agent(srv: ScriptedOpenAIServer, **config: Any) -> tuple[Agent, list[Event]]:
    settings: dict[str, Any] = {"max_iterations": 5, "stream": False, **config}
    root = create_react_node(model_client=srv.client(), tools=[hold, echo], config=ReActConfig(**settings))
    agent = Agent(root)
    events: list[Event] = []
    agent.telemetry.subscribe(events.append)
    return agent, events


def _injects(events: list[Event]) -> list[tuple[str, str]]:
    return [(e.data["status"], e.data["content"]) for e in events if e.type == "inject"]


async def test_follow_ups_injected_mid_batch_land_after_the_tool_results_as_one_message() -> None:
    global started, release
    started, release = asyncio.Event(), asyncio.Event()
    script = [calls(call("echo", text="a"), call("hold", label="h")), reply("done")]
    async with ScriptedOpenAIServer(script) as srv:
        agent, events = _agent(srv)
        run = asyncio.create_task(agent.run({"messages": [human("go")]}))
        await await_within(started.wait(), "hold to start")  # the batch is under way: echo finished
        agent.inject("also check B")
        agent.inject("and C")
        release.set()
        result = await run
    assert result.status == "success" and result.final_answer == "done"
    second = srv.requests[1]["messages"]
    assert [m["role"] for m in second[1:]] == ["user", "assistant", "tool", "tool", "user"]
    assert second[-1]["content"] == "[USER INTERRUPT] also check B\n\nand C"
    assert _injects(events) == [
        ("queued", "also check B"),
        ("queued", "and C"),
        ("applied", "[USER INTERRUPT] also check B\n\nand C"),
    ]
    applied = next(e for e in events if e.type == "inject" and e.data["status"] == "applied")
    assert applied.data["count"] == 2 and applied.data["held_back_answer"] is False


async def test_a_final_answer_of_the_iteration_an_inject_arrived_in_is_held_back() -> None:
    agent: Agent | None = None

    def responder(body: dict[str, Any]) -> Any:
        last = body["messages"][-1]["content"]
        if last == "what is X?":
            assert agent is not None
            agent.inject("and Y?")  # from the server's thread, while the model "thinks"
            return reply("X is 1.")
        return reply(f"Y is 2 (after: {last})")

    async with ScriptedOpenAIServer(responder) as srv:
        agent, events = _agent(srv)
        result = await agent.run({"messages": [human("what is X?")]})
    assert result.status == "success"
    assert result.final_answer == "Y is 2 (after: [USER INTERRUPT] and Y?)"
    second = srv.requests[1]["messages"]
    assert [(m["role"], m["content"]) for m in second[-2:]] == [
        ("assistant", "X is 1."),
        ("user", "[USER INTERRUPT] and Y?"),
    ]
    applied = next(e for e in events if e.type == "inject" and e.data["status"] == "applied")
    assert applied.data["held_back_answer"] is True
    assert result.termination == {"reason": "completed", "iterations": 2}


async def test_a_follow_up_arriving_in_the_last_iteration_is_dropped_and_the_answer_stands() -> None:
    agent: Agent | None = None

    def responder(body: dict[str, Any]) -> Any:
        assert agent is not None
        agent.inject("too late")
        return reply("X is 1.")

    async with ScriptedOpenAIServer(responder) as srv:
        agent, events = _agent(srv, max_iterations=1)
        result = await agent.run({"messages": [human("what is X?")]})
    assert result.final_answer == "X is 1." and len(srv.requests) == 1
    assert _injects(events) == [("queued", "too late"), ("dropped", "too late")]
    assert agent.interrupts.contents() == []


async def test_inject_without_a_run_in_progress_is_a_clear_error() -> None:
    async with ScriptedOpenAIServer([reply("hi")]) as srv:
        agent, _ = _agent(srv)
        with pytest.raises(RuntimeError, match="no run in progress"):
            agent.inject("hello?")
        await agent.run({"messages": [human("hi")]})
        with pytest.raises(RuntimeError, match="no run in progress"):
            agent.inject("hello again?")
        with pytest.raises(ValueError, match="non-empty"):
            agent.inject("  ")


async def test_an_agent_from_yaml_takes_follow_ups(tmp_path: Path) -> None:
    agent: Agent | None = None

    def responder(body: dict[str, Any]) -> Any:
        last = body["messages"][-1]["content"]
        if last == "first":
            assert agent is not None
            agent.inject("second")
            return reply("answer one")
        return reply(f"answer to {last}")

    path = tmp_path / "agent.yaml"
    path.write_text("kind: react\nname: Helper\nmodel: scripted-model\n")
    async with ScriptedOpenAIServer(responder) as srv:
        agent = load_agent(path, model_client=srv.client())
        result = await agent.run({"messages": [human("first")]})
    assert result.final_answer == "answer to [USER INTERRUPT] second"


async def test_each_conversation_on_a_pooled_tree_takes_its_own_follow_ups() -> None:
    """Each run of a pooled tree binds the tree's interrupt points to its conversation."""
    global started, release
    script = [calls(call("hold", label="1")), reply("first"), calls(call("hold", label="2")), reply("second")]
    async with ScriptedOpenAIServer(script) as srv:
        root = create_react_node(
            model_client=srv.client(), tools=[hold], config=ReActConfig(max_iterations=4, stream=False)
        )
        template = AgentTemplate.from_prototype(root, log_events=False)
        template.reserve(1)
        answers = []
        for text in ("follow-up one", "follow-up two"):
            started, release = asyncio.Event(), asyncio.Event()
            conversation = template.conversation()
            run = asyncio.create_task(conversation.run({"messages": [human("go")]}))
            await await_within(started.wait(), "hold to start")
            conversation.inject(text)
            release.set()
            result = await run
            answers.append(result.final_answer)
            contents = [m.content for m in result.state.messages]
            assert f"[USER INTERRUPT] {text}" in contents
            assert not any("follow-up" in (c or "") for c in contents if c != f"[USER INTERRUPT] {text}")
        assert template.trees_built == 1  # both runs borrowed the same tree
    assert answers == ["first", "second"]


def _injecting_responder(agent: list[Agent], then: Any) -> Any:
    """Asked the question, the model sends a follow-up (as a user would meanwhile) and calls
    echo; every later request is answered by `then(body)`."""

    def responder(body: dict[str, Any]) -> Any:
        last = body["messages"][-1]
        if last["role"] == "user" and last["content"] == "what is X?":
            agent[0].inject("and Y?")
            return call("echo", text="X=1")
        return then(body)

    return responder


async def test_the_trace_spans_the_run_across_a_follow_up_for_synthesis() -> None:
    agent: list[Agent] = []

    def then(body: dict[str, Any]) -> Any:
        return reply("synthesised" if "tools" not in body else "X is 1; Y I do not know.")

    async with ScriptedOpenAIServer(_injecting_responder(agent, then)) as srv:
        root = create_react_node(
            model_client=srv.client(), tools=[echo], config=ReActConfig(synthesize=True, stream=False)
        )
        agent.append(Agent(root))
        result = await agent[0].run({"messages": [human("what is X?")]})
    assert result.status == "success" and result.final_answer == "synthesised"
    prompt = srv.requests[-1]["messages"][1]["content"]
    # the original question and the tool result from before the follow-up stay in the trace
    assert prompt.startswith("Question:\nwhat is X?\n\nFollow-ups the user sent during the work:\n- and Y?")
    assert '1. echo({"text": "X=1"}) -> X=1' in prompt
    assert "Draft answer:\nX is 1; Y I do not know." in prompt


async def test_the_fallback_answer_counts_the_tools_run_before_a_follow_up() -> None:
    agent: list[Agent] = []
    async with ScriptedOpenAIServer(
        _injecting_responder(agent, lambda body: call("echo", text="Y=?"))
    ) as srv:
        agent.append(_agent(srv, max_iterations=2)[0])
        result = await agent[0].run({"messages": [human("what is X?")]})
    assert result.status == "failure" and result.termination["reason"] == "max_iterations"
    assert result.fallback_answer is not None
    assert "Tools run (2)" in result.fallback_answer
    assert '"X=1"' in result.fallback_answer and '"Y=?"' in result.fallback_answer
