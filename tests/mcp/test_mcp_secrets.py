"""Declared secrets never leave (issue 33.1): an MCP server's `env:` value, quoted by the server
(on stderr before it exits, in a tool's error, in a log notification) raw, URL-encoded or
JSON-escaped, is masked by value in every channel: the CLI's error, a served run's `error` and
SSE `done`, the SSE tool events, `GET .../messages`, the checkpoint, the model's next request,
structlog lines, standard logging and OpenTelemetry spans. Real MCP servers over stdio (the
project's SDK test server), the scripted model server over HTTP, the real CLI."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import yaml
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from jianmu_like import Agent, ReActConfig, create_react_node, human
from jianmu_like._base.config import TelemetryConfig
from jianmu_like.checkpoint import SQLiteCheckpointer
from jianmu_like.server import create_app
from jianmu_like.telemetry.logging import configure_logging
from jianmu_like.telemetry.otel_setup import enable_otel
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, calls, reply
from jianmu_like.tools import MCPToolProvider
from tests.cli.running import jianmu
from tests.mcp.mcp_helpers import SERVER, server_config
from tests.server.sse_live import live_server, read_events

SECRET = 'tok-7Qx/9+"z&Wm4p-leak'
"""Has characters that URL-encoding and JSON-escaping change, and no key-looking prefix: only
redaction by value can catch it."""
FORMS = [SECRET, quote(SECRET, safe=""), json.dumps(SECRET)[1:-1]]


def leaks(text: str) -> list[str]:
    return [form for form in FORMS if form in text]


def leaky_server(**overrides: Any) -> dict[str, Any]:
    """The test server with the secret in its environment (`LEAK_TOKEN`)."""
    return server_config(env={"LEAK_TOKEN": SECRET}, call_timeout=PATIENCE, **overrides)


def failing_server() -> dict[str, Any]:
    """The test server printing the secret on stderr and exiting before the handshake."""
    return leaky_server(args=[str(SERVER), "--leak-stderr", "LEAK_TOKEN"])


LEAK = calls(
    call("leak", variable="LEAK_TOKEN", how="error"), call("leak", variable="LEAK_TOKEN", how="output")
)
"""Two calls quoting the secret: in an error result, and in a plain one."""


def test_the_cli_error_of_a_server_that_prints_its_env_on_stderr(tmp_path: Path) -> None:
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        yaml.safe_dump({"kind": "react", "name": "Leaky", "mcp_servers": {"test": failing_server()}})
    )
    with ScriptedOpenAIServer([reply("never asked")]) as srv:
        done = jianmu(tmp_path, "run", str(agent), "hi", "--no-live", base_url=srv.base_url)
    assert done.returncode == 5, done.stderr
    assert "bad credentials LEAK_TOKEN='***'" in done.stderr  # what the server said, masked
    assert leaks(done.stdout + done.stderr) == []


@contextmanager
def served(server: dict[str, Any], script: list[Any]) -> Iterator[tuple[httpx.Client, ScriptedOpenAIServer]]:
    with ScriptedOpenAIServer(script) as srv:

        def factory() -> Agent:
            config = ReActConfig(tool_selection=False, max_iterations=4)
            node = create_react_node(
                model_client=srv.client(), tool_providers=[MCPToolProvider(server)], config=config
            )
            return Agent(node)

        with live_server(create_app(factory)) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
            yield http, srv


def test_a_served_runs_error_and_done_event_mask_the_servers_stderr() -> None:
    with served(failing_server(), [reply("never asked")]) as (http, _srv):
        run_id = http.post("/api/runs", json={"input": "hi"}).json()["run_id"]
        events = read_events(http, run_id)
        summary = http.get(f"/api/runs/{run_id}")
    done = events[-1]
    assert done[1] == "done" and done[2]["status"] == "failure"
    assert "bad credentials LEAK_TOKEN='***'" in done[2]["error"]
    assert summary.json()["error"] == done[2]["error"]
    assert leaks(json.dumps(events)) == [] and leaks(summary.text) == []


def test_a_tool_error_quoting_the_secret_is_masked_in_events_messages_and_the_next_request() -> None:
    with served(leaky_server(), [LEAK, reply("The server refused.")]) as (http, srv):
        run_id = http.post("/api/runs", json={"input": "use the token"}).json()["run_id"]
        events = read_events(http, run_id)
        messages = http.get(f"/api/runs/{run_id}/messages")
    assert events[-1][2]["status"] == "success"
    tools = [m["content"] for m in messages.json()["messages"] if m["role"] == "tool"]
    assert len(tools) == 2 and tools[0].startswith("Error: ")
    assert all('cannot use LEAK_TOKEN=*** url=*** json="***"' in content for content in tools)
    logs = [d for _, c, d in events if c == "step" and d.get("status") == "log"]
    assert len(logs) >= 2 and all("***" in str(d["data"]) for d in logs)  # the server's log notification
    assert leaks(json.dumps(events)) == []
    assert leaks(messages.text) == []
    assert leaks(json.dumps(srv.requests)) == []  # the model never reads it either


async def test_the_checkpoint_logs_and_spans_never_hold_the_secret(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    exporter = InMemorySpanExporter()
    tracer = TracerProvider()
    tracer.add_span_processor(SimpleSpanProcessor(exporter))
    lines = io.StringIO()
    configure_logging("DEBUG", json=True, stream=lines)
    caplog.set_level(logging.DEBUG, logger="jianmu_like")
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    try:
        async with ScriptedOpenAIServer([LEAK, reply("Refused.")]) as srv:
            provider = MCPToolProvider(leaky_server())
            config = ReActConfig(tool_selection=False, max_iterations=4)
            node = create_react_node(model_client=srv.client(), tool_providers=[provider], config=config)
            agent = Agent(node, checkpointer=store, log_events=True)
            enable_otel(agent, tracer_provider=tracer, config=TelemetryConfig(capture_content=True))
            result = await agent.run({"messages": [human("use the token")]}, thread_id="t")
            await agent.aclose()
            # A server failing to start: its stderr reaches the standard log (DEBUG) and the error.
            broken = Agent(
                create_react_node(
                    model_client=srv.client(), tool_providers=[MCPToolProvider(failing_server())]
                )
            )
            failed = await broken.run({"messages": [human("hi")]})
            await broken.aclose()
    finally:
        configure_logging("WARNING")
    assert result.status == "success" and failed.status == "failure"
    assert "LEAK_TOKEN='***'" in (failed.error or "")
    saved = store.load("t")
    assert saved is not None and "LEAK_TOKEN=***" in json.dumps(saved.state)
    spans = [dict(s.attributes or {}) for s in exporter.get_finished_spans()]
    assert any("***" in json.dumps(a, default=str) for a in spans)
    assert "***" in lines.getvalue()
    assert "bad credentials LEAK_TOKEN='***'" in caplog.text  # the server's stderr, logged at DEBUG
    for text in (json.dumps(saved.state), json.dumps(spans, default=str), lines.getvalue(), caplog.text):
        assert leaks(text) == []
    store.close()


async def test_what_the_sdk_could_not_parse_is_logged_masked(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mcp")
    provider = MCPToolProvider(leaky_server(args=[str(SERVER), "--leak-stdout", "LEAK_TOKEN"]))
    try:
        tools = await provider.get_tools()  # the handshake goes on past the stray line
    finally:
        await provider.close()
    assert tools
    assert "LEAK_TOKEN=***" in caplog.text  # the SDK's parse failure, its traceback included
    assert leaks(caplog.text) == []
