"""The tool listings of the system prompt are cached per tool and per tool set, and a change of
the set (a provider's refresh, a derived set) shows in the next prompt."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jianmu_like import Agent, ReActConfig, Tool, ToolSet, create_react_node, human
from jianmu_like.testing import ScriptedOpenAIServer, reply
from jianmu_like.tools._describe import describe_tool


def _tool(name: str, description: str) -> Tool:
    def fn(text: str) -> str:
        return text

    return Tool.from_function(fn, name=name, description=description)


class ChangingProvider:
    """A provider whose listing the test changes between runs (like an MCP server)."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.tools = list(tools)

    async def initialize(self) -> None:
        pass

    async def get_tools(self, **kwargs: Any) -> Sequence[Tool]:
        return list(self.tools)

    async def close(self) -> None:
        pass


def test_a_listing_is_rendered_once_per_tool_and_per_set() -> None:
    echo = _tool("echo", "Repeat the text.")
    assert describe_tool(echo) is describe_tool(echo)
    assert describe_tool(echo) == "echo: Repeat the text.\n  - text (string, required)"
    other = echo.model_copy(update={"description": "Say it again."})
    assert describe_tool(other) == "echo: Say it again.\n  - text (string, required)"
    ts = ToolSet([echo])
    assert ts.describe() is ts.describe()
    derived = ts.with_tools([_tool("shout", "Upper-case the text.")])
    assert "shout: Upper-case the text." in derived.describe()
    assert "shout" not in ts.describe()


async def test_a_refresh_invalidates_the_cached_listing() -> None:
    provider = ChangingProvider([_tool("a", "First.")])
    ts = ToolSet.from_providers([provider])
    await ts.ensure_ready()
    before = ts.describe()
    provider.tools.append(_tool("b", "Second."))
    assert ts.describe() is before  # listed once: the set has not asked again
    await ts.refresh()
    assert (
        ts.describe() == "a: First.\n  - text (string, required)\n\nb: Second.\n  - text (string, required)"
    )


async def test_a_tool_added_after_a_run_is_in_the_next_runs_prompt() -> None:
    provider = ChangingProvider([_tool("alpha", "The first tool.")])
    async with ScriptedOpenAIServer([reply("one"), reply("two")]) as srv:
        root = create_react_node(
            model_client=srv.client(), tool_providers=[provider], config=ReActConfig(stream=False)
        )
        agent = Agent(root)
        assert (await agent.run({"messages": [human("q1")]})).final_answer == "one"
        provider.tools.append(_tool("beta", "The second tool."))
        for toolset in agent.toolsets():
            await toolset.refresh()
        assert (await agent.run({"messages": [human("q2")]})).final_answer == "two"
        await agent.aclose()
    first, second = (request["messages"][0]["content"] for request in srv.requests)
    assert "alpha: The first tool." in first and "beta" not in first
    assert "alpha: The first tool." in second and "beta: The second tool." in second
    assert [t["function"]["name"] for t in srv.requests[1]["tools"]] == ["alpha", "beta"]
