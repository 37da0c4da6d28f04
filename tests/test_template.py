"""AgentTemplate / Conversation: one built tree, many independent concurrent conversations."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from jianmu_like import AgentTemplate, Conversation, ConversationError, create_react_node, human, tool
from jianmu_like.bt import AsyncBehaviour, LoopUntilSuccess
from jianmu_like.guard import GuardEnforcer, RequireApproval
from jianmu_like.models._client import ModelClient
from jianmu_like.testing import call, reply, scripted_client

ran: list[str] = []


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    await asyncio.sleep(0.001)  # suspends: runs interleave inside tool calls too
    return a + b


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    ran.append(path)
    return f"deleted {path}"


def responder(body: dict[str, Any]) -> Any:
    """`add N` -> add(a=N, b=1), then the answer quoting the tool's result; `delete P` likewise."""
    messages = body["messages"]
    question = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    last = messages[-1]
    if last["role"] == "tool":
        return reply(f"result {last['content']}")
    verb, arg = question.split()
    if verb == "add":
        return call("add", a=int(arg), b=1)
    return call("delete_file", path=arg)


def model(latency: float = 0.002) -> ModelClient:
    return scripted_client(responder, latency=latency)


def template(**options: Any) -> AgentTemplate:
    guard = GuardEnforcer([RequireApproval(tools="delete_file")])
    root = create_react_node(model_client=model(), tools=[add, delete_file], constraints=guard)
    return AgentTemplate.from_prototype(root, log_events=False, **options)


async def test_concurrent_conversations_get_their_own_answers_and_state() -> None:
    tpl = template()
    conversations = [tpl.conversation(f"t{i}") for i in range(25)]
    results = await asyncio.gather(
        *(c.run({"messages": [human(f"add {i}")]}) for i, c in enumerate(conversations))
    )
    for i, (conversation, result) in enumerate(zip(conversations, results, strict=True)):
        assert result.status == "success", result.error
        assert result.final_answer == f"result {i + 1}"
        assert result.thread_id == f"t{i}"
        assert [m.role for m in result.state.messages] == ["user", "assistant", "tool", "assistant"]
        assert result.state.messages[0].content == f"add {i}"
        assert conversation.state.messages == result.state.messages
    # One tree per concurrent run, all back in the pool afterwards.
    assert tpl.trees_built == 25 and tpl.idle == 25
    tpl.reserve(30)
    assert tpl.trees_built == 30 and tpl.idle == 30


async def test_a_conversation_continues_and_others_stay_untouched() -> None:
    tpl = template()
    first, second = tpl.conversation(), tpl.conversation()
    await first.run({"messages": [human("add 1")]})
    await second.run({"messages": [human("add 10")]})
    again = await first.run({"messages": [human("add 2")]})
    assert again.final_answer == "result 3"
    assert [m.content for m in first.state.messages if m.role == "user"] == ["add 1", "add 2"]
    assert len(first.state.messages) == 8
    assert [m.content for m in second.state.messages if m.role == "user"] == ["add 10"]
    assert again.termination == {"reason": "completed", "iterations": 2}


async def test_suspension_and_approval_while_other_conversations_run() -> None:
    ran.clear()
    tpl = template()
    janitor = tpl.conversation("janitor")
    suspended = await janitor.run({"messages": [human("delete /tmp/x")]})
    assert suspended.status == "suspended" and janitor.suspended
    [approval] = janitor.pending_approvals()
    assert approval.tool == "delete_file" and ran == []
    assert tpl.idle == tpl.trees_built  # the suspended run does not hold a tree

    others = [tpl.conversation() for _ in range(5)]
    pending = [asyncio.create_task(c.run({"messages": [human(f"add {i}")]})) for i, c in enumerate(others)]
    await asyncio.sleep(0.003)  # the others are mid-run
    janitor.approve(approval.id)
    done = await janitor.resume()
    finished = await asyncio.gather(*pending)

    assert done.status == "success" and done.final_answer == "result deleted /tmp/x"
    assert ran == ["/tmp/x"]
    assert [m.role for m in done.state.messages] == ["user", "assistant", "tool", "assistant"]
    assert [r.final_answer for r in finished] == [f"result {i + 1}" for i in range(5)]
    assert all(len(r.state.messages) == 4 for r in finished)
    assert not janitor.suspended


async def test_denied_call_becomes_an_observation() -> None:
    ran.clear()
    tpl = template()
    conversation = tpl.conversation()
    first = await conversation.run({"messages": [human("delete /etc")]})
    [approval] = first.pending_approvals
    done = await conversation.resume({approval.id: ("deny", "not that one")})
    assert done.status == "success" and ran == []
    assert "denied by a human reviewer: not that one" in done.final_answer


async def test_a_tree_returned_to_the_pool_is_reset() -> None:
    tpl = template(max_idle=1)
    conversation = tpl.conversation()
    await conversation.run({"messages": [human("add 4")]})
    [tree] = tpl._idle
    for node in tree.iterate():
        assert node.status.name == "INVALID" and node.feedback_message == ""
        assert "state_manager" not in node.__dict__ and "telemetry" not in node.__dict__
        if isinstance(node, AsyncBehaviour):
            assert not node.in_flight and node.error is None
        if isinstance(node, LoopUntilSuccess):
            assert node.iterations == 0 and node.termination is None
    # No node keeps the conversation's messages (the context guard counted them).
    held = [
        value
        for node in tree.iterate()
        for attr in ("request_transform",)
        if (value := getattr(node, attr, None)) is not None
    ]
    assert held and all(not guard._seen and guard._total == 0 for guard in held)
    # The next conversation on the recycled tree starts clean.
    result = await tpl.conversation().run({"messages": [human("add 7")]})
    assert result.termination == {"reason": "completed", "iterations": 2}
    assert len(result.state.messages) == 4


async def test_clones_share_what_the_tree_was_built_with() -> None:
    tpl = template()
    results = await asyncio.gather(
        *(tpl.conversation().run({"messages": [human("add 1")]}) for _ in range(3))
    )
    assert all(r.status == "success" for r in results)
    trees = list(tpl._idle)
    assert len(trees) == 3
    llms = [t.decorated.children[0] for t in trees]
    executors = [t.decorated.children[1] for t in trees]
    assert len({id(n) for n in llms}) == 3  # distinct nodes...
    assert len({id(n.tools) for n in llms}) == 1  # ...sharing tools, config, prompts, client
    assert len({id(n.config) for n in llms}) == 1
    assert len({id(n.context_builder) for n in llms}) == 1
    assert len({id(n.model_client) for n in llms}) == 1
    assert len({id(n.calls) for n in executors}) == 3  # each executor emits as itself
    assert all(e.calls.emit.__self__ is e for e in executors)
    assert len({id(t.abort_condition.loop) for t in trees}) == 3


async def test_factory_template_and_stream() -> None:
    client = model(latency=0.0)
    tpl = AgentTemplate(lambda: create_react_node(model_client=client, tools=[add]), log_events=False)
    conversation = tpl.conversation()
    events = [e.type async for e in conversation.stream({"messages": [human("add 2")]})]
    assert events[0] == "run.started" and events[-1] == "run.completed"
    assert "tool.call.completed" in events
    assert conversation.state.final_answer == "result 3"


async def test_a_conversation_runs_one_run_at_a_time() -> None:
    conversation: Conversation = template().conversation("c")
    first = asyncio.create_task(conversation.run({"messages": [human("add 1")]}))
    await asyncio.sleep(0)
    with pytest.raises(ConversationError, match="already running"):
        await conversation.run({"messages": [human("add 2")]})
    assert (await first).final_answer == "result 2"
    with pytest.raises(ConversationError, match="no checkpointer"):
        conversation.use_checkpointer(object())  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="nothing to resume"):
        await conversation.resume()


def test_agents_and_conversations_say_which_input_keys_they_read() -> None:
    from jianmu_like import Agent, AgentTemplate, create_react_node

    def build() -> Any:
        return create_react_node(model_client=scripted_client([reply("hi")]))

    agent = Agent(build())
    assert agent.accepts("messages") and not agent.accepts("task")
    assert not agent.accepts("elsewhere.messages")
    conversation = AgentTemplate(build).conversation()
    assert conversation.accepts("messages") and not conversation.accepts("task")
