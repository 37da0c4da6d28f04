"""A run whose MCP server (server-everything) asks a person a question, saved in a SQLite store:
the agent the restart tests build in two processes (`build`), and the process they kill while
the question waits (`python -m tests.server.question_asker STORE MODEL_URL NODE ENTRY`)."""

from __future__ import annotations

import asyncio
import sys

from jianmu_like import Agent, ModelClient, create_react_node, human
from jianmu_like.tools import MCPToolProvider

THREAD = "asked"


def build(store: str, model_url: str, node: str, entry: str) -> Agent:
    """The agent: one ReAct loop whose one MCP server asks for a name during its tool call."""
    provider = MCPToolProvider(
        name="ev",
        command=node,
        args=[entry, "stdio"],
        elicitation="ask",
        elicitation_timeout=600.0,  # nobody answers: the test kills the process meanwhile
        allow=["trigger-elicitation-request"],
    )
    client = ModelClient.resolve("scripted-model", base_url=model_url, api_key="test-key")
    return Agent(create_react_node(model_client=client, tool_providers=[provider]), checkpointer=store)


async def main(store: str, model_url: str, node: str, entry: str) -> None:
    agent = build(store, model_url, node, entry)
    await agent.run({"messages": [human("ask my name")]}, thread_id=THREAD)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
