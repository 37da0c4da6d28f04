"""`inject` into conversations of an AgentTemplate over real HTTP: each run of a pooled tree
binds the tree's interrupt points to the conversation running it (found once per tree)."""

from __future__ import annotations

import asyncio

from jianmu_like import AgentTemplate, ReActConfig, create_react_node, human, tool
from jianmu_like.testing import ScriptedOpenAIServer, call, calls, reply

started: asyncio.Event
release: asyncio.Event


@tool
async def hold(label: str) -> str:
    """Wait until the test releases it.

    Args:
        label: A label.
    """
    started.set()
    await release.wait()
    return f"{label} released"


async def test_each_conversation_on_a_pooled_tree_takes_its_own_follow_ups() -> None:
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
            await started.wait()
            conversation.inject(text)
            release.set()
            result = await run
            answers.append(result.final_answer)
            contents = [m.content for m in result.state.messages]
            assert f"[USER INTERRUPT] {text}" in contents
            assert not any("follow-up" in (c or "") for c in contents if c != f"[USER INTERRUPT] {text}")
        assert template.trees_built == 1  # both runs borrowed the same tree
    assert answers == ["first", "second"]
