"""`@modelcontextprotocol/server-everything` from npm (the MCP project's reference test server,
in TypeScript) over real streamable HTTP and real stdio.

The test command installs it into tests/mcp/node_modules (tests/mcp/everything.py); without
node or that install, these tests are skipped, saying why. Over HTTP it is confined to 127.0.0.1
by a `node -r` preload (loopback.cjs), since it would otherwise listen on every interface.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio

from jianmu_like import Agent, create_react_node, human
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, reply, wait_until
from jianmu_like.tools import MCPToolProvider
from tests.mcp.everything import everything_command, needs_everything
from tests.mcp.mcp_helpers import HERE

pytestmark = [pytest.mark.asyncio(loop_scope="module"), needs_everything]


@pytest.fixture(scope="module")
def everything_url() -> Iterator[str]:
    """The server over streamable HTTP on 127.0.0.1, on a port it picked (PORT=0)."""
    node, entry, transport = everything_command("streamableHttp")
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(
            [node, "-r", str(HERE / "loopback.cjs"), entry, transport],
            env={**os.environ, "PORT": "0"},
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        try:

            def listening() -> list[str] | None:
                log.seek(0)
                return next((line.split()[1:] for line in log if line.startswith("LISTENING ")), None)

            def failed() -> str | None:
                if process.poll() is None:
                    return None
                log.seek(0)
                return f"server-everything exited: {log.read()[-2000:]}"

            host, port = wait_until(listening, "server-everything to listen", abort=failed)
            assert host == "127.0.0.1"
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.kill()
            process.wait(PATIENCE)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def everything(everything_url: str) -> AsyncIterator[MCPToolProvider]:
    async with MCPToolProvider(name="everything", url=everything_url, deny=["trigger-*"]) as provider:
        yield provider


async def test_lists_its_tools_over_http(everything: MCPToolProvider) -> None:
    tools = {tool.name: tool for tool in await everything.get_tools()}
    assert {"echo", "get-sum", "get-tiny-image", "get-structured-content"} <= set(tools)
    assert not any(name.startswith("trigger-") for name in tools)  # deny
    assert tools["get-sum"].parameters["properties"]["a"]["type"] == "number"
    # The schema as the server sent it, its `$schema` (draft-07 here) included.
    assert tools["get-sum"].parameters["$schema"] == "http://json-schema.org/draft-07/schema#"


async def test_calls_render_every_kind_of_content(everything: MCPToolProvider) -> None:
    tools = {tool.name: tool for tool in await everything.get_tools()}
    assert await tools["echo"].invoke({"message": "hi"}) == "Echo: hi"
    assert await tools["get-sum"].invoke({"a": 1, "b": 2}) == "The sum of 1 and 2 is 3."
    image = await tools["get-tiny-image"].invoke({})
    assert "[Artifact generated: image-1.png] (image/png, " in image and " bytes; shown to the user" in image
    structured = await tools["get-structured-content"].invoke({"location": "Chicago"})
    assert structured.startswith("{") and '"temperature"' in structured
    links = await tools["get-resource-links"].invoke({"count": 1})
    assert "[resource link: demo://resource/" in links


async def test_an_agent_uses_it(everything_url: str) -> None:
    def model(request: dict[str, Any]) -> Any:
        last = request["messages"][-1]
        if last["role"] == "tool":
            return reply(last["content"])
        return call("ev_get-sum", a=20, b=22)

    with ScriptedOpenAIServer(model) as srv:
        provider = MCPToolProvider(name="ev", url=everything_url, prefix="ev_")
        async with Agent(create_react_node(model_client=srv.client(), tool_providers=[provider])) as agent:
            result = await agent.run({"messages": [human("What is 20 + 22?")]})
    assert result.final_answer == "The sum of 20 and 22 is 42."


async def test_over_stdio_and_no_process_left() -> None:
    node, *args = everything_command("stdio")
    async with MCPToolProvider(name="everything", command=node, args=args) as provider:
        tools = {tool.name: tool for tool in await provider.get_tools()}
        assert await tools["echo"].invoke({"message": "over stdio"}) == "Echo: over stdio"
        pid = provider.pid
    assert pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
