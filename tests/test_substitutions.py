"""Substitution without code: a rule forces a node's result (the node is not ticked) or scripts a
tool's output (the tool is not called), in Python and in an agent file; a rule naming a node or
a tool the tree lacks is refused; every substitution is published as a `debug.substituted` event,
and a recording keeps the scripted output, so a replay of it answers the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jianmu_like import Agent, ReActConfig, create_react_node, human, tool
from jianmu_like._run.breakpoints import marked
from jianmu_like.telemetry.events import AnyEvent
from jianmu_like.testing import call, reply, scripted_client

ran: list[dict[str, int]] = []
asked: list[list[str]] = []


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    ran.append({"a": a, "b": b})
    return a + b


def responder(body: dict[str, Any]) -> Any:
    asked.append([m["role"] for m in body["messages"]])
    last = body["messages"][-1]
    if last["role"] == "tool":
        return reply(f"result {last['content']}")
    return call("add", a=41, b=1)


def agent(**kwargs: Any) -> Agent:
    root = create_react_node(
        model_client=scripted_client(responder), tools=[add], config=ReActConfig(max_iterations=3)
    )
    return Agent(root, log_events=False, **kwargs)


def watch(bot: Agent) -> list[AnyEvent]:
    seen: list[AnyEvent] = []
    bot.telemetry.subscribe(seen.append)
    return seen


@pytest.fixture(autouse=True)
def fresh() -> None:
    ran.clear()
    asked.clear()


async def test_a_tool_output_is_scripted_only_for_matching_arguments() -> None:
    bot = agent()
    seen = watch(bot)
    bot.substitutions.set([{"tool": "add", "arguments": {"a": 41}, "output": "1000"}])
    result = await bot.run(input_data={"messages": [human("add")]})
    assert result.status == "success" and result.final_answer == "result 1000"
    assert ran == []  # the tool was never called
    [event] = [e for e in seen if e.type == "debug.substituted"]
    assert event.data == {"target": "tool", "name": "add", "output": "1000", "arguments": {"a": 41, "b": 1}}
    assert event.node == "ReActAgent/ReActAgent.Loop/ReActAgent.Tools"  # the calling node's event

    # Arguments that do not match: the real tool answers.
    bot.substitutions.set([{"tool": "add", "arguments": {"a": 7}, "output": "1000"}])
    result = await bot.run(input_data={"messages": [human("add")]})
    assert result.final_answer == "result 42" and ran == [{"a": 41, "b": 1}]


async def test_a_forced_node_is_not_ticked() -> None:
    bot = agent()
    seen = watch(bot)
    # The tool node "succeeds" without running: the Done gate then finds no tool message and
    # the loop goes round again, so the model is asked twice and the tool never runs.
    bot.substitutions.set([{"node": "ReActAgent.Tools", "status": "success"}])
    result = await bot.run(input_data={"messages": [human("add")]})
    assert ran == []
    assert len(asked) >= 2
    forced = [e for e in seen if e.type == "debug.substituted"]
    assert forced and forced[0].data == {
        "target": "node",
        "name": "ReActAgent/ReActAgent.Loop/ReActAgent.Tools",
        "status": "SUCCESS",
    }
    assert result.status in ("success", "failure")

    # The whole loop forced to FAILURE: nothing under it ticks, the model is never asked.
    asked.clear()
    bot.substitutions.set([{"node": "0", "status": "FAILURE"}])
    result = await bot.run(input_data={"messages": [human("add")]})
    assert result.status == "failure" and asked == [] and ran == []

    # Rules cleared: the tree ticks as before, its nodes unwatched.
    bot.substitutions.set([])
    result = await bot.run(input_data={"messages": [human("add")]})
    assert result.final_answer == "result 42"
    assert all(not hasattr(type(n), "_jianmu_watched") for n in bot.tree.iterate())


async def test_a_model_reply_is_scripted_without_asking_the_model() -> None:
    bot = agent()
    seen = watch(bot)
    bot.substitutions.set([{"node": "ReActAgent.LLM", "reply": "scripted answer"}])
    result = await bot.run(input_data={"messages": [human("add")]})
    assert result.status == "success" and result.final_answer == "scripted answer"
    assert asked == [] and ran == []
    [event] = [e for e in seen if e.type == "debug.substituted"]
    assert event.node == "ReActAgent/ReActAgent.Loop/ReActAgent.LLM"
    assert event.data == {
        "target": "model",
        "name": "ReActAgent/ReActAgent.Loop/ReActAgent.LLM",
        "output": "scripted answer",
        "tool_calls": None,
    }

    # Tool calls scripted: the real tool runs them, the model is never asked (the loop ends at
    # its iteration limit, as a model that always calls a tool would make it).
    reply_calls = {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}
    bot.substitutions.set([{"node": "0.0.0", "reply": reply_calls}])
    result = await bot.run(input_data={"messages": [human("add")]})
    assert asked == [] and ran == [{"a": 2, "b": 3}] * 3
    assert result.status == "failure" and result.termination["reason"] == "max_iterations"


def test_bad_rules_are_refused() -> None:
    bot = agent()
    for bad, message in (
        ({"node": "Nope", "status": "SUCCESS"}, "no node 'Nope'"),
        ({"tool": "mul", "output": "1"}, r"no tool 'mul' in the tree \(tools: add\)"),
        ({"node": "0", "status": "RUNNING"}, "SUCCESS"),
        ({"node": "0"}, "exactly one of status"),
        ({"tool": "add"}, "needs output"),
        ({"tool": "add", "status": "SUCCESS", "output": "x"}, "status= and reply= belong"),
        ({"node": "0", "tool": "add", "status": "SUCCESS"}, "exactly one"),
        ({"node": "ReActAgent.LLM", "reply": "hi", "status": "SUCCESS"}, "exactly one of status"),
        ({"node": "ReActAgent.Tools", "reply": "hi"}, "not a model node"),
        ({"node": "ReActAgent.LLM", "reply": {}}, "content, tool_calls, or both"),
        ({"tool": "add", "output": "1", "reply": "hi"}, "reply= belong"),
        ({"tool": "add", "ouptut": "1"}, "ouptut"),
    ):
        with pytest.raises(ValueError, match=message):
            bot.substitutions.set([{"tool": "add", "output": "1"}, bad])
        assert bot.substitutions.items == []


async def test_a_recording_keeps_the_scripted_output_and_replays_it(tmp_path: Path) -> None:
    from jianmu_like.replay import areplay

    path = tmp_path / "run.jsonl"
    bot = agent(record=path)
    bot.substitutions.set([{"tool": "add", "output": "7"}])
    result = await bot.run(input_data={"messages": [human("add")]})
    assert result.final_answer == "result 7" and ran == []
    text = path.read_text()
    assert '"debug.substituted"' in text and '"output":"7"' in text

    replayed = await areplay(path, agent=agent())  # the recording answers: 7 again, no call
    assert replayed.final_answer == "result 7" and ran == []

    # A replay that goes live at once, under a rule of its own: the rule answers the tool.
    again = agent()
    again.substitutions.set([{"tool": "add", "output": "9"}])
    replayed = await areplay(path, agent=again, live=True, until=0)
    assert replayed.final_answer == "result 9" and ran == []


async def test_a_scripted_reply_replays_from_its_recording(tmp_path: Path) -> None:
    from jianmu_like.replay import areplay

    path = tmp_path / "run.jsonl"
    bot = agent(record=path)
    bot.substitutions.set([{"node": "ReActAgent.LLM", "reply": "scripted answer"}])
    result = await bot.run(input_data={"messages": [human("add")]})
    assert result.final_answer == "scripted answer" and asked == []
    replayed = await areplay(path, agent=agent())  # the recorded rule answers again
    assert replayed.final_answer == "scripted answer" and asked == []


def test_substitutions_in_an_agent_file(tmp_path: Path) -> None:
    from jianmu_like import load_agent
    from jianmu_like.errors import JianmuError

    path = tmp_path / "agent.yaml"
    path.write_text(
        "kind: react\nmodel: m\ntools: [calculator]\n"
        "substitutions:\n  - tool: calculator\n    output: '4'\n"
        "  - node: ReActAgent.Done\n    status: FAILURE\n"
    )
    loaded = load_agent(path, model_client=scripted_client(responder))
    assert [s.model_dump(exclude_none=True) for s in loaded.substitutions.items] == [
        {"tool": "calculator", "output": "4"},
        {"node": "ReActAgent.Done", "status": "FAILURE"},
    ]
    path.write_text(
        "kind: react\nmodel: m\ntools: [calculator]\n"
        "substitutions:\n  - tool: calculator\n    output: '4'\n"
        "  - node: ReActAgent.Gone\n    status: FAILURE\n"
    )
    with pytest.raises(JianmuError, match=r"agent.yaml:7: substitutions.1: no node 'ReActAgent.Gone'"):
        load_agent(path, model_client=scripted_client(responder))
    path.write_text("kind: react\nmodel: m\nsubstitutions:\n  - node: ReActAgent.Done\n    status: RUNNING\n")
    with pytest.raises(JianmuError, match=r"agent.yaml:5"):
        load_agent(path, model_client=scripted_client(responder))


async def test_a_run_after_the_rules_are_cleared_unmarks_every_node() -> None:
    # A run with no rule walks no tree while no live node is marked (a gate, a forced result, a
    # watched class): so the first run after the rules are cleared must unmark every node.
    bot = agent()
    bot.substitutions.set([{"node": "ReActAgent.Tools", "status": "success"}])
    bot.breakpoints.set([{"node": "ReActAgent.Done"}])
    result = await bot.run(input_data={"messages": [human("add")]})
    assert result.status == "suspended" and all(marked(n) for n in bot.tree.iterate())
    bot.breakpoints.set([])
    result = await bot.resume(decisions={result.pending_approvals[0].id: True})
    assert result.status != "suspended"
    bot.substitutions.set([])
    result = await bot.run(input_data={"messages": [human("add")]})
    assert result.final_answer == "result 42"
    assert not any(marked(n) or hasattr(type(n), "_jianmu_watched") for n in bot.tree.iterate())
