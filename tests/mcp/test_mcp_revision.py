"""Protocol revision 2026-07-28 against the SDK's own server (real stdio and streamable HTTP),
and the fallback to the handshake of earlier revisions.

The SDK's `MCPServer` serves both eras (the client's first request decides); `legacy_stdio`
serves the same kind of server in the handshake era only, as a server of 2025-11-25 does.
"""

from __future__ import annotations

import asyncio
import sys

import pytest

from jianmu_like.testing import PATIENCE, wait_until_async
from jianmu_like.tools import MCPConnectError, MCPToolError, MCPToolProvider
from jianmu_like.tools.mcp._config import parse_mcp_servers
from tests.mcp.mcp_helpers import HERE, HTTPServer, server_config

pytestmark = pytest.mark.asyncio(loop_scope="module")

MODERN, HANDSHAKE = "2026-07-28", "2025-11-25"
LEGACY_ONLY = {"name": "old", "command": sys.executable, "args": [str(HERE / "mcp_task_server.py")]}
"""A server of 2025-11-25 (core tasks): it refuses the 2026-07-28 probe."""


async def test_auto_speaks_2026_07_28_to_a_server_that_offers_it_and_falls_back_otherwise() -> None:
    async with MCPToolProvider(server_config()) as modern, MCPToolProvider(LEGACY_ONLY) as old:
        await modern.get_tools()
        await old.get_tools()
        assert (modern.protocol_version, old.protocol_version) == (MODERN, HANDSHAKE)
        assert f"protocol={MODERN}" in repr(modern)
        # Both serve their tools, whatever the revision.
        assert await modern.call("echo", {"text": "new"}) == "new"
        assert "count_slowly" in {tool.name for tool in await old.get_tools()}


async def test_protocol_legacy_and_a_pinned_revision() -> None:
    async with MCPToolProvider(server_config(protocol="legacy")) as pinned:
        await pinned.get_tools()
        assert pinned.protocol_version == HANDSHAKE
    with pytest.raises(MCPConnectError, match="'old'"):
        async with MCPToolProvider({**LEGACY_ONLY, "protocol": MODERN}) as refused:
            await refused.get_tools()


async def test_an_unknown_revision_is_refused_naming_the_choices() -> None:
    with pytest.raises(Exception, match="protocol") as caught:
        parse_mcp_servers([server_config(protocol="2024-01-01")])
    assert "2026-07-28" in str(caught.value) and "legacy" in str(caught.value)


async def test_elicitation_arrives_as_input_required_and_is_answered_through_the_same_channel() -> None:
    """At 2026-07-28 the server cannot ask mid-call: it answers `input_required`, the client
    puts the question to the person (`pending_elicitations`, `respond`) and sends the call
    again with the answer. The same test at the handshake era shows the channel is the same."""
    for protocol in ("auto", "legacy"):
        async with MCPToolProvider(server_config(elicitation="ask", protocol=protocol)) as provider:
            await provider.get_tools()
            call = asyncio.create_task(provider.call("ask_user", {"question": "Which colour?"}))
            [question] = await wait_until_async(provider.pending_elicitations, "the question is pending")
            assert question.message == "Which colour?"
            provider.respond(question.id, "accept", {"colour": "green"})
            assert await asyncio.wait_for(call, PATIENCE) == "picked green"
            assert provider.protocol_version == (MODERN if protocol == "auto" else HANDSHAKE)


async def test_a_declined_question_reaches_the_server_and_a_client_that_cannot_ask_says_so() -> None:
    async with MCPToolProvider(server_config(elicitation="ask")) as provider:
        call = asyncio.create_task(provider.call("ask_user", {"question": "Which colour?"}))
        [question] = await wait_until_async(provider.pending_elicitations, "the question is pending")
        provider.respond(question.id, "decline")
        assert await asyncio.wait_for(call, PATIENCE) == "decline"
    # Without `elicitation: ask` the client declares no elicitation: the server refuses the call.
    async with MCPToolProvider(server_config()) as provider:
        with pytest.raises(MCPToolError, match="did not declare the form elicitation capability"):
            await provider.call("ask_user", {"question": "Which colour?"})


async def test_subscriptions_listen_brings_resource_updates_and_list_changes() -> None:
    """No `resources/subscribe` at 2026-07-28: the client's subscriptions/listen stream names
    the subscribed URIs, and the list changes it asked for arrive on it."""
    async with MCPToolProvider(server_config()) as provider:
        await provider.get_tools()
        assert await provider.call("add_note", {"title": "plan", "text": "one"}) == "note://plan"
        await wait_until_async(lambda: provider.stale, "the resource list change arrived on the stream")
        await provider.get_tools()
        await provider.subscribe_resource("note://plan")
        await provider.call("edit_note", {"title": "plan", "text": "two"})
        await wait_until_async(lambda: "note://plan" in provider.updated_resources, "the update arrived")
        assert await provider.read_resource_text("note://plan") == "two"
        await provider.unsubscribe_resource("note://plan")
        assert provider.subscriptions == []


async def test_stateless_streamable_http_at_2026_07_28(http_server: HTTPServer) -> None:
    """Over HTTP each 2026-07-28 request is a self-contained POST (no session, no handshake);
    the multi-round-trip sampling call works there too."""
    async with MCPToolProvider({"name": "remote", "url": http_server.url, "elicitation": "ask"}) as remote:
        await remote.get_tools()
        assert remote.protocol_version == MODERN
        assert await remote.call("echo", {"text": "stateless"}) == "stateless"
        call = asyncio.create_task(remote.call("ask_user", {"question": "Colour?"}))
        [question] = await wait_until_async(remote.pending_elicitations, "the question is pending")
        remote.respond(question.id, "accept", {})  # the schema's default (SEP-1034)
        assert await asyncio.wait_for(call, PATIENCE) == "picked blue"
