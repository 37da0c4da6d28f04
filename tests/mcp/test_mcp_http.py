"""The same test server over real streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from jianmu_like.testing import PATIENCE
from jianmu_like.tools import (
    MCPConnectError,
    MCPServerError,
    MCPToolError,
    MCPToolProvider,
)
from tests.mcp.mcp_helpers import HTTPServer

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def remote(http_server: HTTPServer) -> AsyncIterator[MCPToolProvider]:
    config = {
        "name": "remote",
        "url": http_server.url,
        "headers": {"Authorization": "Bearer test-token-123", "X-Team": "core"},
        "prefix": "r_",
    }
    async with MCPToolProvider(config) as provider:
        yield provider


async def test_lists_and_calls_over_streamable_http(remote: MCPToolProvider) -> None:
    assert remote.config.transport == "http" and remote.pid is None
    tools = {tool.name: tool for tool in await remote.get_tools()}
    assert {"r_echo", "r_add", "r_structured_only", "r_header"} <= set(tools)
    assert tools["r_add"].parameters["properties"]["b"]["type"] == "number"
    assert await tools["r_echo"].invoke({"text": "over http"}) == "over http"
    assert await tools["r_add"].invoke({"a": 40, "b": 2}) == "42.0"
    assert await tools["r_picture"].invoke({}) == (
        "a red dot\n[Artifact generated: image-1.png] (image/png, 32 bytes; shown to the user, not to you)"
    )
    # Several calls at once share the one session.
    results = await asyncio.gather(*(tools["r_echo"].invoke({"text": str(i)}) for i in range(5)))
    assert results == ["0", "1", "2", "3", "4"]


async def test_configured_headers_reach_the_server(remote: MCPToolProvider) -> None:
    tools = {tool.name: tool for tool in await remote.get_tools()}
    assert await tools["r_header"].invoke({"name": "X-Team"}) == "core"
    assert await tools["r_header"].invoke({"name": "Authorization"}) == "Bearer test-token-123"


async def test_is_error_over_http(remote: MCPToolProvider) -> None:
    tools = {tool.name: tool for tool in await remote.get_tools()}
    with pytest.raises(MCPToolError, match="cannot do that: over the wire"):
        await tools["r_fail"].invoke({"reason": "over the wire"})


async def test_nothing_listening_is_a_clear_connect_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound but not listening: connections are refused
        provider = MCPToolProvider(name="nobody", url=f"http://127.0.0.1:{port}/mcp", connect_timeout=5)
        with pytest.raises(
            MCPConnectError, match=rf"'nobody' \(http://127.0.0.1:{port}/mcp\) could not be reached"
        ):
            await provider.initialize()


async def test_a_server_that_goes_away_mid_call_becomes_an_error() -> None:
    server = HTTPServer()
    try:
        async with MCPToolProvider(name="doomed", url=server.url, connect_timeout=PATIENCE) as provider:
            tools = {tool.name: tool for tool in await provider.get_tools()}
            call = asyncio.create_task(tools["sleep"].invoke({"seconds": PATIENCE}))  # until stopped
            await asyncio.sleep(0.3)
            server.stop()
            with pytest.raises(MCPServerError) as caught:
                await call
            print(repr(caught.value))
            assert "'doomed'" in str(caught.value)
    finally:
        server.stop()
