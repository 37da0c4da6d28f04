"""OpenTelemetry spans from telemetry events: run → node → model call / tool call.

A subscriber of the `TelemetryHub`, so the kernel knows nothing of OpenTelemetry and an agent
without it pays nothing. Spans follow the GenAI semantic conventions (`invoke_agent`, `chat`,
`execute_tool` operations, `gen_ai.*` attributes). Event data arrives already redacted by the
hub, so no API key reaches a span. Importing this module imports opentelemetry: reach it through
`telemetry.otel_setup`, which says which extra to install when it is missing.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider

from . import events as ev
from .events import AnyEvent

INSTRUMENTATION = "jianmu_like"
MAX_OPEN_RUNS = 1024
"""Runs whose `run.completed` never came (the run raised) are ended as abandoned past this."""
_RAISED = re.compile(r"raised ([A-Za-z_][\w.]*)")
_ERROR_TYPE = re.compile(r"^([A-Za-z_][\w.]*):")


def _ns(event: ev.CatalogueEvent) -> int:
    return int(event.ts * 1e9)


def _record_error(span: Span, error_type: str, message: str, ts: int) -> None:
    """What `span.record_exception` writes, from an event (the exception object stays in the
    agent) and an ERROR status saying why."""
    span.add_event("exception", {"exception.type": error_type, "exception.message": message}, ts)
    span.set_attribute("error.type", error_type)
    span.set_status(Status(StatusCode.ERROR, message))


@dataclass
class _Run:
    """The open spans of one run."""

    span: Span
    root: str
    nodes: dict[str, Span] = field(default_factory=dict)
    models: dict[str, Span] = field(default_factory=dict)
    """The model-call attempt in flight, by node path."""
    tools: dict[tuple[str, str], Span] = field(default_factory=dict)
    """Tool calls in flight, by (node path, call id): parallel calls are siblings."""
    common: dict[str, Any] = field(default_factory=dict)
    """Attributes of every span of the run (`gen_ai.conversation.id` of a thread's run)."""
    calls: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)
    """The model call in flight by node path: its start and its metrics' attributes."""


class OTelSubscriber:
    """Turns a run's events into spans. Subscribe one to any number of hubs (runs are told
    apart by `run_id`): `hub.subscribe(OTelSubscriber())`.

    `provider_name` is `gen_ai.provider.name` (and the older `gen_ai.system`) of model calls;
    `capture_content` also puts tool arguments and results, the final answer and each chat's
    input messages, system instructions and tool definitions on spans (in the conventions'
    attributes; the hub then asks the model-calling nodes for them). Model calls are also
    measured, on `meter_provider` (default: the global one, a no-op unless set), as the
    conventions' `gen_ai.client.token.usage` and `gen_ai.client.operation.duration` histograms.
    """

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        *,
        provider_name: str = "openai",
        capture_content: bool = False,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        self.tracer: Tracer = provider.get_tracer(INSTRUMENTATION)
        meters = meter_provider if meter_provider is not None else metrics.get_meter_provider()
        meter = meters.get_meter(INSTRUMENTATION)
        self.token_usage = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        )
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self.provider_name = provider_name
        self.capture_content = capture_content
        self._runs: OrderedDict[str, _Run] = OrderedDict()

    def __call__(self, event: AnyEvent) -> None:
        run_id = event.run_id
        typed = ev.typed(event)
        if run_id is None or typed is None or isinstance(typed, ev.TextDelta):
            return
        if isinstance(typed, ev.RunStarted | ev.RunResumed):
            self._start_run(run_id, typed)
            return
        run = self._runs.get(run_id)
        if run is not None:
            self._dispatch(run, typed)

    def _dispatch(self, run: _Run, event: ev.CatalogueEvent) -> None:
        """Each type's place in the trace: a span opened or closed, else an event on its node's."""
        match event:
            case ev.RunCompleted():
                self._run_completed(run, event)
            case ev.ReplyStarted():
                self._reply_started(run, event)
            case ev.ReplyCompleted():
                self._reply_completed(run, event)
            case ev.LoopIteration() | ev.LoopTerminated():
                self._loop_boundary(run, event)
            case ev.NodeFailure():
                self._node_failed(run, event)
            case ev.ModelCallStarted():
                self._model_started(run, event)
            case ev.ModelCallCompleted():
                self._model_completed(run, event)
            case ev.ModelCallRetry() | ev.ModelCallFailure():
                self._model_failed(run, event)
            case ev.ToolCallStarted():
                run.tools[(event.node or run.root, event.call_id)] = self._tool_span(run, event)
            case ev.ToolCallCompleted():
                self._tool_completed(run, event)
            case ev.ToolCallFailed():
                self._tool_failed(run, event)
            case _:
                self._annotate(run, event)

    # ------------------------------------------------------------------ runs
    def _start_run(self, run_id: str, event: ev.RunStarted | ev.RunResumed) -> None:
        root = event.node or "agent"
        thread_id = event.thread_id
        common = {"gen_ai.conversation.id": str(thread_id)} if thread_id is not None else {}
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": root,
            "gen_ai.agent.id": f"{event.namespace}/{root}" if event.namespace else root,
            "jianmu.run_id": run_id,
            "jianmu.resumed": isinstance(event, ev.RunResumed),
            **common,
        }
        if event.namespace is not None:
            attributes["jianmu.namespace"] = event.namespace
        span = self.tracer.start_span(
            f"invoke_agent {root}", kind=SpanKind.INTERNAL, attributes=attributes, start_time=_ns(event)
        )
        self._runs[run_id] = _Run(span=span, root=root, common=common)
        while len(self._runs) > MAX_OPEN_RUNS:
            _, stale = self._runs.popitem(last=False)
            self._end_run(stale, _ns(event), abandoned=True)

    def _run_completed(self, run: _Run, event: ev.RunCompleted) -> None:
        self._runs.pop(str(event.run_id), None)
        ts, span, status = _ns(event), run.span, event.status
        span.set_attribute("jianmu.run.status", status)
        termination = event.termination or {}
        if termination.get("reason") is not None:
            span.set_attribute("jianmu.termination.reason", str(termination["reason"]))
        if termination.get("iterations") is not None:
            span.set_attribute("jianmu.iterations", int(termination["iterations"]))
        _set_usage(span, event.usage)
        if self.capture_content and event.final_answer is not None:
            span.set_attribute("gen_ai.output.messages", _output_messages(event.final_answer, "stop"))
        if status == "failure":
            error = event.error or f"run failed ({termination.get('reason', 'unknown')})"
            named = _ERROR_TYPE.match(error)
            error_type = named.group(1) if named else "RunFailed"
            _record_error(span, error_type, error, ts)
        elif status == "suspended":
            span.add_event("run.suspended", {"jianmu.run.status": "suspended"}, ts)
        else:
            span.set_status(Status(StatusCode.OK))
        self._end_run(run, ts, node_status=status)

    def _end_run(self, run: _Run, ts: int, *, node_status: str = "", abandoned: bool = False) -> None:
        for span in [*run.tools.values(), *run.models.values()]:
            _record_error(span, "Abandoned", "the run ended before this call did", ts)
            span.end(ts)
        for span in reversed(run.nodes.values()):
            if node_status == "suspended":
                span.set_attribute("jianmu.node.status", "suspended")
            span.end(ts)
        run.tools.clear()
        run.models.clear()
        run.calls.clear()
        run.nodes.clear()
        if abandoned:
            _record_error(run.span, "Abandoned", "the run ended without reporting its outcome", ts)
        run.span.end(ts)

    # ------------------------------------------------------------------ nodes
    def _node(self, run: _Run, event: ev.CatalogueEvent) -> Span:
        """The open span of the event's node (the run's span for the root), opened if needed."""
        path = event.node
        if path is None or path == run.root:
            return run.span
        span = run.nodes.get(path)
        if span is None:
            parent = run.span
            for open_path, open_span in run.nodes.items():  # nested agents: deepest open ancestor
                if path.startswith(open_path + "/"):
                    parent = open_span
            attributes = {"jianmu.node.path": path, **run.common}
            if event.namespace is not None:
                attributes["jianmu.namespace"] = event.namespace
            span = self.tracer.start_span(
                path.rsplit("/", 1)[-1],
                context=trace.set_span_in_context(parent),
                attributes=attributes,
                start_time=_ns(event),
            )
            run.nodes[path] = span
        return span

    def _end_node(self, run: _Run, path: str | None, ts: int) -> None:
        span = run.nodes.pop(path, None) if path is not None else None
        if span is not None:
            span.end(ts)

    def _reply_started(self, run: _Run, event: ev.ReplyStarted) -> None:
        self._end_node(run, event.node, _ns(event))  # a new activation of the node
        self._node(run, event).set_attribute("jianmu.round", event.round)

    def _reply_completed(self, run: _Run, event: ev.ReplyCompleted) -> None:
        span = self._node(run, event)
        _set_usage(span, event.usage)
        if event.model:
            span.set_attribute("gen_ai.response.model", event.model)
        self._end_node(run, event.node, _ns(event))

    def _loop_boundary(self, run: _Run, event: ev.LoopIteration | ev.LoopTerminated) -> None:
        """An iteration ended: the loop's children have finished their activations."""
        prefix = (event.node or run.root) + "/"
        ts = _ns(event)
        for path in [p for p in run.nodes if p.startswith(prefix)]:
            self._end_node(run, path, ts)
        if isinstance(event, ev.LoopTerminated):
            self._annotate(run, event)
        elif event.node in (None, run.root):
            run.span.add_event(event.type, _flat(event.data), ts)

    def _node_failed(self, run: _Run, event: ev.NodeFailure) -> None:
        ts = _ns(event)
        error_type = event.error_type or "NodeFailed"
        message = event.error or error_type
        model = run.models.pop(event.node or "", None)
        if model is not None:
            _record_error(model, error_type, message, ts)
            model.end(ts)
        span = self._node(run, event)
        span.set_attribute("jianmu.failure.kind", event.kind or "node_error")
        _record_error(span, error_type, message, ts)
        self._end_node(run, event.node, ts)

    def _annotate(self, run: _Run, event: ev.CatalogueEvent) -> None:
        self._node(run, event).add_event(event.type, _flat(event.data), _ns(event))

    # ------------------------------------------------------------------ model calls
    def _model_started(self, run: _Run, event: ev.ModelCallStarted) -> None:
        path, ts = event.node or run.root, _ns(event)
        previous = run.models.pop(path, None)
        if previous is not None:  # a non-retryable error moved on to the next model
            _record_error(previous, "ModelError", "attempt failed; trying the next model", ts)
            previous.end(ts)
            self._measure(run, path, ts, error_type="ModelError")
        data = event.data  # the optional fields, by name (`_SERVER`, `_REQUEST`, `_CONTENT`)
        model = event.model
        measured: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": self.provider_name,
            "gen_ai.request.model": model,
        }
        for key, name in _SERVER:
            if data.get(key) is not None:
                measured[name] = data[key]
        run.calls[path] = (ts, measured)
        attributes: dict[str, Any] = {
            **measured,
            "gen_ai.system": self.provider_name,
            "jianmu.attempt": event.attempt or 1,
            "jianmu.streaming": event.streaming,
            **run.common,
        }
        for key, name in _REQUEST:
            if data.get(key) is not None:
                attributes[name] = data[key]
        if self.capture_content:
            for key, name in _CONTENT:
                if data.get(key) is not None:
                    attributes[name] = _json(data[key])
        run.models[path] = self.tracer.start_span(
            f"chat {model}".strip(),
            context=trace.set_span_in_context(self._node(run, event)),
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=ts,
        )

    def _model_completed(self, run: _Run, event: ev.ModelCallCompleted) -> None:
        path = event.node or run.root
        span = run.models.pop(path, None)
        if span is None:
            return
        ts = _ns(event)
        if event.model:
            span.set_attribute("gen_ai.response.model", event.model)
        if event.response_id:
            span.set_attribute("gen_ai.response.id", event.response_id)
        if event.finish_reason:
            span.set_attribute("gen_ai.response.finish_reasons", [event.finish_reason])
        _set_usage(span, event.usage)
        span.set_status(Status(StatusCode.OK))
        span.end(ts)
        self._measure(run, path, ts, event.model, event.usage)

    def _measure(
        self,
        run: _Run,
        path: str,
        ts: int,
        model: str | None = None,
        usage: dict[str, Any] | None = None,
        error_type: str | None = None,
    ) -> None:
        """The conventions' metrics of one model call attempt: its duration and its tokens."""
        started = run.calls.pop(path, None)
        if started is None:
            return
        began, attributes = started
        if model:
            attributes = {**attributes, "gen_ai.response.model": model}
        if error_type is not None:
            attributes = {**attributes, "error.type": error_type}
        self.duration.record(max(ts - began, 0) / 1e9, attributes)
        if error_type is None and usage is not None:
            for key, kind in (("prompt_tokens", "input"), ("completion_tokens", "output")):
                if usage.get(key) is not None:
                    self.token_usage.record(int(usage[key]), {**attributes, "gen_ai.token.type": kind})

    def _model_failed(self, run: _Run, event: ev.ModelCallRetry | ev.ModelCallFailure) -> None:
        """A retry ends the failed attempt; `model.call.failed` ends the last one."""
        span = run.models.pop(event.node or run.root, None)
        if span is None:
            return
        message = event.error or "model call failed"
        error_type = "ModelCallFailed" if isinstance(event, ev.ModelCallFailure) else "ModelError"
        if isinstance(event, ev.ModelCallRetry):
            span.set_attribute("jianmu.retry_delay", event.delay)
        _record_error(span, error_type, message, _ns(event))
        span.end(_ns(event))
        self._measure(run, event.node or run.root, _ns(event), error_type=error_type)

    # ------------------------------------------------------------------ tool calls
    def _tool_span(self, run: _Run, event: ev.ToolCallStarted | ev.ToolCallFailed) -> Span:
        tool, call_id = event.tool, event.call_id
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
            **run.common,
        }
        if self.capture_content and event.arguments is not None:
            attributes["gen_ai.tool.call.arguments"] = _json(event.arguments)
        return self.tracer.start_span(
            f"execute_tool {tool}".strip(),
            context=trace.set_span_in_context(self._node(run, event)),
            attributes=attributes,
            start_time=_ns(event),
        )

    def _tool_completed(self, run: _Run, event: ev.ToolCallCompleted) -> None:
        span = run.tools.pop((event.node or run.root, event.call_id), None)
        if span is None:
            return
        if self.capture_content:
            span.set_attribute("gen_ai.tool.call.result", event.output)
        span.set_status(Status(StatusCode.OK))
        span.end(_ns(event))

    def _tool_failed(self, run: _Run, event: ev.ToolCallFailed) -> None:
        span = run.tools.pop((event.node or run.root, event.call_id), None)
        if span is None:  # refused before it ran (guard, denied approval): a span all the same
            span = self._tool_span(run, event)
        message = event.error or "tool call failed"
        denied = event.denied
        found = _RAISED.search(message)
        error_type = "ToolDenied" if denied else found.group(1) if found else "ToolError"
        span.set_attribute("jianmu.tool.denied", denied)
        _record_error(span, error_type, message, _ns(event))
        span.end(_ns(event))


TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]
"""The bucket boundaries the GenAI metrics conventions advise."""
_SERVER = (("server_address", "server.address"), ("server_port", "server.port"))
_REQUEST = (
    ("temperature", "gen_ai.request.temperature"),
    ("max_tokens", "gen_ai.request.max_tokens"),
    ("top_p", "gen_ai.request.top_p"),
    ("output_type", "gen_ai.output.type"),
)
"""Model-call event fields -> span attributes (`_SERVER` ones are metric attributes too)."""
_CONTENT = (
    ("input_messages", "gen_ai.input.messages"),
    ("system_instructions", "gen_ai.system_instructions"),
    ("tool_definitions", "gen_ai.tool.definitions"),
)
"""Content-capture fields of `model.call.started` -> chat span attributes (JSON text)."""


def _output_messages(text: str, finish_reason: str) -> str:
    """`gen_ai.output.messages`: the conventions' JSON of one assistant text message."""
    message = {
        "role": "assistant",
        "parts": [{"type": "text", "content": text}],
        "finish_reason": finish_reason,
    }
    return json.dumps([message], ensure_ascii=False)


def _set_usage(span: Span, usage: Any) -> None:
    if isinstance(usage, dict):
        if usage.get("prompt_tokens") is not None:
            span.set_attribute("gen_ai.usage.input_tokens", int(usage["prompt_tokens"]))
        if usage.get("completion_tokens") is not None:
            span.set_attribute("gen_ai.usage.output_tokens", int(usage["completion_tokens"]))


def _json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _flat(data: dict[str, Any]) -> dict[str, Any]:
    """Event data as span-event attributes (scalars as they are, the rest as JSON)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if value is None:
            continue
        out[key] = value if isinstance(value, (str, bool, int, float)) else _json(value)
    return out
