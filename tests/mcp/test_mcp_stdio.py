"""Listing and calling tools of a real MCP server (the SDK's `MCPServer`) over real stdio.

Three server processes serve the whole module: one plain, one with prefix, allow / deny and
effect tags, one with a short call timeout; every test uses them through `Tool.invoke` or a
`ToolSet`, as an agent does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from jianmu_like.models._messages import ToolCall
from jianmu_like.nodes._tool_calls import ToolCallRunner
from jianmu_like.testing import PATIENCE, wait_until_async
from jianmu_like.tools import (
    MCPServerError,
    MCPTimeoutError,
    MCPToolError,
    MCPToolProvider,
    ToolArgumentsError,
    ToolSet,
    calculator,
)
from tests.mcp.mcp_helpers import process_gone, server_config

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def plain() -> AsyncIterator[MCPToolProvider]:
    async with MCPToolProvider(server_config(call_timeout=PATIENCE)) as provider:
        yield provider
    assert provider.pid is None or process_gone(provider.pid)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def impatient() -> AsyncIterator[MCPToolProvider]:
    """A short call timeout, for the tests of that timeout: every other call waits PATIENCE (on a
    loaded machine, a slow echo must not become a timeout)."""
    async with MCPToolProvider(server_config(call_timeout=1.5)) as provider:
        yield provider


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def filtered() -> AsyncIterator[MCPToolProvider]:
    config = server_config(
        name="filtered",
        prefix="t_",
        allow=["echo", "add", "dotted.*", "fail", "crash*"],
        deny=["crash*"],
        effect_tags={"echo": ["read"], "add": ["read", "compute"], "default": ["network"]},
        parallel_safe=False,
    )
    async with MCPToolProvider(config) as provider:
        yield provider


async def invoke(provider: MCPToolProvider, name: str, **arguments: object) -> str:
    tools = {tool.name: tool for tool in await provider.get_tools()}
    return await tools[name].invoke(arguments)


async def test_lists_tools_with_the_servers_schemas(plain: MCPToolProvider) -> None:
    tools = {tool.name: tool for tool in await plain.get_tools()}
    assert {"echo", "add", "dotted_name", "sleep", "crash", "grow"} <= set(tools)
    add = tools["add"]
    assert add.description == "Add two numbers."
    assert add.parameters["properties"]["a"]["type"] == "number"
    assert add.parameters["required"] == ["a", "b"]
    assert add.schema()["function"]["name"] == "add"
    assert add.parallel_safe and add.effect_tags == frozenset()
    assert plain.pid is not None and plain.connected


async def test_calls_render_text_structured_image_and_resource(plain: MCPToolProvider) -> None:
    assert await invoke(plain, "echo", text="héllo") == "héllo"
    assert await invoke(plain, "add", a=2, b=2.5) == "4.5"
    assert await invoke(plain, "structured_only") == '{"city":"Paris","population":2100000}'
    assert await invoke(plain, "picture") == (
        "a red dot\n[Artifact generated: image-1.png] (image/png, 32 bytes; shown to the user, not to you)"
    )
    assert await invoke(plain, "document") == "the notes"
    assert await invoke(plain, "dotted_name") == "dotted"  # called by its original name "dotted.name"


async def test_prefix_allow_deny_and_effect_tags(filtered: MCPToolProvider) -> None:
    tools = {tool.name: tool for tool in await filtered.get_tools()}
    assert sorted(tools) == ["t_add", "t_dotted_name", "t_echo", "t_fail"]
    assert tools["t_echo"].effect_tags == {"read"}
    assert tools["t_add"].effect_tags == {"read", "compute"}
    assert tools["t_fail"].effect_tags == {"network"}
    assert not tools["t_echo"].parallel_safe
    assert await tools["t_echo"].invoke({"text": "prefixed"}) == "prefixed"


async def test_is_error_and_bad_arguments_become_errors(plain: MCPToolProvider) -> None:
    with pytest.raises(MCPToolError, match="cannot do that: no such file") as caught:
        await invoke(plain, "fail", reason="no such file")
    assert caught.value.tool == "fail" and caught.value.server == "test"
    with pytest.raises(ToolArgumentsError) as bad:
        await invoke(plain, "add", a=1)  # caught before the call, from the server's schema
    # One prefix, not "invalid arguments for tool 'add': invalid arguments for tool 'add': ...".
    assert str(bad.value) == "invalid arguments for tool 'add': b: required argument is missing"


async def test_per_call_timeout(impatient: MCPToolProvider) -> None:
    with pytest.raises(
        MCPTimeoutError, match=r"did not answer tool 'sleep' or report its progress for call_timeout=1.5 s"
    ):
        await invoke(impatient, "sleep", seconds=30)
    assert await invoke(impatient, "echo", text="still fine") == "still fine"  # the session survives


async def test_executor_turns_failures_into_observations(
    plain: MCPToolProvider, impatient: MCPToolProvider
) -> None:
    """What the model reads, through the same runner the ReAct executor uses."""

    async def observe(provider: MCPToolProvider, name: str, **arguments: object) -> str:
        toolset = ToolSet(providers=[provider])
        await toolset.ensure_ready()
        runner = ToolCallRunner(toolset, emit=lambda *a, **k: None)
        call = ToolCall(id="c1", name=name, arguments=arguments)
        return (await runner.run(call, toolset.require(name))).content

    assert await observe(plain, "echo", text="ok") == "ok"
    failed = await observe(plain, "fail", reason="quota")
    assert failed == "Error: tool 'fail' raised MCPToolError: cannot do that: quota"
    timed_out = await observe(impatient, "sleep", seconds=30)
    assert timed_out.startswith("Error: tool 'sleep' raised MCPTimeoutError: MCP server 'test' did not")


async def test_mcp_tools_mix_with_python_tools(plain: MCPToolProvider) -> None:
    toolset = ToolSet.from_providers([plain]).with_tools([calculator])
    await toolset.ensure_ready()
    assert {"echo", "calculator"} <= set(toolset.names())
    assert await toolset.require("calculator").invoke({"expression": "6*7"}) == "42"
    assert await toolset.require("echo").invoke({"text": "mixed"}) == "mixed"


async def test_tool_list_is_cached_and_refreshed_on_change(plain: MCPToolProvider) -> None:
    first = await plain.get_tools()
    assert [t.name for t in first] == [t.name for t in await plain.get_tools()]
    assert "grown" not in {t.name for t in first}
    # The server adds a tool and sends notifications/tools/list_changed (at 2026-07-28 on the
    # client's subscriptions/listen stream, which may deliver it after the call's result).
    assert await invoke(plain, "grow") == "grown"
    await wait_until_async(lambda: plain.stale, "the tool list change was received")
    assert "grown" in {t.name for t in await plain.get_tools()}
    assert "grown" in {t.name for t in await plain.refresh()}


async def test_processes_are_real_and_separate(plain: MCPToolProvider, filtered: MCPToolProvider) -> None:
    assert int(await invoke(plain, "pid")) == plain.pid
    assert plain.pid != filtered.pid
    assert Path(f"/proc/{plain.pid}").exists()


async def test_a_resource_list_change_reaches_the_read_resource_tool() -> None:
    """`notifications/resources/list_changed`: the next listing offers the new resource (the
    `read_resource` tool appears, its description naming the URI) and the model can read it."""
    async with MCPToolProvider(server_config()) as provider:
        assert "read_resource" not in {tool.name for tool in await provider.get_tools()}
        assert await invoke(provider, "add_note", title="first", text="hello notes") == "note://first"
        await wait_until_async(lambda: provider._stale, "the resource list change was received")
        tools = {tool.name: tool for tool in await provider.get_tools()}
        assert "note://first" in tools["read_resource"].description
        assert await tools["read_resource"].invoke({"uri": "note://first"}) == "hello notes"


async def test_a_server_without_subscriptions_says_so_and_still_works(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The handshake era: this server declares no `resources.subscribe` there (at 2026-07-28 it
    # takes subscriptions on its subscriptions/listen stream, see test_mcp_revision).
    async with MCPToolProvider(server_config(subscribe=["note://x"], protocol="legacy")) as provider:
        assert "does not offer resource subscriptions; not subscribed to note://x" in caplog.text
        with pytest.raises(MCPServerError, match="'test' does not offer resource subscriptions"):
            await provider.subscribe_resource("note://y")
        assert await invoke(provider, "echo", text="still here") == "still here"
