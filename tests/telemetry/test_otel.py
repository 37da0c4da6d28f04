"""OpenTelemetry spans of real runs (the scripted server over HTTP), read with the SDK's
in-memory exporter; and `--otel` on the command line, exporting OTLP/HTTP to a local collector."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from jianmu_like import Agent, AgentTemplate, ReActConfig, ReActState, create_react_node, human, tool
from jianmu_like._base.config import TelemetryConfig
from jianmu_like.cli._common import CliError
from jianmu_like.cli._parser import build_parser
from jianmu_like.cli._serve import traced
from jianmu_like.cli._tracing import start_tracing
from jianmu_like.guard import GuardEnforcer, RequireApproval
from jianmu_like.server import create_app
from jianmu_like.telemetry._otel import OTelSubscriber
from jianmu_like.telemetry.otel_setup import OTelConfigError, enable_otel, span_exporters
from jianmu_like.testing import (
    PATIENCE,
    ScriptedOpenAIServer,
    call,
    calls,
    error_reply,
    fast_resilience,
    reply,
    scripted_client,
)
from jianmu_like.tools.builtin import calculator
from tests.server.sse_live import live_server, read_events

SECRET = "sk-live-abcdefghijklmnop1234"


@tool
def lookup(city: str) -> str:
    """Population of a city."""
    if city == "Atlantis":
        raise ValueError(f"no such city (key {SECRET})")
    return {"Paris": "2.1 million", "Rome": "2.8 million"}.get(city, "unknown")


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


def traced_agent(srv: ScriptedOpenAIServer, exporter: InMemorySpanExporter, **options: Any) -> Agent:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    config = ReActConfig(max_iterations=5, resilience=fast_resilience(max_retries=0))
    root = create_react_node(model_client=srv.client(), tools=[calculator, lookup], config=config, **options)
    agent = Agent(root, state_schema=ReActState, log_events=False)
    enable_otel(agent, tracer_provider=provider, config=TelemetryConfig(capture_content=False))
    return agent


def children(spans: Sequence[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


def only_root(spans: Sequence[ReadableSpan]) -> ReadableSpan:
    roots = [s for s in spans if s.parent is None]
    assert len(roots) == 1, [s.name for s in roots]
    return roots[0]


def exception_of(span: ReadableSpan) -> dict[str, Any]:
    found = [dict(e.attributes or {}) for e in span.events if e.name == "exception"]
    assert found, f"{span.name} recorded no exception"
    return found[-1]


async def test_a_two_iteration_run_is_a_tree_of_genai_spans(exporter: InMemorySpanExporter) -> None:
    script = [
        calls(call("lookup", city="Paris"), call("lookup", city="Rome")),
        reply("Paris 2.1M, Rome 2.8M."),
    ]
    async with ScriptedOpenAIServer(script) as srv:
        agent = traced_agent(srv, exporter)
        result = await agent.run({"messages": [human("Paris and Rome?")]})
    assert result.status == "success"

    spans = exporter.get_finished_spans()
    run = only_root(spans)
    assert run.name == "invoke_agent ReActAgent"
    assert run.attributes is not None
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["jianmu.run_id"] == result.run_id
    assert run.attributes["gen_ai.usage.input_tokens"] == result.usage.prompt_tokens
    assert run.attributes["gen_ai.usage.output_tokens"] == result.usage.completion_tokens
    assert run.attributes["jianmu.run.status"] == "success"
    assert run.status.status_code is StatusCode.OK

    nodes = sorted(children(spans, run), key=lambda s: s.start_time or 0)
    assert [n.name for n in nodes] == ["ReActAgent.LLM", "ReActAgent.Tools", "ReActAgent.LLM"]
    first_llm, tools, second_llm = nodes
    for llm, finish in ((first_llm, "tool_calls"), (second_llm, "stop")):
        (chat,) = children(spans, llm)
        attrs = dict(chat.attributes or {})
        assert chat.name == "chat scripted-model"
        assert attrs["gen_ai.operation.name"] == "chat"
        assert attrs["gen_ai.request.model"] == "scripted-model"
        assert attrs["gen_ai.response.model"] == "scripted-model"
        assert attrs["gen_ai.provider.name"] == attrs["gen_ai.system"] == "openai"
        assert attrs["gen_ai.usage.input_tokens"] == 10 and attrs["gen_ai.usage.output_tokens"] == 5
        assert attrs["gen_ai.response.finish_reasons"] == (finish,)

    # The two parallel calls are sibling spans under the tool node.
    tool_spans = children(spans, tools)
    calls_made = {c.id for m in result.state.messages if m.tool_calls for c in m.tool_calls}
    assert sorted(s.name for s in tool_spans) == ["execute_tool lookup", "execute_tool lookup"]
    for span in tool_spans:
        attrs = dict(span.attributes or {})
        assert attrs["gen_ai.operation.name"] == "execute_tool"
        assert attrs["gen_ai.tool.name"] == "lookup"
        assert attrs["gen_ai.tool.call.id"] in calls_made
        assert "gen_ai.tool.call.arguments" not in attrs  # content only when asked for
        assert span.status.status_code is StatusCode.OK
    assert len({dict(s.attributes or {})["gen_ai.tool.call.id"] for s in tool_spans}) == 2


async def test_a_failing_tool_records_its_exception_without_secrets(exporter: InMemorySpanExporter) -> None:
    script = [call("lookup", city="Atlantis"), reply("No such city.")]
    async with ScriptedOpenAIServer(script) as srv:
        agent = traced_agent(srv, exporter)
        result = await agent.run({"messages": [human("Atlantis?")]})
    assert result.status == "success"

    spans = exporter.get_finished_spans()
    (failed,) = [s for s in spans if s.name == "execute_tool lookup"]
    assert failed.status.status_code is StatusCode.ERROR
    exception = exception_of(failed)
    assert exception["exception.type"] == "ValueError"
    assert "no such city" in str(exception["exception.message"])
    assert dict(failed.attributes or {})["error.type"] == "ValueError"
    dumped = "".join(s.to_json() for s in spans)
    assert SECRET not in dumped and "***" in dumped


async def test_a_failing_model_marks_the_call_the_node_and_the_run(exporter: InMemorySpanExporter) -> None:
    async with ScriptedOpenAIServer([error_reply(400, "bad request: no such model")]) as srv:
        agent = traced_agent(srv, exporter)
        result = await agent.run({"messages": [human("hi")]})
    assert result.status == "failure"

    spans = exporter.get_finished_spans()
    run = only_root(spans)
    (llm,) = children(spans, run)
    (chat,) = children(spans, llm)
    for span in (chat, llm, run):
        assert span.status.status_code is StatusCode.ERROR, span.name
        assert "no such model" in str(exception_of(span)["exception.message"]), span.name
    assert exception_of(chat)["exception.type"] == "ModelCallFailed"
    assert dict(run.attributes or {})["jianmu.termination.reason"] == "model_error"


async def test_a_suspended_run_ends_its_span_saying_so_and_the_resume_is_a_new_span(
    exporter: InMemorySpanExporter,
) -> None:
    script = [call("lookup", city="Paris"), reply("2.1 million.")]
    async with ScriptedOpenAIServer(script) as srv:
        agent = traced_agent(srv, exporter, constraints=GuardEnforcer([RequireApproval(tools="lookup")]))
        first = await agent.run({"messages": [human("Paris?")]})
        assert first.status == "suspended"
        suspended = only_root(exporter.get_finished_spans())
        assert dict(suspended.attributes or {})["jianmu.run.status"] == "suspended"
        assert suspended.status.status_code is StatusCode.UNSET  # neither done nor failed
        assert "run.suspended" in [e.name for e in suspended.events]

        exporter.clear()
        agent.approve(first.pending_approvals[0].id)
        second = await agent.resume()
    assert second.status == "success"
    resumed = only_root(exporter.get_finished_spans())
    assert dict(resumed.attributes or {})["jianmu.resumed"] is True
    assert "execute_tool lookup" in [s.name for s in exporter.get_finished_spans()]


# ---------------------------------------------------------------------- the command line


class _Collector(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _CollectorHandler)
        self.requests: list[ExportTraceServiceRequest] = []
        self.metrics: list[ExportMetricsServiceRequest] = []


class _CollectorHandler(BaseHTTPRequestHandler):
    server: _Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path.endswith("/v1/metrics"):
            metrics = ExportMetricsServiceRequest()
            metrics.ParseFromString(body)
            self.server.metrics.append(metrics)
        else:
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            self.server.requests.append(request)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[_Collector]:
    server = _Collector()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _cli_env(**extra: str) -> dict[str, str]:
    skip = ("JIANMU", "OPENAI_", "OTEL_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
    env.update(PYTHONIOENCODING="utf-8", NO_COLOR="1", **extra)
    return env


def test_the_cli_otel_flag_exports_the_run_over_otlp(tmp_path: Path, collector: _Collector) -> None:
    agent_file = tmp_path / "agent.yaml"
    agent_file.write_text("kind: react\nname: Calc\ntools: [calculator]\n")
    script = [call("calculator", expression="6 * 7"), reply("42.")]
    with ScriptedOpenAIServer(script) as srv:
        proc = subprocess.run(
            [sys.executable, "-m", "jianmu_like", "run", str(agent_file), "6 * 7?", "--otel", "--no-live"],
            cwd=tmp_path,
            env=_cli_env(
                OPENAI_BASE_URL=srv.base_url,
                OPENAI_API_KEY=SECRET,
                OTEL_TRACES_EXPORTER="otlp",
                OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{collector.server_address[1]}",
                OTEL_SERVICE_NAME="calc-service",
            ),
            capture_output=True,
            text=True,
            timeout=PATIENCE,
        )
    assert proc.returncode == 0, proc.stderr
    spans = [
        (resource, span)
        for request in collector.requests
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    names = sorted(span.name for _, span in spans)
    two_iterations = [  # no model configured: the one the server serves (its /v1/models)
        "invoke_agent Calc",
        *("Calc.LLM", "chat scripted-model", "Calc.Tools", "execute_tool calculator"),
        *("Calc.LLM", "chat scripted-model"),
    ]
    assert names == sorted(two_iterations)
    service = {a.key: a.value.string_value for a in spans[0][0].resource.attributes}["service.name"]
    assert service == "calc-service"
    assert all(SECRET not in str(span) for _, span in spans)
    port = int(srv.base_url.rsplit(":", 1)[1].split("/")[0])
    for _, span in spans:
        if span.name.startswith("chat "):
            attrs = {a.key: a.value for a in span.attributes}
            assert (
                attrs["server.port"].int_value == port and attrs["server.address"].string_value == "127.0.0.1"
            )
            assert attrs["gen_ai.response.id"].string_value.startswith("chatcmpl-")
    # The conventions' client metrics, exported over OTLP/HTTP too.
    measured = {
        metric.name: metric
        for request in collector.metrics
        for resource in request.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }
    duration = measured["gen_ai.client.operation.duration"]
    assert duration.unit == "s" and sum(p.count for p in duration.histogram.data_points) == 2
    usage = measured["gen_ai.client.token.usage"]
    kinds = {
        a.value.string_value
        for p in usage.histogram.data_points
        for a in p.attributes
        if a.key == "gen_ai.token.type"
    }
    assert kinds == {"input", "output"}


def test_the_otel_flag_names_the_extra_when_it_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk", None)  # as if the SDK were not installed
    with pytest.raises(CliError) as caught:
        start_tracing(build_parser().parse_args(["run", "agent.yaml", "q", "--otel"]))
    assert caught.value.code == 2
    assert "--otel" in str(caught.value) and "`otel` extra" in str(caught.value)
    assert "pip install 'jianmu_like[otel]'" in str(caught.value)


def test_no_otel_flag_no_tracing() -> None:
    assert start_tracing(build_parser().parse_args(["serve", "agent.yaml"])) is None


def test_an_unknown_exporter_is_a_clear_error() -> None:
    with pytest.raises(OTelConfigError, match=r"OTEL_TRACES_EXPORTER names 'zipkin'.*console"):
        span_exporters({"OTEL_TRACES_EXPORTER": "zipkin"})
    assert span_exporters({"OTEL_TRACES_EXPORTER": "none"}) == []
    (console,) = span_exporters({"OTEL_TRACES_EXPORTER": "console"})
    assert type(console).__name__ == "ConsoleSpanExporter" and console.out is sys.stderr


def test_served_conversations_are_traced_through_the_serve_factory(exporter: InMemorySpanExporter) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    script = [
        call("calculator", expression="2 + 2"),
        reply("4."),
        call("calculator", expression="3 + 3"),
        reply("6."),
    ]
    root = create_react_node(model_client=scripted_client(script), tools=[calculator])
    template = AgentTemplate.from_prototype(root, log_events=False)
    app = create_app(traced(template.conversation, OTelSubscriber(provider)))
    with live_server(app) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        first = http.post("/api/runs", json={"input": "2 + 2?"}).json()
        read_events(http, first["run_id"], until="done")
        second = http.post("/api/runs", json={"input": "3 + 3?"}).json()
        read_events(http, second["run_id"], until="done")
    runs = [s for s in exporter.get_finished_spans() if s.parent is None]
    assert sorted(str(dict(s.attributes or {})["gen_ai.conversation.id"]) for s in runs) == sorted(
        [first["thread_id"], second["thread_id"]]
    )
    assert len([s for s in exporter.get_finished_spans() if s.name == "execute_tool calculator"]) == 2


async def test_genai_conventions_request_response_conversation_content_and_metrics(
    exporter: InMemorySpanExporter,
) -> None:
    """The GenAI conventions' attributes where they belong, the conversation on every span of a
    thread's run, content in the conventions' attributes, and the two client histograms."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    script = [calls(call("lookup", city="Paris")), reply("Paris 2.1M.")]
    async with ScriptedOpenAIServer(script) as srv:
        config = ReActConfig(max_iterations=5, temperature=0.3, max_tokens=200, top_p=0.9)
        root = create_react_node(
            model_client=srv.client(), tools=[lookup], config=config, namespace="research"
        )
        agent = Agent(root, log_events=False)
        subscriber = OTelSubscriber(provider, capture_content=True, meter_provider=MeterProvider([reader]))
        agent.telemetry.subscribe(subscriber)
        result = await agent.run({"messages": [human("Paris?")]}, thread_id="conv-1")
        port = int(srv.base_url.rsplit(":", 1)[1].split("/")[0])
    assert result.status == "success"

    spans = exporter.get_finished_spans()
    assert all(dict(s.attributes or {}).get("gen_ai.conversation.id") == "conv-1" for s in spans), [
        s.name for s in spans if dict(s.attributes or {}).get("gen_ai.conversation.id") != "conv-1"
    ]
    run = dict(only_root(spans).attributes or {})
    assert run["gen_ai.agent.id"] == "research/ReActAgent" and run["gen_ai.agent.name"] == "ReActAgent"
    assert json.loads(run["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Paris 2.1M."}], "finish_reason": "stop"}
    ]
    assert not any(k.startswith("jianmu.final_answer") for k in run)
    chats = [dict(s.attributes or {}) for s in spans if s.name.startswith("chat ")]
    assert len(chats) == 2
    for chat in chats:
        assert chat["server.address"] == "127.0.0.1" and chat["server.port"] == port
        assert chat["gen_ai.request.temperature"] == 0.3 and chat["gen_ai.request.max_tokens"] == 200
        assert chat["gen_ai.request.top_p"] == 0.9 and chat["gen_ai.output.type"] == "text"
        assert str(chat["gen_ai.response.id"]).startswith("chatcmpl-")
    assert len({c["gen_ai.response.id"] for c in chats}) == 2

    data = reader.get_metrics_data()
    assert data is not None
    points: dict[str, list[Any]] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                points.setdefault(metric.name, []).extend(metric.data.data_points)
    (duration,) = points["gen_ai.client.operation.duration"]
    assert duration.count == 2 and duration.sum > 0
    attrs = dict(duration.attributes)
    assert attrs["gen_ai.operation.name"] == "chat" and attrs["gen_ai.request.model"] == "scripted-model"
    assert attrs["gen_ai.response.model"] == "scripted-model" and attrs["server.port"] == port
    tokens = {dict(p.attributes)["gen_ai.token.type"]: p for p in points["gen_ai.client.token.usage"]}
    assert tokens["input"].sum == result.usage.prompt_tokens and tokens["input"].count == 2
    assert tokens["output"].sum == result.usage.completion_tokens and tokens["output"].count == 2
