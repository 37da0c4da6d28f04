"""Starting, crashing, restarting and closing real stdio MCP servers, and leaving nothing behind.

Every test checks the process table itself: a PID that answered `os.kill(pid, 0)` before must
raise `ProcessLookupError` after, and no new child of the test process may survive.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from jianmu_like.testing import wait_until_async
from jianmu_like.tools import (
    MCPConnectError,
    MCPServerCrashedError,
    MCPServerError,
    MCPToolProvider,
    ToolProviderError,
    ToolSet,
)
from tests.mcp.mcp_helpers import SERVER, child_pids, process_gone, server_config


def assert_reaped(pid: int | None) -> None:
    assert pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_a_server_that_never_answers_initialize_times_out_clearly() -> None:
    before = child_pids()
    silent = MCPToolProvider(
        name="silent",
        command=sys.executable,
        args=["-c", "import sys; sys.stdin.read()"],
        connect_timeout=0.5,
    )
    with pytest.raises(MCPConnectError) as caught:
        await silent.initialize()
    message = str(caught.value)
    assert "MCP server 'silent'" in message and "-c import sys; sys.stdin.read()" in message
    assert "did not complete the MCP handshake (initialize) within connect_timeout=0.5 s" in message
    # Through a ToolSet (as an agent starts it) the provider is named too.
    toolset = ToolSet.from_providers([silent])
    with pytest.raises(
        ToolProviderError, match=r"'silent' failed during initialize: MCPConnectError: .*0.5 s"
    ):
        await toolset.ensure_ready()
    await toolset.aclose()
    assert child_pids() == before


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["-c", "raise SystemExit(2)"],
            "closed the connection before completing the MCP handshake (exit status 2",
        ),
        (None, "could not be started: FileNotFoundError"),
    ],
)
async def test_a_server_that_cannot_start_says_why(args: list[str] | None, expected: str) -> None:
    command = sys.executable if args is not None else "/nonexistent/mcp-server"
    provider = MCPToolProvider(name="broken", command=command, args=args or [], connect_timeout=10)
    with pytest.raises(MCPConnectError) as caught:
        await provider.initialize()
    assert expected in str(caught.value)


async def test_open_in_one_task_close_in_another_leaves_no_process() -> None:
    before = child_pids()
    provider = MCPToolProvider(server_config())
    await asyncio.create_task(provider.initialize())  # the owner task outlives this one
    pid = provider.pid
    assert pid is not None and not process_gone(pid)
    tools = {t.name: t for t in await asyncio.create_task(provider.get_tools())}
    assert await tools["echo"].invoke({"text": "x"}) == "x"
    await asyncio.create_task(provider.close())  # no "exit cancel scope in a different task"
    assert_reaped(pid)
    await provider.close()  # idempotent
    assert child_pids() == before
    with pytest.raises(MCPServerError, match="the provider is closed"):
        await tools["echo"].invoke({"text": "after close"})


async def test_a_crash_during_a_non_idempotent_call_is_reported_and_the_server_restarted() -> None:
    async with MCPToolProvider(server_config()) as provider:
        tools = {t.name: t for t in await provider.get_tools()}
        first = provider.pid
        with pytest.raises(MCPServerCrashedError) as caught:
            await tools["crash"].invoke({})
        message = str(caught.value)
        assert (
            "closed the connection during tool 'crash' (the server process exited with status 3)" in message
        )
        assert (
            "restarted, but the call to 'crash' was not retried because it is not marked idempotent"
            in message
        )
        assert_reaped(first)
        assert provider.restarts == 1 and provider.pid not in (None, first)
        assert await tools["echo"].invoke({"text": "alive again"}) == "alive again"
        last = provider.pid
    assert_reaped(last)


async def test_an_idempotent_call_is_retried_once_after_a_restart(tmp_path: Path) -> None:
    config = server_config(idempotent=["crash*"])
    async with MCPToolProvider(config) as provider:
        tools = {t.name: t for t in await provider.get_tools()}
        first = provider.pid
        result = await tools["crash_once"].invoke({"marker": str(tmp_path / "crashed")})
        assert result == f"recovered in {provider.pid}"
        assert provider.restarts == 1 and provider.pid != first
        assert_reaped(first)
        # A tool that crashes every time is retried once, then reported.
        with pytest.raises(MCPServerCrashedError, match="again, when the call to 'crash' was retried"):
            await tools["crash"].invoke({})
        pids = {first, provider.pid}
    for pid in pids:
        assert_reaped(pid)


async def test_a_server_killed_mid_call_is_restarted_and_the_idempotent_call_retried(
    tmp_path: Path,
) -> None:
    started = tmp_path / "started"
    async with MCPToolProvider(server_config(idempotent=True)) as provider:
        tools = {t.name: t for t in await provider.get_tools()}
        victim = provider.pid
        assert victim is not None
        call = asyncio.create_task(tools["sleep"].invoke({"seconds": 0.8, "started": str(started)}))
        await wait_until_async(started.exists, "the call to reach the server")
        os.kill(victim, signal.SIGKILL)
        assert await call == "slept 0.8"
        assert provider.restarts == 1
        assert_reaped(victim)


async def test_a_server_that_died_while_idle_is_restarted_before_the_next_call() -> None:
    async with MCPToolProvider(server_config()) as provider:  # nothing idempotent
        tools = {t.name: t for t in await provider.get_tools()}
        victim = provider.pid
        assert victim is not None
        os.kill(victim, signal.SIGKILL)
        await wait_until_async(
            lambda: not provider.connected, "the provider to notice the death", interval=0.01
        )
        # The request never reached the dead server, so running it on a new one is safe.
        assert await tools["echo"].invoke({"text": "fresh"}) == "fresh"
        assert provider.restarts == 1
        assert_reaped(victim)


async def test_close_kills_what_the_server_left_behind(tmp_path: Path) -> None:
    """A server that starts a background child and exits politely: the child goes too."""
    pid_file = tmp_path / "grandchild.pid"
    script = f"sleep 300 & echo $! > {pid_file}; exec {sys.executable} {SERVER}"
    async with MCPToolProvider(name="wrapped", command="/bin/sh", args=["-c", script]) as provider:
        assert {t.name for t in await provider.get_tools()} >= {"echo"}
        grandchild = int(pid_file.read_text())
        assert not process_gone(grandchild)
        server = provider.pid
    assert_reaped(server)
    assert process_gone(grandchild)


async def test_calls_in_flight_when_the_server_dies_share_one_restart() -> None:
    async with MCPToolProvider(server_config(idempotent=["sleep"])) as provider:
        tools = {t.name: t for t in await provider.get_tools()}
        first = provider.pid
        slow = asyncio.create_task(tools["sleep"].invoke({"seconds": 0.5}))
        await asyncio.sleep(0.2)
        crashed, slept = await asyncio.gather(tools["crash"].invoke({}), slow, return_exceptions=True)
        assert isinstance(crashed, MCPServerCrashedError) and "not retried" in str(crashed)
        assert slept == "slept 0.5"  # idempotent: retried on the restarted server
        assert provider.restarts == 1
        assert_reaped(first)
