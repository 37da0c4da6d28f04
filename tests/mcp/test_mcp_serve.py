"""`jianmu-like mcp serve`: an agent file offered to MCP clients as one tool, driven by the
official SDK's own `ClientSession` over stdio (the command in a subprocess) and over streamable
HTTP (the app in process, so a cancelled run's status can be read), with the agent's model the
scripted OpenAI-compatible server over real HTTP."""

from __future__ import annotations

import base64
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
from mcp.client.client import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from jianmu_like.cli._serve import agent_factory
from jianmu_like.server._mcp_server import AgentTool, http_app
from jianmu_like.server._runs import RunRegistry
from jianmu_like.testing import (
    PATIENCE,
    ScriptedOpenAIServer,
    call,
    reply,
    wait_until,
    wait_until_async,
)
from tests.mcp.everything import needs_everything
from tests.server.guarded_agent import EFFECTS, environment
from tests.server.sse_live import live_server

pytestmark = pytest.mark.anyio

AGENT = """\
kind: react
name: Careful
description: Deletes files, carefully.
tools: [calculator, "{module}:delete_file"]
guard:
  require_approval:
    tools: [delete_file]
"""
TOKEN = "mcp-serve-test-token"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def responder(body: dict[str, Any]) -> Any:
    """After a tool's result, report it; "slow" hangs; "delete X" deletes X; else calculate."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return reply(f"result: {last['content']}")
    text = str(last["content"])
    if text == "slow":
        return reply("too late", delay=60)
    if text.startswith("delete "):
        return call("delete_file", path=text.removeprefix("delete "))
    return call("calculator", expression=text)


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(responder) as srv:
        yield srv


def write_agent(folder: Path, module: str) -> Path:
    (folder / f"{module}.py").write_text(EFFECTS)
    agent = folder / "agent.yaml"
    agent.write_text(AGENT.format(module=module))
    return agent


def deleted(folder: Path) -> list[str]:
    log = folder / "effects.log"
    return log.read_text().splitlines() if log.exists() else []


def answering(action: str, content: dict[str, Any] | None = None) -> Any:
    """An elicitation callback answering every question so, recording the questions."""
    asked: list[types.ElicitRequestParams] = []

    async def answer(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    answer.asked = asked  # type: ignore[attr-defined]
    return answer


@asynccontextmanager
async def stdio_session(
    folder: Path, model: ScriptedOpenAIServer, elicit: Any = None, timeout: float = 20
) -> AsyncIterator[ClientSession]:
    agent = write_agent(folder, "effects")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "jianmu_like", "mcp", "serve", str(agent), "--question-timeout", str(timeout)],
        env=environment(model.base_url),
        cwd=str(folder),
    )
    with anyio.fail_after(PATIENCE * 2):
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, elicitation_callback=elicit) as session,
        ):
            await session.initialize()
            yield session


def text_of(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


# ---------------------------------------------------------------------------------------- stdio
async def test_stdio_lists_the_agent_as_a_tool_and_streams_progress_per_iteration(
    tmp_path: Path, model: ScriptedOpenAIServer
) -> None:
    notes: list[tuple[float, str | None]] = []

    async def progress(value: float, _total: float | None, message: str | None) -> None:
        notes.append((value, message))

    async with stdio_session(tmp_path, model) as session:
        tools = (await session.list_tools()).tools
        assert [t.name for t in tools] == ["Careful"]
        assert tools[0].description == "Deletes files, carefully."
        assert tools[0].input_schema["required"] == ["question"]
        result = await session.call_tool("Careful", {"question": "2 + 3"}, progress_callback=progress)
    assert not result.is_error, text_of(result)
    assert text_of(result) == "result: 5"
    messages = [m for _, m in notes]
    assert messages[:4] == [
        "iteration 1: thinking",
        "iteration 1: calling calculator",
        "iteration 1: calculator done",
        "iteration 2: thinking",
    ], messages
    values = [v for v, _ in notes]
    assert values == sorted(set(values))  # strictly increasing, as the spec requires


async def test_stdio_an_approval_accepted_through_elicitation_runs_the_tool(
    tmp_path: Path, model: ScriptedOpenAIServer
) -> None:
    elicit = answering("accept", {"approve": True})
    async with stdio_session(tmp_path, model, elicit) as session:
        result = await session.call_tool("Careful", {"question": "delete notes.txt"})
    assert text_of(result) == "result: deleted notes.txt"
    assert deleted(tmp_path) == ["delete notes.txt"]
    [question] = elicit.asked
    assert "delete_file" in question.message and "notes.txt" in question.message
    assert question.requested_schema["properties"]["approve"]["type"] == "boolean"


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_stdio_a_declined_approval_denies_the_call_and_says_so(
    tmp_path: Path, model: ScriptedOpenAIServer, action: str
) -> None:
    async with stdio_session(tmp_path, model, answering(action)) as session:
        result = await session.call_tool("Careful", {"question": "delete notes.txt"})
    assert deleted(tmp_path) == []
    assert f"answered '{action}'" in text_of(result), text_of(result)


async def test_stdio_an_unanswered_approval_is_denied_after_the_timeout(
    tmp_path: Path, model: ScriptedOpenAIServer
) -> None:
    answered = anyio.Event()

    async def never(_context: Any, _params: types.ElicitRequestParams) -> types.ElicitResult:
        await answered.wait()  # released when the test ends
        return types.ElicitResult(action="accept", content={"approve": True})

    async with stdio_session(tmp_path, model, never, timeout=0.5) as session:
        result = await session.call_tool("Careful", {"question": "delete notes.txt"})
        answered.set()
    assert deleted(tmp_path) == []
    assert "gave no answer within 0.5 s" in text_of(result), text_of(result)


async def test_stdio_a_client_that_cannot_elicit_gets_the_call_denied(
    tmp_path: Path, model: ScriptedOpenAIServer
) -> None:
    async with stdio_session(tmp_path, model) as session:
        result = await session.call_tool("Careful", {"question": "delete notes.txt"})
    assert deleted(tmp_path) == []
    assert "declared no elicitation capability" in text_of(result)


async def test_stdio_bad_arguments_are_a_tool_error(tmp_path: Path, model: ScriptedOpenAIServer) -> None:
    async with stdio_session(tmp_path, model) as session:
        missing = await session.call_tool("Careful", {})
        extra = await session.call_tool("Careful", {"question": "1", "mode": "fast"})
    assert missing.is_error and "`question`" in text_of(missing)
    assert extra.is_error and "'mode'" in text_of(extra)


# ----------------------------------------------------------------------------- streamable HTTP
@pytest.fixture(scope="module")
def http_served(
    tmp_path_factory: pytest.TempPathFactory, model: ScriptedOpenAIServer
) -> Iterator[tuple[str, RunRegistry]]:
    folder = tmp_path_factory.mktemp("mcp-serve-http")
    agent = write_agent(folder, "mcp_serve_http_effects")
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_BASE_URL", model.base_url)
    mp.setenv("OPENAI_API_KEY", "x")
    try:
        factory, cleanups, _ = agent_factory(str(agent))
        registry = RunRegistry(factory)
        tool = AgentTool(registry, name="Careful", description="", question_timeout=20)
        with live_server(http_app(tool, token=TOKEN, on_shutdown=cleanups)) as url:
            yield url, registry
    finally:
        mp.undo()


@asynccontextmanager
async def http_session(url: str, token: str = TOKEN, elicit: Any = None) -> AsyncIterator[ClientSession]:
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    with anyio.fail_after(PATIENCE * 2):
        async with (
            client,
            streamable_http_client(f"{url}/mcp", http_client=client) as (read, write),
            ClientSession(read, write, elicitation_callback=elicit) as session,
        ):
            await session.initialize()
            yield session


async def test_http_calls_the_agent_behind_the_token(http_served: tuple[str, RunRegistry]) -> None:
    url, _ = http_served
    async with http_session(url) as session:
        assert [t.name for t in (await session.list_tools()).tools] == ["Careful"]
        result = await session.call_tool("Careful", {"question": "6 * 7"})
    assert text_of(result) == "result: 42"


def test_http_without_the_token_is_refused(http_served: tuple[str, RunRegistry]) -> None:
    url, _ = http_served
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    for given in ({}, {"Authorization": "Bearer wrong"}):
        answer = httpx.post(f"{url}/mcp", json=body, headers={**headers, **given}, timeout=PATIENCE)
        assert answer.status_code == 401, answer.text
        assert "bearer token" in answer.text and TOKEN not in answer.text


def test_http_a_foreign_host_or_origin_is_refused(http_served: tuple[str, RunRegistry]) -> None:
    url, _ = http_served
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {TOKEN}"}
    rebound = httpx.post(
        f"{url}/mcp", json=body, headers={**headers, "Host": "evil.example:80"}, timeout=PATIENCE
    )
    assert rebound.status_code == 421 and "evil.example" in rebound.text
    page = httpx.post(
        f"{url}/mcp", json=body, headers={**headers, "Origin": "https://evil.example"}, timeout=PATIENCE
    )
    assert page.status_code == 403 and "evil.example" in page.text


async def test_http_cancelling_the_call_cancels_the_run(http_served: tuple[str, RunRegistry]) -> None:
    url, registry = http_served
    before = set(registry.runs)
    async with http_session(url) as session:
        with anyio.move_on_after(PATIENCE) as scope:
            async with anyio.create_task_group() as group:

                async def ask() -> None:
                    await session.call_tool("Careful", {"question": "slow"})

                group.start_soon(ask)
                await anyio.to_thread.run_sync(
                    lambda: wait_until(lambda: set(registry.runs) - before, "the run to start")
                )
                group.cancel_scope.cancel()  # the SDK sends notifications/cancelled
        assert not scope.cancelled_caught
        [run_id] = set(registry.runs) - before
        record = registry.runs[run_id]
        await anyio.to_thread.run_sync(lambda: wait_until(lambda: record.finished, "the run to end"))
        assert record.status == "cancelled"
        # the session still answers
        assert text_of(await session.call_tool("Careful", {"question": "1 + 1"})) == "result: 2"


async def test_http_an_approval_reaches_the_caller_as_an_elicitation(
    http_served: tuple[str, RunRegistry],
) -> None:
    url, _ = http_served
    notes: list[str | None] = []

    async def progress(_value: float, _total: float | None, message: str | None) -> None:
        notes.append(message)

    elicit = answering("accept", {"approve": False, "reason": "not that file"})
    async with http_session(url, elicit=elicit) as session:
        result = await session.call_tool(
            "Careful", {"question": "delete keep.txt"}, progress_callback=progress
        )
    assert len(elicit.asked) == 1 and "keep.txt" in elicit.asked[0].message, text_of(result)
    assert "not that file" in text_of(result)  # the person's reason, told to the model
    assert "iteration 1: delete_file denied" in notes


async def test_artifacts_come_back_as_embedded_resources() -> None:
    from jianmu_like import AgentTemplate, ReActConfig, create_react_node
    from jianmu_like.testing import scripted_client
    from tests.server import artifact_agent as made

    root = create_react_node(
        model_client=scripted_client(made.responder),
        tools=[made.chart, made.photo, made.table],
        config=ReActConfig(max_iterations=3),
    )
    registry = RunRegistry(AgentTemplate.from_prototype(root, log_events=False).conversation)
    with live_server(http_app(AgentTool(registry, name="Artist", description=""), token=None)) as url:
        async with http_session(url) as session:
            result = await session.call_tool("Artist", {"question": "make them"})
            # Each one can be read again (`resources/read`) while the server holds the run.
            listed = (await session.list_resources()).resources
            again = {str(r.uri): (await session.read_resource(str(r.uri))).contents[0] for r in listed}
            with pytest.raises(MCPError, match="no run 'gone'"):
                await session.read_resource("jianmu://runs/gone/artifacts/0")
            with pytest.raises(MCPError, match="run artifacts only"):
                await session.read_resource("file:///etc/passwd")
    assert text_of(result) == "made them"
    resources = [block for block in result.content if isinstance(block, types.EmbeddedResource)]
    by_name = {block.meta["name"]: block.resource for block in resources if block.meta}
    assert set(by_name) == {"chart.html", "dot.png", "cities.csv"}
    chart, photo, table = by_name["chart.html"], by_name["dot.png"], by_name["cities.csv"]
    assert isinstance(chart, types.TextResourceContents) and chart.text == made.HTML
    assert isinstance(table, types.TextResourceContents) and table.text == made.CSV
    assert isinstance(photo, types.BlobResourceContents) and base64.b64decode(photo.blob) == made.PNG
    assert photo.mime_type == "image/png" and str(photo.uri).startswith("jianmu://runs/")
    assert sorted(r.name for r in listed) == ["chart.html", "cities.csv", "dot.png"]
    assert again == {str(block.uri): block for block in by_name.values()}


INPUTS_AGENT = """\
kind: tree
output: main
inputs: [city]
tree:
  sequence:
    children:
      - react: {namespace: main, input: "In {city}: {task}"}
"""


async def test_the_agent_files_inputs_are_arguments_of_the_tool(tmp_path: Path) -> None:
    """Declared `inputs:` join `question` in the tool's input schema, each required, and reach
    the run's templates."""
    (tmp_path / "agent.yaml").write_text(INPUTS_AGENT)
    with ScriptedOpenAIServer(lambda body: reply(f"heard: {body['messages'][-1]['content']}")) as srv:
        mp = pytest.MonkeyPatch()
        mp.setenv("OPENAI_BASE_URL", srv.base_url)
        mp.setenv("OPENAI_API_KEY", "x")
        try:
            factory, cleanups, _ = agent_factory(str(tmp_path / "agent.yaml"))
            tool = AgentTool(RunRegistry(factory), name="Local", description="", inputs=["city"])
            with live_server(http_app(tool, token=None, on_shutdown=cleanups)) as url:
                async with http_session(url) as session:
                    [listed] = (await session.list_tools()).tools
                    answered = await session.call_tool("Local", {"question": "rain?", "city": "Oslo"})
                    missing = await session.call_tool("Local", {"question": "rain?"})
        finally:
            mp.undo()
    assert listed.input_schema["required"] == ["question", "city"]
    assert listed.input_schema["properties"]["city"]["type"] == "string"
    assert text_of(answered) == "heard: In Oslo: rain?", text_of(answered)
    assert missing.is_error and "`city` (a string each) required" in text_of(missing)


def test_the_command_refuses_a_public_bind_without_a_token_and_a_bad_timeout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from jianmu_like.cli._main import main

    monkeypatch.delenv("JIANMU_SERVER_TOKEN", raising=False)
    preset = Path(__file__).resolve().parents[2] / "presets" / "react.yaml"
    assert main(["mcp", "serve", str(preset), "--http", "--host", "0.0.0.0"]) == 2
    assert "refusing to serve on 0.0.0.0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["mcp", "serve", str(preset), "--question-timeout", "0"])
    assert "positive number of seconds" in capsys.readouterr().err


@needs_everything
@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
async def test_a_question_of_the_agent_s_own_mcp_server_is_relayed_to_the_caller(revision: str) -> None:
    """Asked mid-call (2025-11-25) or as an `input_required` round (2026-07-28)."""
    from jianmu_like import Agent, create_react_node
    from tests.server import test_mcp_elicitations as human

    script = [call("trigger-elicitation-request"), reply("thanks")]
    elicit = answering("accept", {"name": "Ada Lovelace", "check": True})
    with ScriptedOpenAIServer(script) as srv:

        def factory() -> Agent:
            provider = human.everything(elicitation="ask", allow=["trigger-elicitation-request"])
            return Agent(create_react_node(model_client=srv.client(), tool_providers=[provider]))

        registry = RunRegistry(factory)
        with live_server(http_app(AgentTool(registry, name="Asker", description=""), token=None)) as url:
            if revision == "2026-07-28":
                async with modern_http(url, elicit) as client:
                    result = await client.call_tool("Asker", {"question": "ask them"})
            else:
                async with http_session(url, elicit=elicit) as session:
                    result = await session.call_tool("Asker", {"question": "ask them"})
        observation = next(m["content"] for m in srv.requests[-1]["messages"] if m["role"] == "tool")
    assert text_of(result) == "thanks"
    [question] = elicit.asked
    assert question.requested_schema["required"] == ["name"]
    assert "- Name: Ada Lovelace" in observation  # the caller's answer reached the agent's server


# ------------------------------------------------------------------ revision 2026-07-28 rounds
@asynccontextmanager
async def modern_stdio(folder: Path, model: ScriptedOpenAIServer, elicit: Any) -> AsyncIterator[Client]:
    """The SDK's own client, pinned to 2026-07-28 (no handshake: every question an
    `input_required` round its driver answers and retries), against `mcp serve` over stdio."""
    agent = write_agent(folder, "effects")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "jianmu_like", "mcp", "serve", str(agent)],
        env=environment(model.base_url),
        cwd=str(folder),
    )
    with anyio.fail_after(PATIENCE * 2):
        async with Client(params, mode="2026-07-28", elicitation_callback=elicit) as client:
            yield client


async def test_a_2026_07_28_client_approves_through_an_input_required_round_over_stdio(
    tmp_path: Path, model: ScriptedOpenAIServer
) -> None:
    elicit = answering("accept", {"approve": True})
    async with modern_stdio(tmp_path, model, elicit) as client:
        assert client.session.protocol_version == "2026-07-28"
        result = await client.call_tool("Careful", {"question": "delete notes.txt"})
    assert text_of(result) == "result: deleted notes.txt", text_of(result)
    assert deleted(tmp_path) == ["delete notes.txt"]
    [question] = elicit.asked
    assert "delete_file" in question.message and "notes.txt" in question.message


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_2026_07_28_client_that_declines_gets_the_call_denied_over_stdio(
    tmp_path: Path, model: ScriptedOpenAIServer, action: str
) -> None:
    async with modern_stdio(tmp_path, model, answering(action)) as client:
        result = await client.call_tool("Careful", {"question": "delete notes.txt"})
    assert deleted(tmp_path) == []
    assert f"answered '{action}'" in text_of(result), text_of(result)


async def test_a_2026_07_28_client_that_cannot_elicit_gets_the_call_denied(
    tmp_path: Path, model: ScriptedOpenAIServer
) -> None:
    async with modern_stdio(tmp_path, model, None) as client:
        result = await client.call_tool("Careful", {"question": "delete notes.txt"})
    assert deleted(tmp_path) == []
    assert "declared no elicitation capability" in text_of(result), text_of(result)


@asynccontextmanager
async def modern_http(url: str, elicit: Any) -> AsyncIterator[Client]:
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    with anyio.fail_after(PATIENCE * 2):
        async with (
            client,
            Client(
                streamable_http_client(f"{url}/mcp", http_client=client),
                mode="2026-07-28",
                elicitation_callback=elicit,
            ) as session,
        ):
            yield session


async def test_a_2026_07_28_client_approves_or_declines_over_http(
    http_served: tuple[str, RunRegistry],
) -> None:
    url, _ = http_served
    folder = Path(sys.modules["mcp_serve_http_effects"].__file__ or "").parent
    before = deleted(folder)
    async with modern_http(url, answering("accept", {"approve": True})) as client:
        approved = await client.call_tool("Careful", {"question": "delete modern.txt"})
    async with modern_http(url, answering("accept", {"approve": False, "reason": "keep it"})) as client:
        refused = await client.call_tool("Careful", {"question": "delete kept.txt"})
    assert text_of(approved) == "result: deleted modern.txt", text_of(approved)
    assert "keep it" in text_of(refused), text_of(refused)
    assert deleted(folder)[len(before) :] == ["delete modern.txt"]


def in_process(model: ScriptedOpenAIServer, folder: Path, timeout: float) -> AgentTool:
    agent = write_agent(folder, f"effects_{folder.name.replace('-', '_')}")
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_BASE_URL", model.base_url)
    mp.setenv("OPENAI_API_KEY", "x")
    mp.chdir(folder)
    try:
        factory, _cleanups, _ = agent_factory(str(agent))
    finally:
        mp.undo()
    return AgentTool(RunRegistry(factory), name="Careful", description="", question_timeout=timeout)


async def test_a_round_left_unanswered_is_denied_after_the_timeout_and_a_late_retry_says_so(
    tmp_path: Path, model: ScriptedOpenAIServer
) -> None:
    """The run waits suspended between rounds; unanswered, the approval is denied at the
    question timeout (the run goes on), and the client's late retry gets the run's answer."""
    tool = in_process(model, tmp_path, timeout=0.5)
    released = anyio.Event()
    between: list[str] = []

    async def late(_context: Any, _params: types.ElicitRequestParams) -> types.ElicitResult:
        between.extend(record.status for record in tool.registry.runs.values())
        await released.wait()
        return types.ElicitResult(action="accept", content={"approve": True})

    async def release_when_denied() -> None:
        def denied() -> bool:
            return any(record.decisions for record in tool.registry.runs.values())

        await wait_until_async(denied, "the unanswered approval to be denied")
        released.set()

    with anyio.fail_after(PATIENCE * 2):
        async with (
            Client(tool.server(), mode="2026-07-28", elicitation_callback=late) as client,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(release_when_denied)
            result = await client.call_tool("Careful", {"question": "delete notes.txt"})
    assert between == ["suspended"]  # between rounds the run waits, no model or tool call open
    assert "gave no answer within 0.5 s" in text_of(result), text_of(result)
    assert deleted(tmp_path) == []
    await tool.registry.aclose()


async def test_request_state_is_single_use_and_cannot_be_forged(
    tmp_path: Path, model: ScriptedOpenAIServer
) -> None:
    tool = in_process(model, tmp_path, timeout=20)
    approve = {"approval-0": types.ElicitResult(action="accept", content={"approve": True})}
    arguments = {"question": "delete notes.txt"}
    with anyio.fail_after(PATIENCE * 2):
        # the callback only declares the capability: the rounds are driven by hand here
        declares = answering("decline")
        async with Client(tool.server(), mode="2026-07-28", elicitation_callback=declares) as client:
            session = client.session
            first = await session.call_tool("Careful", arguments, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult) and first.request_state
            assert list(first.input_requests or {}) == ["approval-0"]
            with pytest.raises(MCPError, match="Invalid or expired requestState"):
                await session.call_tool("Careful", arguments, input_responses=approve, request_state="forged")
            with pytest.raises(MCPError, match="Invalid or expired requestState"):  # bound to its call
                await session.call_tool(
                    "Careful",
                    {"question": "other"},
                    input_responses=approve,
                    request_state=first.request_state,
                )
            done = await session.call_tool(
                "Careful", arguments, input_responses=approve, request_state=first.request_state
            )
            assert isinstance(done, types.CallToolResult)
            assert text_of(done) == "result: deleted notes.txt", text_of(done)
            with pytest.raises(MCPError, match="answered already"):
                await session.call_tool(
                    "Careful", arguments, input_responses=approve, request_state=first.request_state
                )
    await tool.registry.aclose()


async def test_the_project_s_own_2026_07_28_client_answers_the_rounds(
    tmp_path: Path, model: ScriptedOpenAIServer
) -> None:
    """`tools/mcp` negotiates 2026-07-28 with `mcp serve` (stdio) and answers its rounds through
    its elicitation handler: approved, the tool runs; declined, the call is denied saying so."""
    from jianmu_like.tools import MCPToolProvider
    from jianmu_like.tools._questions import QuestionAnswer

    agent = write_agent(tmp_path, "effects")
    config = {
        "name": "served",
        "command": sys.executable,
        "args": ["-m", "jianmu_like", "mcp", "serve", str(agent)],
        "env": environment(model.base_url),
        "cwd": str(tmp_path),
        "call_timeout": PATIENCE,
        "elicitation": "ask",
    }
    answers = iter([{"approve": True}, None])

    async def person(_question: Any) -> QuestionAnswer:
        content = next(answers)
        return (
            QuestionAnswer(action="accept", content=content) if content else QuestionAnswer(action="decline")
        )

    async with MCPToolProvider(config) as provider:
        provider.elicitations.handler = person
        assert provider.protocol_version == "2026-07-28"
        assert await provider.call("Careful", {"question": "delete notes.txt"}) == "result: deleted notes.txt"
        denied = await provider.call("Careful", {"question": "delete other.txt"})
    assert "answered 'decline'" in denied, denied
    assert deleted(tmp_path) == ["delete notes.txt"]
