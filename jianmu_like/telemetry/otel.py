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

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider

from . import events as ev
from .events import Event

INSTRUMENTATION = "jianmu_like"
MAX_OPEN_RUNS = 1024
"""Runs whose `run.completed` never came (the run raised) are ended as abandoned past this."""
_RAISED = re.compile(r"raised ([A-Za-z_][\w.]*)")
_ERROR_TYPE = re.compile(r"^([A-Za-z_][\w.]*):")


def _ns(event: Event) -> int:
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


class OTelSubscriber:
    """Turns a run's events into spans. Subscribe one to any number of hubs (runs are told
    apart by `run_id`): `hub.subscribe(OTelSubscriber())`.

    `provider_name` is `gen_ai.provider.name` (and the older `gen_ai.system`) of model calls;
    `capture_content` also puts tool arguments and results and the final answer on spans.
    """

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        *,
        provider_name: str = "openai",
        capture_content: bool = False,
    ) -> None:
        provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        self.tracer: Tracer = provider.get_tracer(INSTRUMENTATION)
        self.provider_name = provider_name
        self.capture_content = capture_content
        self._runs: OrderedDict[str, _Run] = OrderedDict()

    def __call__(self, event: Event) -> None:
        run_id = event.run_id
        if run_id is None or event.type == ev.TEXT_DELTA:
            return
        if event.type in (ev.RUN_STARTED, ev.RUN_RESUMED):
            self._start_run(run_id, event)
            return
        run = self._runs.get(run_id)
        if run is None:
            return
        handler = _HANDLERS.get(event.type)
        if handler is not None:
            handler(self, run, event)
        else:
            self._annotate(run, event)

    # ------------------------------------------------------------------ runs
    def _start_run(self, run_id: str, event: Event) -> None:
        root = event.node or "agent"
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": root,
            "jianmu.run_id": run_id,
            "jianmu.resumed": event.type == ev.RUN_RESUMED,
        }
        thread_id = event.data.get("thread_id")
        if thread_id is not None:
            attributes["gen_ai.conversation.id"] = str(thread_id)
        if event.namespace is not None:
            attributes["jianmu.namespace"] = event.namespace
        span = self.tracer.start_span(
            f"invoke_agent {root}", kind=SpanKind.INTERNAL, attributes=attributes, start_time=_ns(event)
        )
        self._runs[run_id] = _Run(span=span, root=root)
        while len(self._runs) > MAX_OPEN_RUNS:
            _, stale = self._runs.popitem(last=False)
            self._end_run(stale, _ns(event), abandoned=True)

    def _run_completed(self, run: _Run, event: Event) -> None:
        self._runs.pop(str(event.run_id), None)
        data, ts, span = event.data, _ns(event), run.span
        status = str(data.get("status"))
        span.set_attribute("jianmu.run.status", status)
        termination = data.get("termination") or {}
        if isinstance(termination, dict):
            if termination.get("reason") is not None:
                span.set_attribute("jianmu.termination.reason", str(termination["reason"]))
            if termination.get("iterations") is not None:
                span.set_attribute("jianmu.iterations", int(termination["iterations"]))
        _set_usage(span, data.get("usage"))
        if self.capture_content and data.get("final_answer") is not None:
            span.set_attribute("jianmu.final_answer", str(data["final_answer"]))
        if status == "failure":
            error = str(data.get("error") or f"run failed ({termination.get('reason', 'unknown')})")
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
        run.nodes.clear()
        if abandoned:
            _record_error(run.span, "Abandoned", "the run ended without reporting its outcome", ts)
        run.span.end(ts)

    # ------------------------------------------------------------------ nodes
    def _node(self, run: _Run, event: Event) -> Span:
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
            attributes = {"jianmu.node.path": path}
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

    def _reply_started(self, run: _Run, event: Event) -> None:
        self._end_node(run, event.node, _ns(event))  # a new activation of the node
        span = self._node(run, event)
        if "round" in event.data:
            span.set_attribute("jianmu.round", int(event.data["round"]))

    def _reply_completed(self, run: _Run, event: Event) -> None:
        span = self._node(run, event)
        _set_usage(span, event.data.get("usage"))
        if event.data.get("model"):
            span.set_attribute("gen_ai.response.model", str(event.data["model"]))
        self._end_node(run, event.node, _ns(event))

    def _loop_boundary(self, run: _Run, event: Event) -> None:
        """An iteration ended: the loop's children have finished their activations."""
        prefix = (event.node or run.root) + "/"
        ts = _ns(event)
        for path in [p for p in run.nodes if p.startswith(prefix)]:
            self._end_node(run, path, ts)
        if event.type == ev.LOOP_TERMINATED:
            self._annotate(run, event)
        elif event.node in (None, run.root):
            run.span.add_event(event.type, _flat(event.data), ts)

    def _node_failed(self, run: _Run, event: Event) -> None:
        data, ts = event.data, _ns(event)
        error_type = str(data.get("error_type") or "NodeFailed")
        message = str(data.get("error") or error_type)
        model = run.models.pop(event.node or "", None)
        if model is not None:
            _record_error(model, error_type, message, ts)
            model.end(ts)
        span = self._node(run, event)
        span.set_attribute("jianmu.failure.kind", str(data.get("kind") or "node_error"))
        _record_error(span, error_type, message, ts)
        self._end_node(run, event.node, ts)

    def _annotate(self, run: _Run, event: Event) -> None:
        self._node(run, event).add_event(event.type, _flat(event.data), _ns(event))

    # ------------------------------------------------------------------ model calls
    def _model_started(self, run: _Run, event: Event) -> None:
        path, ts = event.node or run.root, _ns(event)
        previous = run.models.pop(path, None)
        if previous is not None:  # a non-retryable error moved on to the next model
            _record_error(previous, "ModelError", "attempt failed; trying the next model", ts)
            previous.end(ts)
        model = str(event.data.get("model") or "")
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": self.provider_name,
            "gen_ai.system": self.provider_name,
            "gen_ai.request.model": model,
            "jianmu.attempt": int(event.data.get("attempt") or 1),
            "jianmu.streaming": bool(event.data.get("streaming")),
        }
        run.models[path] = self.tracer.start_span(
            f"chat {model}".strip(),
            context=trace.set_span_in_context(self._node(run, event)),
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=ts,
        )

    def _model_completed(self, run: _Run, event: Event) -> None:
        span = run.models.pop(event.node or run.root, None)
        if span is None:
            return
        data = event.data
        if data.get("model"):
            span.set_attribute("gen_ai.response.model", str(data["model"]))
        if data.get("finish_reason"):
            span.set_attribute("gen_ai.response.finish_reasons", [str(data["finish_reason"])])
        _set_usage(span, data.get("usage"))
        span.set_status(Status(StatusCode.OK))
        span.end(_ns(event))

    def _model_failed(self, run: _Run, event: Event) -> None:
        """A retry ends the failed attempt; `model.call.failed` ends the last one."""
        span = run.models.pop(event.node or run.root, None)
        if span is None:
            return
        message = str(event.data.get("error") or "model call failed")
        error_type = "ModelCallFailed" if event.type == ev.MODEL_CALL_FAILED else "ModelError"
        if event.type == ev.MODEL_CALL_RETRY and event.data.get("delay") is not None:
            span.set_attribute("jianmu.retry_delay", float(event.data["delay"]))
        _record_error(span, error_type, message, _ns(event))
        span.end(_ns(event))

    # ------------------------------------------------------------------ tool calls
    def _tool_span(self, run: _Run, event: Event) -> Span:
        data = event.data
        tool, call_id = str(data.get("tool") or ""), str(data.get("call_id") or "")
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
        }
        if self.capture_content and "arguments" in data:
            attributes["gen_ai.tool.call.arguments"] = _json(data["arguments"])
        return self.tracer.start_span(
            f"execute_tool {tool}".strip(),
            context=trace.set_span_in_context(self._node(run, event)),
            attributes=attributes,
            start_time=_ns(event),
        )

    def _tool_started(self, run: _Run, event: Event) -> None:
        key = (event.node or run.root, str(event.data.get("call_id") or ""))
        run.tools[key] = self._tool_span(run, event)

    def _tool_completed(self, run: _Run, event: Event) -> None:
        key = (event.node or run.root, str(event.data.get("call_id") or ""))
        span = run.tools.pop(key, None)
        if span is None:
            return
        if self.capture_content and "output" in event.data:
            span.set_attribute("gen_ai.tool.call.result", str(event.data["output"]))
        span.set_status(Status(StatusCode.OK))
        span.end(_ns(event))

    def _tool_failed(self, run: _Run, event: Event) -> None:
        key = (event.node or run.root, str(event.data.get("call_id") or ""))
        span = run.tools.pop(key, None)
        if span is None:  # refused before it ran (guard, denied approval): a span all the same
            span = self._tool_span(run, event)
        message = str(event.data.get("error") or "tool call failed")
        denied = bool(event.data.get("denied"))
        found = _RAISED.search(message)
        error_type = "ToolDenied" if denied else found.group(1) if found else "ToolError"
        span.set_attribute("jianmu.tool.denied", denied)
        _record_error(span, error_type, message, _ns(event))
        span.end(_ns(event))


_HANDLERS = {
    ev.RUN_COMPLETED: OTelSubscriber._run_completed,
    ev.REPLY_STARTED: OTelSubscriber._reply_started,
    ev.REPLY_COMPLETED: OTelSubscriber._reply_completed,
    ev.LOOP_ITERATION: OTelSubscriber._loop_boundary,
    ev.LOOP_TERMINATED: OTelSubscriber._loop_boundary,
    ev.NODE_FAILED: OTelSubscriber._node_failed,
    ev.MODEL_CALL_STARTED: OTelSubscriber._model_started,
    ev.MODEL_CALL_COMPLETED: OTelSubscriber._model_completed,
    ev.MODEL_CALL_RETRY: OTelSubscriber._model_failed,
    ev.MODEL_CALL_FAILED: OTelSubscriber._model_failed,
    ev.TOOL_CALL_STARTED: OTelSubscriber._tool_started,
    ev.TOOL_CALL_COMPLETED: OTelSubscriber._tool_completed,
    ev.TOOL_CALL_FAILED: OTelSubscriber._tool_failed,
}


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
