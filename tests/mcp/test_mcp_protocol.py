"""The MCP protocol beyond tools, against real servers over stdio: resources (listed, read from
Python and by the model through `read_resource`, binary data kept whole as artifacts), prompts,
roots (declared, asked for, changed), progress (events, and a bound on silence rather than on the
whole call), server logs, and cancellation of an abandoned call on the server.

`@modelcontextprotocol/server-everything` (npm, pinned in tests/mcp/package.json) is the MCP
project's reference server for these features; the project's own test server (`mcp_test_server.py`,
on the official `mcp` SDK) covers what it cannot show (a call that never reports progress, a
handler that records its cancellation).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from jianmu_like import Agent, create_react_node, human
from jianmu_like.models._types import Usage
from jianmu_like.telemetry import events as ev
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, reply, wait_until, wait_until_async
from jianmu_like.testing._script import DEFAULT_USAGE
from jianmu_like.tools import MCPToolProvider
from jianmu_like.tools.mcp._elicitation import ElicitationAnswer, ElicitationError, ElicitationRequest
from tests.mcp.everything import everything_command, needs_everything
from tests.mcp.mcp_helpers import server_config

STATIC_DOC = "demo://resource/static/document/architecture.md"

pytestmark = [pytest.mark.asyncio(loop_scope="module")]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def everything(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[MCPToolProvider]:
    node, *args = everything_command("stdio")
    root = tmp_path_factory.mktemp("project")
    provider = MCPToolProvider(
        name="everything", command=node, args=args, roots=[str(root)], deny=["trigger-*"]
    )
    async with provider:
        yield provider


def everything_server(**options: object) -> MCPToolProvider:
    """server-everything over stdio, named "ev", with `options` (an `mcp_servers` entry's keys)."""
    node, *args = everything_command("stdio")
    return MCPToolProvider(name="ev", command=node, args=args, **options)


def _agent_run(srv: ScriptedOpenAIServer, provider: MCPToolProvider) -> tuple[Agent, list[Event]]:
    agent = Agent(create_react_node(model_client=srv.client(), tool_providers=[provider]))
    events: list[Event] = []
    agent.telemetry.subscribe(events.append)
    return agent, events


# -- resources ---------------------------------------------------------------------------------


async def test_resources_listed_and_read_from_python(everything: MCPToolProvider) -> None:
    resources = await everything.list_resources()
    uris = {str(resource.uri) for resource in resources}
    assert STATIC_DOC in uris
    templates = {template.uri_template for template in await everything.list_resource_templates()}
    assert "demo://resource/dynamic/blob/{resourceId}" in templates
    result = await everything.read_resource(STATIC_DOC)
    text = result.contents[0].text  # type: ignore[union-attr]
    assert "architecture" in text.lower() or len(text) > 20


async def test_the_model_reads_resources_through_one_tool(everything: MCPToolProvider) -> None:
    tools = {tool.name: tool for tool in await everything.get_tools()}
    reader = tools["read_resource"]
    # Its description names the URIs and templates the model may read.
    assert STATIC_DOC in reader.description and "dynamic/text/{resourceId}" in reader.description
    blob_uri = "demo://resource/dynamic/blob/7"  # text/plain, base64

    def model(request: dict[str, Any]) -> Any:
        tool_replies = [m for m in request["messages"] if m["role"] == "tool"]
        if not tool_replies:
            return call("read_resource", uri="demo://resource/dynamic/text/3")
        if len(tool_replies) == 1:
            return call("read_resource", uri=blob_uri)
        return reply("read both")

    with ScriptedOpenAIServer(model) as srv:
        agent, events = _agent_run(srv, everything)
        result = await agent.run({"messages": [human("read the resources")]})
        observations = [m["content"] for m in srv.requests[-1]["messages"] if m["role"] == "tool"]
    assert result.status == "success" and result.final_answer == "read both"
    assert "Resource 3" in observations[0]  # text: the observation itself
    # A blob of a text type (server-everything's is text/plain, base64) is text the model asked
    # to read: decoded into its observation, not an artifact (binary blobs are: test_mcp_content).
    assert observations[1].startswith("Resource 7: This is a base64 blob")
    assert result.artifacts == [] and not any(e.type == ev.ARTIFACT for e in events)


async def test_a_markdown_resource_the_model_reads_is_its_observation(everything: MCPToolProvider) -> None:
    """Asked "what does the doc say?", the model reads the document itself, not a placeholder."""
    expected = (await everything.read_resource(STATIC_DOC)).contents[0]
    assert expected.mime_type == "text/markdown"

    def model(request: dict[str, Any]) -> Any:
        if not [m for m in request["messages"] if m["role"] == "tool"]:
            return call("read_resource", uri=STATIC_DOC)
        return reply("it describes the architecture")

    with ScriptedOpenAIServer(model) as srv:
        agent, _events = _agent_run(srv, everything)
        result = await agent.run({"messages": [human("what does the architecture doc say?")]})
        [observation] = [m["content"] for m in srv.requests[-1]["messages"] if m["role"] == "tool"]
    assert result.status == "success" and result.artifacts == []
    assert observation == expected.text  # type: ignore[union-attr]


async def test_reading_an_unknown_resource_is_an_observation(everything: MCPToolProvider) -> None:
    tools = {tool.name: tool for tool in await everything.get_tools()}
    with pytest.raises(Exception, match="everything"):
        await tools["read_resource"].invoke({"uri": "demo://no/such/thing"})


@needs_everything
async def test_a_subscribed_resource_that_changes_is_named_until_read_again() -> None:
    """`resources/subscribe` (an entry's `subscribe:`): server-everything's simulated updates
    (`toggle-subscriber-updates` sends one at once) reach `updated_resources` and the
    `read_resource` description; reading the resource clears it."""
    async with everything_server(subscribe=[STATIC_DOC]) as provider:
        assert provider.subscriptions == [STATIC_DOC]
        tools = {tool.name: tool for tool in await provider.get_tools()}
        assert "Changed since last read" not in tools["read_resource"].description
        await tools["toggle-subscriber-updates"].invoke({})
        await wait_until_async(lambda: STATIC_DOC in provider.updated_resources, "the resource update")
        await tools["toggle-subscriber-updates"].invoke({})  # off: no update arrives after this one
        tools = {tool.name: tool for tool in await provider.get_tools()}
        assert f"Changed since last read (read again for the current content): {STATIC_DOC}" in (
            tools["read_resource"].description
        )
        await tools["read_resource"].invoke({"uri": STATIC_DOC})
        assert STATIC_DOC not in provider.updated_resources
        await provider.unsubscribe_resource(STATIC_DOC)
        assert provider.subscriptions == []


# -- prompts -----------------------------------------------------------------------------------


async def test_prompts_become_messages(everything: MCPToolProvider) -> None:
    prompts = {prompt.name: prompt for prompt in await everything.list_prompts()}
    assert {"simple-prompt", "args-prompt"} <= set(prompts)
    assert [a.name for a in prompts["args-prompt"].arguments or []] == ["city", "state"]
    messages = await everything.get_prompt("args-prompt", {"city": "Paris", "state": "Texas"})
    assert [(m.role, m.content) for m in messages] == [("user", "What's weather in Paris, Texas?")]


# -- roots -------------------------------------------------------------------------------------


async def test_roots_are_declared_sent_and_changed(everything: MCPToolProvider, tmp_path: Path) -> None:
    tools = {tool.name: tool for tool in await everything.get_tools()}
    # server-everything registers this tool only for clients that declare the roots capability.
    first = await tools["get-roots-list"].invoke({})
    [(uri, _)] = everything.roots
    assert uri in first
    other = tmp_path / "other-project"
    other.mkdir()
    await everything.set_roots([str(other)])

    # The server asks again (`roots/list`) when told they changed; poll until it has.
    async with asyncio.timeout(PATIENCE):
        while other.as_uri() not in (listed := await tools["get-roots-list"].invoke({})):
            await asyncio.sleep(0.05)
    assert uri not in listed


# -- logging -----------------------------------------------------------------------------------


async def test_server_logs_are_kept_and_logged(everything: MCPToolProvider) -> None:
    tools = {tool.name: tool for tool in await everything.get_tools()}
    started = await tools["toggle-simulated-logging"].invoke({})
    try:
        assert started.startswith("Started")
        wait_for = len(everything.log_records) + 1

        await wait_until_async(
            lambda: len(everything.log_records) >= wait_for, "a log notification from server-everything"
        )
        record = everything.log_records[-1]
        assert record.level and record.data is not None
    finally:
        await tools["toggle-simulated-logging"].invoke({})  # stop it


# -- progress and cancellation -----------------------------------------------------------------


async def test_progress_keeps_a_long_call_alive_and_becomes_events() -> None:
    # Progress reports become `tool.progress` events of the running call, in order.
    # progress_interval=0: every report an event (coalescing: test_mcp_hostile.py)
    config = server_config(
        call_timeout=PATIENCE / 4, max_call_duration=PATIENCE, allow=["steps"], progress_interval=0
    )
    script = [call("steps", count=4, pause=0.2), reply("finished")]
    async with MCPToolProvider(config) as provider:
        with ScriptedOpenAIServer(script) as srv:
            agent, events = _agent_run(srv, provider)
            result = await agent.run({"messages": [human("take your time")]})
    assert result.final_answer == "finished"
    progress = [e.data for e in events if e.type == ev.TOOL_PROGRESS]
    assert [(p["progress"], p["total"], p["message"]) for p in progress] == [
        (1, 4, "step 1"),
        (2, 4, "step 2"),
        (3, 4, "step 3"),
        (4, 4, "step 4"),
    ]
    assert all(p["tool"] == "steps" and p["server"] == "test" for p in progress)


@needs_everything
async def test_server_everythings_long_running_operation_reports_progress() -> None:
    tool = "trigger-long-running-operation"
    script = [call(tool, duration=1, steps=4), reply("the operation finished")]
    options = {"call_timeout": PATIENCE, "max_call_duration": PATIENCE, "progress_interval": 0}
    async with everything_server(allow=[tool], **options) as provider:
        with ScriptedOpenAIServer(script) as srv:
            agent, events = _agent_run(srv, provider)
            result = await agent.run({"messages": [human("run the long operation")]})
    assert result.final_answer == "the operation finished"
    progress = [e.data for e in events if e.type == ev.TOOL_PROGRESS]
    assert [(p["progress"], p["total"]) for p in progress] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert all(p["tool"] == tool and p["server"] == "ev" for p in progress)


async def test_progress_extends_the_silence_bound_not_the_whole_call() -> None:
    # Each gap (0.3 s) is shorter than call_timeout (1 s) but the call (2.4 s) is longer: it
    # succeeds. Under load a gap can stretch; the assertion is on the outcome, not on timing.
    config = server_config(call_timeout=1.0, max_call_duration=PATIENCE)
    async with MCPToolProvider(config) as provider:
        text = await provider.call("steps", {"count": 8, "pause": 0.3})
    assert text == "done after 8 steps"


async def test_a_silent_call_times_out_and_is_cancelled_on_the_server(tmp_path: Path) -> None:
    marker = tmp_path / "cancelled"
    config = server_config(call_timeout=1.0, allow=["hang"])
    script = [call("hang", marker=str(marker)), reply("gave up")]
    async with MCPToolProvider(config) as provider:
        with ScriptedOpenAIServer(script) as srv:
            agent, _ = _agent_run(srv, provider)
            result = await agent.run({"messages": [human("wait forever")]})
            observation = next(m["content"] for m in srv.requests[-1]["messages"] if m["role"] == "tool")
        assert "did not answer tool 'hang' or report its progress for call_timeout=1 s" in observation
        # The server was told (`notifications/cancelled`): its handler was interrupted.
        wait_until(lambda: marker.exists(), "the server to see the call cancelled")
    assert result.final_answer == "gave up"
    assert marker.read_text() == "cancelled"


async def test_a_halted_run_cancels_its_call_on_the_server(tmp_path: Path) -> None:
    """The run is cancelled (a halt, `Agent.aclose`, a server's Stop) while the server works on
    a call: the server is told (`notifications/cancelled`), not left working for nobody."""
    marker, started = tmp_path / "cancelled", tmp_path / "started"
    config = server_config(call_timeout=PATIENCE, allow=["hang"])
    async with MCPToolProvider(config) as provider:
        with ScriptedOpenAIServer([call("hang", marker=str(marker), started=str(started))]) as srv:
            agent, _ = _agent_run(srv, provider)
            run = asyncio.create_task(agent.run({"messages": [human("wait forever")]}))
            await wait_until_async(started.exists, "the server to start the call")
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
        await wait_until_async(marker.exists, "the server to see the call cancelled")
        assert marker.read_text() == "cancelled"


async def test_without_a_tool_call_context_progress_is_harmless() -> None:
    async with MCPToolProvider(server_config()) as provider:
        assert await provider.call("steps", {"count": 2, "pause": 0.01}) == "done after 2 steps"


for _test in (
    test_resources_listed_and_read_from_python,
    test_the_model_reads_resources_through_one_tool,
    test_reading_an_unknown_resource_is_an_observation,
    test_prompts_become_messages,
    test_roots_are_declared_sent_and_changed,
    test_server_logs_are_kept_and_logged,
):
    needs_everything(_test)


@needs_everything
async def test_with_tasks_never_a_tool_that_requires_them_is_not_offered_and_says_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with everything_server(tasks="never") as provider:
        names = {tool.name for tool in await provider.get_tools()}
    assert "get-sum" in names and "simulate-research-query" not in names
    why = "'simulate-research-query' requires task-augmented execution (MCP tasks) and tasks: never"
    assert why in caplog.text


# -- sampling ----------------------------------------------------------------------------------


def _sampling_model(seen: list[dict[str, Any]]) -> Any:
    """The agent calls the sampling tool, then answers with its result; a request without tools
    is the server's sampling request, answered with a known text and usage."""

    def model(request: dict[str, Any]) -> Any:
        if "tools" not in request:
            seen.append(request)
            return reply("sampled words", usage=Usage(prompt_tokens=30, completion_tokens=7))
        tool_messages = [m for m in request["messages"] if m["role"] == "tool"]
        if not tool_messages:
            return call("trigger-sampling-request", prompt="a haiku", maxTokens=500)
        return reply(tool_messages[-1]["content"], usage=Usage(prompt_tokens=100, completion_tokens=20))

    return model


@needs_everything
async def test_an_allowed_server_samples_the_agents_model_and_the_tokens_count() -> None:
    seen: list[dict[str, Any]] = []
    provider = everything_server(
        sampling="allow",
        sampling_max_tokens=50,
        allow=["trigger-sampling-request"],
    )
    async with provider:
        with ScriptedOpenAIServer(_sampling_model(seen)) as srv:
            agent, events = _agent_run(srv, provider)
            result = await agent.run({"messages": [human("sample something")]})
            requests = list(srv.requests)
    assert result.status == "success"
    assert "sampled words" in (result.final_answer or "")
    # The server's request reached the model as asked, its maxTokens capped by the config.
    [sampling] = seen
    assert sampling["messages"][0] == {"role": "system", "content": "You are a helpful test server."}
    assert "a haiku" in sampling["messages"][1]["content"]
    assert sampling["max_tokens"] == 50
    # Usage: the agent's two calls plus the server's one, as the model server reported them.
    assert len(requests) == 3
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (
        DEFAULT_USAGE.prompt_tokens + 30 + 100,
        DEFAULT_USAGE.completion_tokens + 7 + 20,
    )
    [event] = [e.data for e in events if e.type == ev.MCP_SAMPLING]
    assert event["status"] == "answered" and event["max_tokens"] == 500 and event["server"] == "ev"


@needs_everything
async def test_sampling_is_off_by_default_so_the_server_offers_no_sampling_tool() -> None:
    async with everything_server() as provider:
        names = {tool.name for tool in await provider.get_tools()}
    assert "trigger-sampling-request" not in names and "get-sum" in names


# -- elicitation -------------------------------------------------------------------------------


@needs_everything
async def test_a_server_asks_the_user_and_the_answer_reaches_it() -> None:
    provider = everything_server(
        elicitation="ask",
        allow=["trigger-elicitation-request"],
    )
    async with provider:
        tool = next(t for t in await provider.get_tools() if t.name == "trigger-elicitation-request")
        call_task = asyncio.create_task(tool.invoke({}))
        [request] = await wait_until_async(provider.pending_elicitations, "the server's question")
        assert request.server == "ev" and request.message.startswith("Please provide inputs")
        assert request.requested_schema["required"] == ["name"]
        # Content the schema refuses is refused here, and the question stays open.
        with pytest.raises(ElicitationError, match="name: required key is missing"):
            provider.respond(request.id, "accept", {"check": True})
        with pytest.raises(ElicitationError, match="no pending elicitation 'nope'"):
            provider.respond("nope", "decline")
        assert provider.pending_elicitations() == [request]
        provider.respond(request.id, "accept", {"name": "Ada Lovelace", "check": True})
        async with asyncio.timeout(PATIENCE):
            text = await call_task
    assert "User provided the requested information" in text and "- Name: Ada Lovelace" in text
    assert provider.pending_elicitations() == []


@needs_everything
async def test_an_unanswered_question_is_cancelled_after_its_timeout_and_never_hangs() -> None:
    provider = everything_server(
        elicitation="ask",
        elicitation_timeout=0.5,
        allow=["trigger-elicitation-request"],
    )
    async with provider:
        tool = next(t for t in await provider.get_tools() if t.name == "trigger-elicitation-request")
        async with asyncio.timeout(PATIENCE):
            text = await tool.invoke({})
    assert "User cancelled the elicitation dialog" in text


@needs_everything
async def test_a_handler_answers_in_code_and_events_tell_the_run() -> None:
    async def decline(request: ElicitationRequest) -> ElicitationAnswer:
        return ElicitationAnswer(action="decline")

    provider = everything_server(
        elicitation="ask",
        allow=["trigger-elicitation-request"],
    )
    provider.elicitations.handler = decline
    script = [call("trigger-elicitation-request"), reply("they said no")]
    async with provider:
        with ScriptedOpenAIServer(script) as srv:
            agent, events = _agent_run(srv, provider)
            result = await agent.run({"messages": [human("ask them")]})
            observation = next(m["content"] for m in srv.requests[-1]["messages"] if m["role"] == "tool")
    assert result.final_answer == "they said no"
    assert "User declined to provide the requested information" in observation
    kinds = [(e.type, e.data.get("action")) for e in events if e.type.startswith("elicitation.")]
    assert kinds == [(ev.ELICITATION_REQUESTED, None), (ev.ELICITATION_RESOLVED, "decline")]


async def test_model_hints_choose_among_the_allowed_sampling_models() -> None:
    """The request's model hints pick an allowed model by name (the spec's substring rule); no
    match, or no hint, falls back to the first allowed; without a list the agent's model answers.
    The project's SDK server sends the hints (server-everything sends none)."""
    with ScriptedOpenAIServer(lambda request: reply("hello")) as srv:
        for models, hint, expected in [
            (["small-model", "big-Claude-model"], "claude", "big-Claude-model"),
            (["small-model", "big-Claude-model"], "gemini", "small-model"),
            (["small-model", "big-Claude-model"], "", "small-model"),
            ([], "claude", srv.client().model),
        ]:
            async with MCPToolProvider(server_config(sampling="allow", sampling_models=models)) as provider:
                provider.use_model_client(srv.client())
                tools = {tool.name: tool for tool in await provider.get_tools()}
                assert await tools["ask_model"].invoke({"hint": hint}) == f"{expected} said hello", models
        assert [request["model"] for request in srv.requests] == [
            "big-Claude-model",
            "small-model",
            "small-model",
            srv.client().model,
        ]
