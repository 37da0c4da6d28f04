"""MCP tasks (protocol 2025-11-25): tools that require them (or allow them, with `tasks: always`)
run as tasks, created, polled, fetched and cancelled when abandoned.

`@modelcontextprotocol/server-everything` (npm, pinned in tests/mcp/package.json) has one task
tool, `simulate-research-query` (`taskSupport: required`; with `ambiguous` it asks a question
while the task waits in `input_required`). The project's own `mcp_task_server.py` (on the `mcp`
SDK) covers the rest: a tool that only allows tasks, progress and status notifications, a task
that fails, one the server cancels, one that never ends, a server that stops answering
`tasks/get`, a malformed task, a server without the `tasks` capability.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Callable
from importlib import metadata
from typing import Any

import pytest

from jianmu_like import Agent, create_react_node, human
from jianmu_like.telemetry import events as ev
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, calls, reply, wait_until_async
from jianmu_like.tools import MCPToolProvider
from jianmu_like.tools.mcp import _tasks
from jianmu_like.tools.mcp._config import MCPConfigError, parse_mcp_servers
from jianmu_like.tools.mcp._content import MCPConnectError, MCPTimeoutError, MCPToolError
from tests.mcp.everything import everything_command, needs_everything
from tests.mcp.mcp_helpers import HERE
from tests.mcp.test_mcp_everything import everything_url  # noqa: F401 (a fixture)

TASK_SERVER = HERE / "mcp_task_server.py"
RESEARCH = "simulate-research-query"


def task_server(**options: Any) -> MCPToolProvider:
    return MCPToolProvider(name="tk", command=sys.executable, args=[str(TASK_SERVER)], **options)


async def server_log(provider: MCPToolProvider) -> dict[str, Any]:
    """What the task server saw: tasks cancelled through tasks/cancel, each task's last status."""
    log: dict[str, Any] = json.loads(await provider.call("task_log", {}))
    return log


def agent_with(srv: ScriptedOpenAIServer, provider: MCPToolProvider) -> tuple[Agent, list[Event]]:
    agent = Agent(create_react_node(model_client=srv.client(), tool_providers=[provider]))
    events: list[Event] = []
    agent.telemetry.subscribe(events.append)
    return agent, events


def task_events(events: list[Event]) -> list[dict[str, Any]]:
    return [event.data for event in events if event.type == ev.MCP_TASK]


def answer_with_the_observation(tool: str, **arguments: Any) -> Callable[[dict[str, Any]], Any]:
    def model(request: dict[str, Any]) -> Any:
        last = request["messages"][-1]
        return reply(last["content"]) if last["role"] == "tool" else call(tool, **arguments)

    return model


# -- server-everything -------------------------------------------------------------------------


@needs_everything
async def test_a_tool_that_requires_tasks_runs_as_one_over_http(everything_url: str) -> None:  # noqa: F811
    model = answer_with_the_observation(f"ev_{RESEARCH}", topic="behaviour trees")
    with ScriptedOpenAIServer(model) as srv:
        provider = MCPToolProvider(name="ev", url=everything_url, prefix="ev_", allow=[RESEARCH])
        async with provider:
            agent, events = agent_with(srv, provider)
            result = await agent.run({"messages": [human("research behaviour trees")]})
    assert result.final_answer is not None
    assert result.final_answer.startswith("# Research Report: behaviour trees")
    seen = task_events(events)
    assert seen[0]["status"] == "working" and seen[-1]["status"] == "completed"
    assert {e["task_id"] for e in seen} == {seen[0]["task_id"]}
    assert all(e["server"] == "ev" and e["tool"] == f"ev_{RESEARCH}" for e in seen)
    assert seen[0]["poll_interval_ms"] == 1000  # what the server suggested, and we honour
    # Its stages are status messages the events carry.
    assert any(e["message"] == "Analyzing content..." for e in seen)


@needs_everything
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_task_waiting_for_input_gets_the_users_answer(
    transport: str, request: pytest.FixtureRequest
) -> None:
    # The question travels on the tasks/result request: a pipe, or that POST's SSE stream.
    where: dict[str, Any] = (
        dict(zip(("command", "args"), ((c := everything_command("stdio"))[0], c[1:]), strict=True))
        if transport == "stdio"
        else {"url": request.getfixturevalue("everything_url")}
    )
    provider = MCPToolProvider(name="ev", allow=[RESEARCH], elicitation="ask", **where)
    async with provider:
        tool = next(t for t in await provider.get_tools() if t.name == RESEARCH)
        running = asyncio.create_task(tool.invoke({"topic": "python", "ambiguous": True}))
        # The task is `input_required`; tasks/result delivers the server's question.
        [question] = await wait_until_async(provider.pending_elicitations, "the task's question")
        assert "could have multiple interpretations" in question.message
        provider.respond(question.id, "accept", {"interpretation": "snake"})
        async with asyncio.timeout(PATIENCE):
            text = await running
    assert text.startswith("# Research Report: python (snake)")


@needs_everything
async def test_with_tasks_never_the_tool_is_not_offered() -> None:
    node, *args = everything_command("stdio")
    async with MCPToolProvider(name="ev", command=node, args=args, tasks="never") as provider:
        names = {tool.name for tool in await provider.get_tools()}
    assert RESEARCH not in names and "get-sum" in names


@needs_everything
async def test_an_abandoned_task_is_cancelled_on_the_server(caplog: pytest.LogCaptureFixture) -> None:
    node, *args = everything_command("stdio")
    caplog.set_level("INFO", logger="jianmu_like.tools.mcp")
    async with MCPToolProvider(name="ev", command=node, args=args, allow=[RESEARCH]) as provider:
        running = asyncio.create_task(provider.call(RESEARCH, {"topic": "slow"}))
        await wait_until_async(lambda: "': working" in caplog.text, "the task to be created")
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
    # server-everything answered tasks/cancel with the task, now cancelled.
    assert f"of tool '{RESEARCH}': cancelled" in caplog.text


# -- the project's task server -----------------------------------------------------------------


async def test_a_tool_that_allows_tasks_runs_as_one_only_when_told() -> None:
    async with task_server() as provider:  # tasks: auto
        assert await provider.call("count_slowly", {"steps": 2}) == "counted to 2"
        assert (await server_log(provider))["status"] == {}  # no task: a plain call
    script: list[Any] = [call("count_slowly", steps=3), reply("done")]
    with ScriptedOpenAIServer(script) as srv:
        # progress_interval=0: every report an event (coalescing: test_mcp_hostile.py)
        async with task_server(tasks="always", progress_interval=0) as provider:
            agent, events = agent_with(srv, provider)
            result = await agent.run({"messages": [human("count")]})
            observation = next(m["content"] for m in srv.requests[-1]["messages"] if m["role"] == "tool")
            log = await server_log(provider)
    assert result.final_answer == "done" and observation == "counted to 3"
    assert list(log["status"].values()) == ["completed"]
    # Progress sent after the tools/call was answered still reaches the call, in order.
    progress = [(e.data["progress"], e.data["total"]) for e in events if e.type == ev.TOOL_PROGRESS]
    assert progress == [(1, 3), (2, 3), (3, 3)]
    statuses = [(e["status"], e["message"]) for e in task_events(events)]
    assert statuses[0] == ("working", None) and statuses[-1] == ("completed", None)
    assert set(statuses[1:-1]) <= {("working", f"step {n} of 3") for n in (1, 2, 3)}


async def test_two_tasks_at_once_keep_their_own_progress() -> None:
    script: list[Any] = [calls(call("count_slowly", steps=2), call("count_slowly", steps=4)), reply("both")]
    with ScriptedOpenAIServer(script) as srv:
        async with task_server(tasks="always", progress_interval=0) as provider:
            agent, events = agent_with(srv, provider)
            await agent.run({"messages": [human("count twice")]})
            tool_messages = [m["content"] for m in srv.requests[-1]["messages"] if m["role"] == "tool"]
    assert sorted(tool_messages) == ["counted to 2", "counted to 4"]
    by_call: dict[str, list[float]] = {}
    for event in events:
        if event.type == ev.TOOL_PROGRESS:
            by_call.setdefault(event.data["call_id"], []).append(event.data["total"])
    assert sorted(by_call.values()) == [[2, 2], [4, 4, 4, 4]]


async def test_a_failed_task_is_the_tools_error() -> None:
    async with task_server() as provider:
        with pytest.raises(MCPToolError, match="the job broke: disk full"):
            await provider.call("breaks", {})
        assert (await server_log(provider))["cancelled"] == []  # it ended: nothing to cancel


async def test_a_task_the_server_cancels_says_why_and_is_not_cancelled_again() -> None:
    async with task_server() as provider:
        with pytest.raises(MCPToolError) as raised:
            await provider.call("withdrawn", {})
        assert str(raised.value) == (
            "MCP server 'tk' cancelled the task of tool 'withdrawn': an operator stopped it"
        )
        assert (await server_log(provider))["cancelled"] == []


async def test_a_malformed_task_is_refused_naming_what_is_wrong() -> None:
    async with task_server() as provider:
        with pytest.raises(
            MCPToolError, match=r"with no valid task \(task.taskId: Input should be a valid string"
        ):
            await provider.call("malformed", {})


async def test_a_server_that_stops_answering_polls_times_out_and_the_task_is_cancelled() -> None:
    async with task_server(call_timeout=1.0) as provider:
        with pytest.raises(
            MCPTimeoutError, match=r"did not answer tasks/get for task task-\d+ within call_timeout=1 s"
        ):
            await provider.call("mute", {})
        log = await server_log(provider)
    assert log["cancelled"] == list(log["status"])


async def test_a_task_that_never_ends_is_bounded_by_max_call_duration_and_cancelled() -> None:
    async with task_server(max_call_duration=1.5) as provider:
        with pytest.raises(
            MCPTimeoutError,
            match=r"did not finish the task of tool 'endless' within max_call_duration=1\.5 s",
        ):
            await provider.call("endless", {})
        log = await server_log(provider)
    assert log["cancelled"] == list(log["status"]) and len(log["cancelled"]) == 1


async def run_until_the_task_exists(
    srv: ScriptedOpenAIServer, provider: MCPToolProvider
) -> tuple[asyncio.Task[Any], list[Event]]:
    """An agent run calling `endless`, once the server has created its task."""
    agent, events = agent_with(srv, provider)
    run = asyncio.create_task(agent.run({"messages": [human("wait forever")]}))
    await wait_until_async(lambda: task_events(events), "the task to be created")
    return run, events


async def test_a_halted_run_cancels_its_task() -> None:
    script: list[Any] = [call("endless"), reply("never")]
    with ScriptedOpenAIServer(script) as srv:
        async with task_server() as provider:
            run, events = await run_until_the_task_exists(srv, provider)
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
            log = await server_log(provider)
    [task_id] = log["status"]
    assert log["cancelled"] == [task_id] and log["status"][task_id] == "cancelled"
    assert task_events(events)[-1]["status"] == "cancelled"  # what tasks/cancel answered


async def test_a_server_killed_during_a_task_is_a_crash_not_a_hang() -> None:
    script: list[Any] = [call("endless"), reply("it crashed")]
    with ScriptedOpenAIServer(script) as srv:
        async with task_server() as provider:
            run, _ = await run_until_the_task_exists(srv, provider)
            assert provider.pid is not None
            os.kill(provider.pid, signal.SIGKILL)
            async with asyncio.timeout(PATIENCE):
                result = await run
            observation = next(m["content"] for m in srv.requests[-1]["messages"] if m["role"] == "tool")
    assert result.final_answer == "it crashed"
    assert "MCP server 'tk' closed the connection during tool 'endless'" in observation


async def test_without_the_servers_tasks_capability_no_call_is_a_task() -> None:
    async with task_server(tasks="always", env={"TASK_SERVER_NO_CAPABILITY": "1"}) as provider:
        names = {tool.name for tool in await provider.get_tools()}
        # Tools that require tasks cannot be called; one that allows them is called plainly.
        assert names == {"count_slowly", "task_log"}
        assert await provider.call("count_slowly", {"steps": 1}) == "counted to 1"
        assert (await server_log(provider))["status"] == {}


async def test_a_server_of_both_eras_keeps_its_tasks_at_protocol_legacy_and_says_so_otherwise(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Core tasks are 2025-11-25's: a server that also speaks 2026-07-28 is reached there by
    `protocol: auto`, and its task tools are left out naming the way to them."""
    both = {"TASK_SERVER_BOTH_ERAS": "1"}
    async with task_server(env=both) as provider:
        assert "breaks" not in {tool.name for tool in await provider.get_tools()}
    assert "tasks are an extension this client does not speak (`protocol: legacy`" in caplog.text
    async with task_server(env=both, protocol="legacy") as provider:
        assert "breaks" in {tool.name for tool in await provider.get_tools()}
        assert provider.protocol_version == "2025-11-25"


# -- which calls are tasks, the setting, the SDK -----------------------------------------------


@pytest.mark.parametrize(
    ("mode", "support", "server", "expected"),
    [
        ("auto", "required", True, True),
        ("auto", "optional", True, False),
        ("auto", "forbidden", True, False),
        ("always", "optional", True, True),
        ("always", "forbidden", True, False),
        ("never", "required", True, None),
        ("never", "optional", True, False),
        ("auto", "required", False, None),
        ("always", "optional", False, False),
    ],
)
def test_which_calls_run_as_tasks(
    mode: _tasks.TaskMode, support: str, server: bool, expected: bool | None
) -> None:
    assert _tasks.call_as_task(mode, support, server) is expected


def test_the_setting_is_validated_naming_the_server_and_key() -> None:
    with pytest.raises(MCPConfigError, match="server x: tasks: "):
        parse_mcp_servers([{"name": "x", "command": "y", "tasks": "sometimes"}])
    [config] = parse_mcp_servers([{"name": "x", "command": "y", "tasks": "always"}])
    assert config.tasks == "always"


def test_the_sdk_check_passes_here_and_finds_a_missing_piece(monkeypatch: pytest.MonkeyPatch) -> None:
    _tasks.check_sdk()  # the installed SDK offers everything
    import mcp.types

    monkeypatch.delattr(mcp.types, "CreateTaskResult")
    with pytest.raises(_tasks.MCPTasksUnavailableError) as raised:
        _tasks.check_sdk()
    assert f"the installed mcp SDK {metadata.version('mcp')} lacks" in str(raised.value)
    assert "mcp.types.CreateTaskResult" in str(raised.value)


async def test_a_session_does_not_open_on_an_sdk_without_what_it_uses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import mcp.client.extension

    monkeypatch.delattr(mcp.client.extension, "NotificationBinding")
    with pytest.raises(MCPConnectError, match=r"MCP server 'tk': the installed mcp SDK \S+ lacks"):
        await task_server().initialize()
