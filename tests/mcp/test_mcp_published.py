"""A published MCP server nobody on this team wrote: `mcp-server-time` from PyPI (installed by
the `dev` extra), over real stdio, directly and from a ReAct agent."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import pytest
import pytest_asyncio

from jianmu_like import Agent, create_react_node, human
from jianmu_like.testing import ScriptedOpenAIServer, call, reply
from jianmu_like.tools import MCPToolError, MCPToolProvider

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.skipif(
        importlib.util.find_spec("mcp_server_time") is None,
        reason="mcp-server-time is not installed (pip install -e '.[dev]')",
    ),
]

TIME_SERVER = {
    "name": "time",
    "command": sys.executable,
    "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
    "prefix": "time_",
    "idempotent": True,
    "effect_tags": {"*": ["read"]},
}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def time_server() -> AsyncIterator[MCPToolProvider]:
    async with MCPToolProvider(TIME_SERVER) as provider:
        yield provider


async def test_lists_the_time_tools(time_server: MCPToolProvider) -> None:
    tools = {tool.name: tool for tool in await time_server.get_tools()}
    assert set(tools) == {"time_get_current_time", "time_convert_time"}
    current = tools["time_get_current_time"]
    assert "timezone" in current.parameters["properties"]
    assert current.effect_tags == {"read"}


async def test_get_current_time(time_server: MCPToolProvider) -> None:
    tools = {tool.name: tool for tool in await time_server.get_tools()}
    text = await tools["time_get_current_time"].invoke({"timezone": "Asia/Tokyo"})
    data = json.loads(text)
    assert data["timezone"] == "Asia/Tokyo"
    assert datetime.fromisoformat(data["datetime"]).utcoffset() is not None
    converted = json.loads(
        await tools["time_convert_time"].invoke(
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
        )
    )
    assert converted["target"]["datetime"].endswith("21:00:00+09:00")


async def test_the_servers_own_error_reaches_the_caller(time_server: MCPToolProvider) -> None:
    tools = {tool.name: tool for tool in await time_server.get_tools()}
    with pytest.raises(MCPToolError, match="Mars/Olympus_Mons") as caught:
        await tools["time_get_current_time"].invoke({"timezone": "Mars/Olympus_Mons"})
    assert caught.value.server == "time" and caught.value.tool == "get_current_time"
    # An unknown tool is a JSON-RPC protocol error for this server; it reads the same way.
    with pytest.raises(
        MCPToolError, match=r"rejected tool 'no_such_tool': .*no_such_tool.* \(error -32602\)"
    ):
        await time_server.call("no_such_tool", {})


async def test_an_agent_asks_the_time() -> None:
    def model(request: dict[str, Any]) -> Any:
        last = request["messages"][-1]
        if last["role"] == "tool":
            return reply(f"In Tokyo it is {json.loads(last['content'])['datetime']}.")
        return call("time_get_current_time", timezone="Asia/Tokyo")

    with ScriptedOpenAIServer(model) as srv:
        provider = MCPToolProvider(TIME_SERVER)
        async with Agent(create_react_node(model_client=srv.client(), tool_providers=[provider])) as agent:
            result = await agent.run({"messages": [human("What time is it in Tokyo?")]})
    assert result.status == "success"
    observation = json.loads(result.state.messages[2].content)
    assert observation["timezone"] == "Asia/Tokyo"
    assert result.final_answer == f"In Tokyo it is {observation['datetime']}."
