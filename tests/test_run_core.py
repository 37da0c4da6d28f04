"""One run core behind `Agent` and `Conversation` (issue 20 item 5): the same agent file under
both takes the same input, refuses the same bad input with the same words, and answers the same;
neither serves two runs at once; the edges use the `AgentLike` protocol both satisfy."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path
from typing import Any

import pytest

from jianmu_like import (
    Agent,
    AgentTemplate,
    CheckpointError,
    Conversation,
    ConversationError,
    InputError,
    create_react_node,
    human,
)
from jianmu_like._run.protocol import AgentLike
from jianmu_like.agentfile._loader import load_agent
from jianmu_like.checkpoint import MemoryCheckpointer
from jianmu_like.cli._serve import agent_factory
from jianmu_like.testing import ScriptedOpenAIServer, reply

TREE = """\
kind: tree
output: write
inputs: [topic]
tree:
  sequence:
    children:
      - react: {name: Planner, namespace: plan, input: "Plan {task} about {topic}"}
      - react: {name: Writer, namespace: write, input: "Write from {plan.final_answer}"}
"""

KEYS = (
    "task", "messages", "topic", "tsk", "plan", "plan.messages", "write.messages",
    "nowhere.messages", "final_answer", "plan.final_answer", "write.topic",
)  # fmt: skip
"""Input keys a caller might send: read ones, declared ones, misspelt and misplaced ones."""

BAD_INPUTS: tuple[dict[str, Any], ...] = (
    {"tsk": "x"},
    {"plan": {"messages": []}},
    {"nowhere.messages": []},
    {"task": "x", "topc": "y"},
)


def tree_file(tmp_path: Path) -> Path:
    path = tmp_path / "tree.yaml"
    path.write_text(TREE)
    return path


def both(path: Path, client: Any) -> tuple[Agent, Conversation]:
    """The agent of the file, and a conversation of a template made from the same file."""
    agent = load_agent(path, model_client=client)
    template = AgentTemplate.from_agent(load_agent(path, model_client=client), log_events=False)
    return agent, template.conversation("c")


def test_the_same_file_accepts_the_same_keys_under_both(tmp_path: Path) -> None:
    with ScriptedOpenAIServer([]) as srv:
        agent, conversation = both(tree_file(tmp_path), srv.client())
        answers = {key: agent.accepts(key) for key in KEYS}
        assert answers == {key: conversation.accepts(key) for key in KEYS}
    # what the issue found: the declared input was refused by the Conversation only
    assert answers["topic"] and answers["task"] and answers["plan.messages"]
    assert not answers["tsk"] and not answers["nowhere.messages"] and not answers["plan"]


async def test_the_same_bad_input_is_the_same_error_under_both_and_changes_nothing(tmp_path: Path) -> None:
    with ScriptedOpenAIServer([]) as srv:
        agent, conversation = both(tree_file(tmp_path), srv.client())
        pool = conversation.template
        idle = pool.idle
        for bad in BAD_INPUTS:
            with pytest.raises(InputError) as from_agent:
                await agent.run(bad)
            with pytest.raises(InputError) as from_conversation:
                await conversation.run(bad)
            assert str(from_agent.value) == str(from_conversation.value)
        assert srv.requests == []  # refused before anything ran
    assert pool.idle == idle  # no tree was borrowed for bad input
    assert agent.state.model_dump() == conversation.state.model_dump()


async def test_the_same_file_answers_the_same_under_both(tmp_path: Path) -> None:
    script = [reply("1. outline"), reply("The essay.")]
    results = []
    for under in ("agent", "conversation"):
        with ScriptedOpenAIServer(list(script)) as srv:
            agent, conversation = both(tree_file(tmp_path), srv.client())
            runner: AgentLike = agent if under == "agent" else conversation
            result = await runner.run({"task": "an essay", "topic": "trees"})
            prompts = [r["messages"][-1]["content"] for r in srv.requests]
        results.append((result.status, result.final_answer, result.usage, prompts))
    assert results[0] == results[1]
    assert results[0][1] == "The essay." and results[0][3][0] == "Plan an essay about trees"


def test_serve_gives_the_file_the_same_input_rules_with_and_without_a_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`jianmu-like serve` builds Conversations without `--checkpoint` and Agents with it. (Its
    model a server, as `serve`'s is: without one it would be the embedded model, which the test
    command does not install.)"""
    path = tree_file(tmp_path)
    with ScriptedOpenAIServer([]) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "none")
        in_memory, _, _ = agent_factory(str(path))
        stored, cleanups, _ = agent_factory(str(path), checkpoint=str(tmp_path / "runs.db"))
        try:
            conversation, agent = in_memory(), stored()
            assert isinstance(conversation, Conversation) and isinstance(agent, Agent)
            assert {k: conversation.accepts(k) for k in KEYS} == {k: agent.accepts(k) for k in KEYS}
            assert conversation.accepts("topic")
        finally:
            for cleanup in cleanups:
                asyncio.run(cleanup())


def test_a_conversation_is_no_agent_and_both_are_agent_like(tmp_path: Path) -> None:
    with ScriptedOpenAIServer([]) as srv:
        agent, conversation = both(tree_file(tmp_path), srv.client())
    assert not isinstance(conversation, Agent)
    assert isinstance(agent, AgentLike) and isinstance(conversation, AgentLike)
    # what the edges read without probing: the tree's shape, the runner in hand, the store
    assert conversation.tree is conversation.template.prototype and agent.tree is agent.root
    assert conversation.runner is None and agent.runner is not None
    assert conversation.checkpointer is None and agent.checkpointer is None
    assert conversation.inputs == agent.inputs and "topic" in agent.inputs


async def test_an_agent_serves_one_run_at_a_time() -> None:
    """A second run while one is in progress used to tick the same tree as the first, and the
    first reported a bogus "suspended": now it is refused, and the first run's answer stands."""
    with ScriptedOpenAIServer([reply("first"), reply("third")]) as srv:
        agent = Agent(create_react_node(model_client=srv.client()), log_events=False)
        started = asyncio.Event()
        agent.telemetry.subscribe(lambda e: started.set() if e.type == "run.started" else None)
        first = asyncio.create_task(agent.run({"messages": [human("one")]}))
        await asyncio.wait_for(started.wait(), timeout=60)
        with pytest.raises(ConversationError, match="this agent is already running"):
            await agent.run({"messages": [human("two")]})
        with pytest.raises(ConversationError, match="already running"):
            await agent.resume()
        result = await first
        assert (result.status, result.final_answer) == ("success", "first")
        again = await agent.run({"messages": [human("three")]})  # the refusals left no claim behind
        assert again.final_answer == "third"
        assert [r["messages"][-1]["content"] for r in srv.requests] == ["one", "three"]


async def test_a_refused_run_leaves_a_conversation_free() -> None:
    with ScriptedOpenAIServer([reply("fine")]) as srv:
        template = AgentTemplate(lambda: create_react_node(model_client=srv.client()), log_events=False)
        conversation = template.conversation()
        with pytest.raises(InputError):
            await conversation.run({"nope": 1})
        with pytest.raises(RuntimeError, match="nothing to resume"):
            await conversation.resume()
        assert template.idle == 1 and not conversation.suspended
        result = await conversation.run({"messages": [human("hi")]})
    assert result.final_answer == "fine" and template.idle == 1


async def test_a_run_refused_inside_the_core_frees_both_for_the_next() -> None:
    """A refusal after the tree was taken (a fork without a store) hands it back: the next run
    is not told "already running", and a conversation's tree is back in the pool."""
    with ScriptedOpenAIServer([reply("agent"), reply("conversation")]) as srv:
        agent = Agent(create_react_node(model_client=srv.client()), log_events=False)
        template = AgentTemplate(lambda: create_react_node(model_client=srv.client()), log_events=False)
        conversation = template.conversation("c")
        for runner in (agent, conversation):
            with pytest.raises(CheckpointError, match="needs a checkpointer"):
                await runner.run({"messages": [human("hi")]}, from_checkpoint=1)
        with pytest.raises(ConversationError, match="no checkpointer"):
            await conversation.run({"messages": [human("hi")]}, checkpointer=MemoryCheckpointer())
        with pytest.raises(ConversationError, match="resumes its own suspended run"):
            await conversation.resume(thread_id="c")
        assert template.idle == 1
        assert (await agent.run({"messages": [human("a")]})).final_answer == "agent"
        assert (await conversation.run({"messages": [human("c")]})).final_answer == "conversation"


def test_an_agent_dropped_outside_a_loop_is_freed_at_once_with_its_sync_loop() -> None:
    """`run_sync` keeps an event loop per agent, closed when the agent goes. An agent in a
    reference cycle would go only at some later garbage collection, perhaps inside another
    event loop, where closing its loop fails ("another loop is running")."""
    with ScriptedOpenAIServer([reply("hi")]) as srv:
        agent = Agent(create_react_node(model_client=srv.client()), log_events=False)
        assert agent.run_sync({"messages": [human("hi")]}).final_answer == "hi"
        loop = agent._core._sync_runner.get_loop()  # type: ignore[union-attr]
        gc.disable()
        try:
            del agent
            assert loop.is_closed()
        finally:
            gc.enable()
