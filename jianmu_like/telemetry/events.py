"""The event catalogue: every telemetry event type, one small frozen class each.

An event is an instance of its class: `ToolCallStarted(tool=..., call_id=..., arguments=...)`,
with a `Literal` `type` (its name on the wire, `"tool.call.started"`) and the envelope every
event carries (`node`, `namespace`, `ts`, `run_id`). `CatalogueEvent` is their union. Emitters
name the class and its fields (`self.emit(ev.ToolCallStarted, tool=..., call_id=...,
arguments=...)`, checked by mypy); the hub builds the event only when someone listens, so an
unobserved agent pays nothing. Readers dispatch on the class (`match event: case
ev.ToolCallStarted(tool=tool): ...`): the SSE channels (`server._channels`), the CLI
(`cli._render`) and OpenTelemetry (`telemetry._otel`) do, with mypy checking every field they
read; the SSE mapper names every type (`assert_never`), so a new one is a decision there.

Frozen slotted dataclasses rather than frozen pydantic models: events are built on every tick of
an observed agent. Measured side by side (a 3-field event and its envelope, same process), a
frozen slotted dataclass builds in about 0.7x the time of a validated frozen pydantic model and
0.45x that of the `Event.model_construct` the hub used before; `bench/event_cost.py` measures
a whole event (built, redacted, read, mapped to SSE) against another checkout. Validation is
the test suite's: under `JIANMU_CHECK_EVENTS=1` the hub validates every event's fields against
its class (pydantic, `check`) and refuses a name the catalogue does not declare.

The wire stays what it was: an event's `type` and `data` (its fields as the dict the emitter
sent, kept by the hub) are what SSE, `--json`, recordings and OpenTelemetry carry. The names
are kept as constants (`TOOL_CALL_STARTED`), and `emit("tool.call.started", **data)` still works:
the hub builds the class the catalogue declares for the name. A name it does not declare is
published as a plain `Event` (type and data dict): a user's own event type, outside the suite.

Adding an event type: a class below (fields an emitter always sends are required, the others
default to None), one `declare(...)` line, the class in `CatalogueEvent`, and its case in the
SSE mapper (`server._channels`: a channel, or none; mypy says where it is missing).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic_core import to_jsonable_python

from ..errors import JianmuError


@dataclass(frozen=True, slots=True, kw_only=True)
class TypedEvent:
    """What every event of the catalogue carries: where it comes from (`node`, the emitting
    node's path; `namespace`, its state namespace, so events of nested or parallel agents stay
    distinguishable), when (`ts`) and in which run. The hub fills these in; a subclass adds the
    fields of its type."""

    type: ClassVar[str]
    node: str | None = None
    namespace: str | None = None
    ts: float = field(default_factory=time.time)
    run_id: str | None = None
    _data: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    """The fields as the emitter sent them (the hub keeps the dict it was given, so `data` is
    exactly what went out before events were classes: the keys sent, explicit Nones kept)."""

    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")
    """The suite's check (`check`) refuses a field the class does not declare."""
    adapts: ClassVar[bool] = False
    """Whether the keys of `data` differ from the class's fields (`kwargs` maps them)."""
    _fields: ClassVar[tuple[str, ...]] = ()
    """The type's own fields (not the envelope's), set by `declare`."""
    _optional: ClassVar[frozenset[str]] = frozenset()
    """Those defaulting to None: left out of `data` while None, as emitters never sent them."""

    @property
    def data(self) -> dict[str, Any]:
        """The type's fields as a dict, the wire's `data`: as the emitter sent them, or (an event
        built directly) every field but the optional ones left None."""
        sent = self._data
        return self._dict() if sent is None else sent

    def _dict(self) -> dict[str, Any]:
        optional = self._optional
        data: dict[str, Any] = {}
        for name in self._fields:
            value = getattr(self, name)
            if value is not None or name not in optional:
                data[name] = value
        return data

    @staticmethod
    def kwargs(data: dict[str, Any]) -> dict[str, Any]:
        """The class's keyword arguments for the keys of `data` (where `adapts`)."""
        return data

    def payload(self) -> TypedEvent:
        """The event itself (it is typed already; `Event.payload()` builds one from a dict)."""
        return self

    def wire(self) -> dict[str, Any]:
        """The event as SSE, `--json` and recordings carry it (the shape of `Event`)."""
        return {
            "type": self.type,
            "node": self.node,
            "namespace": self.namespace,
            "data": self.data,
            "ts": self.ts,
            "run_id": self.run_id,
        }

    def model_dump(self, *, mode: Literal["python", "json"] = "python") -> dict[str, Any]:
        """`wire()`, for readers written against `Event` (a pydantic model)."""
        wire = self.wire()
        return to_jsonable_python(wire, fallback=str) if mode == "json" else wire


Payload = TypedEvent
"""The former name of an event type's data model (each type's class is now the event itself)."""


@dataclass(frozen=True, slots=True)
class EventType:
    """One entry of the catalogue."""

    name: str
    payload: type[TypedEvent]


CATALOGUE: dict[str, EventType] = {}
"""Event type name → its entry, in declaration order."""

_ENVELOPE = frozenset(f.name for f in fields(TypedEvent))


def declare(name: str, payload: type[TypedEvent]) -> str:
    """Add an event type to the catalogue; returns its name (the constant emitters may use)."""
    if name in CATALOGUE:
        raise ValueError(f"event type {name!r} is declared twice")
    if "__dataclass_fields__" not in vars(payload) or getattr(payload, "type", None) != name:
        raise TypeError(  # e.g. a payload model written before events were classes
            f"{payload.__name__}: an event class is a @dataclass(frozen=True, slots=True, "
            f"kw_only=True) subclass of TypedEvent with type: ClassVar[Literal[{name!r}]] = {name!r}"
        )
    own = [f for f in fields(payload) if f.name not in _ENVELOPE]  # `_data` is the envelope's
    payload._fields = tuple(f.name for f in own)
    payload._optional = frozenset(f.name for f in own if f.default is None)
    CATALOGUE[name] = EventType(name, payload)
    return name


class UnknownEventType(KeyError, JianmuError):
    """An event type the catalogue does not declare (raised by `check` and `Event.payload`)."""

    def __str__(self) -> str:
        return f"event type {self.args[0]!r} is not in the catalogue (telemetry/events.py)"


_ADAPTERS: dict[type[TypedEvent], TypeAdapter[TypedEvent]] = {}


def _adapter(cls: type[TypedEvent]) -> TypeAdapter[TypedEvent]:
    adapter = _ADAPTERS.get(cls)
    if adapter is None:
        adapter = _ADAPTERS[cls] = TypeAdapter(cls)
    return adapter


def check(event_type: str, data: dict[str, Any]) -> TypedEvent:
    """`data` validated against `event_type`'s class (the suite's emitter check): a missing
    field, a field of the wrong type or one the class does not declare raises."""
    entry = CATALOGUE.get(event_type)
    if entry is None:
        raise UnknownEventType(event_type)
    cls = entry.payload
    if cls.adapts:
        data = cls.kwargs(data)
    elif clash := sorted(_ENVELOPE & data.keys()):  # the hub's, never an emitter's fields
        raise ValueError(f"{event_type}: {clash} belong to the envelope the hub fills in")
    return _adapter(cls).validate_python(data)


def build(event_type: str, data: dict[str, Any], **envelope: Any) -> TypedEvent:
    """The event of `event_type` with `data` (unchecked, as on the hot path). Raises
    `UnknownEventType` for a name the catalogue does not declare, TypeError for fields its class
    does not have."""
    entry = CATALOGUE.get(event_type)
    if entry is None:
        raise UnknownEventType(event_type)
    cls = entry.payload
    return cls(**(cls.kwargs(data) if cls.adapts else data), _data=data, **envelope)


AnswerProblem = Literal["empty", "too_short", "non_answer", "repeat", "tool_call_as_text"]
"""What the answer-quality check found wrong with a final answer (`answer.rejected`)."""

UsageData = dict[str, Any]
"""`Usage.model_dump()`: prompt_tokens, completion_tokens, total_tokens, estimated..."""


# ---------------------------------------------------------------------------------------- runs
@dataclass(frozen=True, slots=True, kw_only=True)
class RunStarted(TypedEvent):
    type: ClassVar[Literal["run.started"]] = "run.started"
    thread_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResumed(TypedEvent):
    type: ClassVar[Literal["run.resumed"]] = "run.resumed"
    thread_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunCompleted(TypedEvent):
    type: ClassVar[Literal["run.completed"]] = "run.completed"
    status: str
    final_answer: str | None = None
    termination: dict[str, Any] | None = None
    usage: UsageData
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadRepaired(TypedEvent):
    type: ClassVar[Literal["thread.repaired"]] = "thread.repaired"
    thread_id: str | None = None
    calls: list[dict[str, Any]]
    """Each tool call that had no result: `call_id`, `tool`, `namespace` and `answer` ("outcome":
    its recorded outcome, "waiting": it waited for an approval, "interrupted")."""


RUN_STARTED = declare("run.started", RunStarted)
RUN_RESUMED = declare("run.resumed", RunResumed)
RUN_COMPLETED = declare("run.completed", RunCompleted)
THREAD_REPAIRED = declare("thread.repaired", ThreadRepaired)


# ---------------------------------------------------------------------------- replies, models
@dataclass(frozen=True, slots=True, kw_only=True)
class ReplyStarted(TypedEvent):
    type: ClassVar[Literal["reply.started"]] = "reply.started"
    round: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplyCompleted(TypedEvent):
    type: ClassVar[Literal["reply.completed"]] = "reply.completed"
    round: int
    tool_calls: list[str]
    final: bool
    content: str | None = None
    usage: UsageData
    corrected: bool | None = None
    tool_protocol: str | None = None
    model: str | None = None
    truncated: bool | None = None
    """The reply was cut off at the length limit (`nodes.truncation`)."""
    reasoning: str | None = None
    """The model's reasoning (`Message.reasoning_content`: a server's `reasoning_content`, a
    text-format `Thought:`), shown to people and never sent back to the model."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallStarted(TypedEvent):
    type: ClassVar[Literal["model.call.started"]] = "model.call.started"
    model: str
    attempt: int
    streaming: bool
    server_address: str | None = None
    server_port: int | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    output_type: Literal["text", "json"] | None = None
    input_messages: list[dict[str, Any]] | None = None
    """With content capture (`models._genai_content`): the conversation sent, in the GenAI
    conventions' shape (`gen_ai.input.messages`)."""
    system_instructions: list[dict[str, Any]] | None = None
    """With content capture: the system messages as text parts (`gen_ai.system_instructions`)."""
    tool_definitions: list[dict[str, Any]] | None = None
    """With content capture: the tools offered (`gen_ai.tool.definitions`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallRetry(TypedEvent):
    type: ClassVar[Literal["model.call.retry"]] = "model.call.retry"
    model: str
    attempt: int
    delay: float
    error: str
    retry_after: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallCompleted(TypedEvent):
    type: ClassVar[Literal["model.call.completed"]] = "model.call.completed"
    model: str
    attempts: int
    usage: UsageData
    finish_reason: str | None = None
    tool_protocol: str | None = None
    response_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallFailure(TypedEvent):
    type: ClassVar[Literal["model.call.failed"]] = "model.call.failed"
    error: str
    attempts: int
    status_code: int | None = None
    """The HTTP status of the last attempt's error (429: the model server's rate limit)."""
    retry_after: float | None = None
    """The last attempt's `Retry-After` (seconds), when the model server sent one."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta(TypedEvent):
    type: ClassVar[Literal["text.delta"]] = "text.delta"
    delta: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningDelta(TypedEvent):
    """One fragment of the model's reasoning as a streamed reply arrives (servers with a
    reasoning parser stream it apart from the content); `reply.completed` has it whole."""

    type: ClassVar[Literal["reasoning.delta"]] = "reasoning.delta"
    delta: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TextReset(TypedEvent):
    """The text deltas a model call streamed so far are void: its attempt failed mid-stream (a
    cut connection, a stream without a finish reason) and a retry or the next model starts the
    text over."""

    type: ClassVar[Literal["text.reset"]] = "text.reset"
    model: str
    attempt: int
    discarded: int
    """Characters streamed by the failed attempt."""
    error: str
    reasoning_discarded: int | None = None
    """Characters of reasoning (`reasoning.delta`) the failed attempt streamed, void too."""


REPLY_STARTED = declare("reply.started", ReplyStarted)
REPLY_COMPLETED = declare("reply.completed", ReplyCompleted)
MODEL_CALL_STARTED = declare("model.call.started", ModelCallStarted)
MODEL_CALL_RETRY = declare("model.call.retry", ModelCallRetry)
MODEL_CALL_COMPLETED = declare("model.call.completed", ModelCallCompleted)
MODEL_CALL_FAILED = declare("model.call.failed", ModelCallFailure)
TEXT_DELTA = declare("text.delta", TextDelta)
TEXT_RESET = declare("text.reset", TextReset)
REASONING_DELTA = declare("reasoning.delta", ReasoningDelta)


# -------------------------------------------------------------------------------------- tools
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallStarted(TypedEvent):
    type: ClassVar[Literal["tool.call.started"]] = "tool.call.started"
    tool: str
    call_id: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallCompleted(TypedEvent):
    type: ClassVar[Literal["tool.call.completed"]] = "tool.call.completed"
    tool: str
    call_id: str
    output: str
    duration: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallFailed(TypedEvent):
    type: ClassVar[Literal["tool.call.failed"]] = "tool.call.failed"
    tool: str
    call_id: str
    error: str
    denied: bool
    arguments: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequested(TypedEvent):
    type: ClassVar[Literal["approval.requested"]] = "approval.requested"
    approval_id: str
    tool: str
    arguments: dict[str, Any]
    reason: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalResolved(TypedEvent):
    type: ClassVar[Literal["approval.resolved"]] = "approval.resolved"
    approval_id: str
    tool: str
    approved: bool
    reason: str | None = None
    arguments: dict[str, Any] | None = None
    """The reviewer's corrected arguments the call runs with (None: the model's)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ArtifactProduced(TypedEvent):
    """A tool produced an artifact; the model saw only its placeholder."""

    type: ClassVar[Literal["artifact"]] = "artifact"
    tool: str
    call_id: str
    artifact: dict[str, Any]
    """The whole `Artifact` as a dict: name, mime_type, content, path, summary."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCapReached(TypedEvent):
    type: ClassVar[Literal["tool.cap.reached"]] = "tool.cap.reached"
    max_tool_calls: int
    refused: list[str]


TOOL_CALL_STARTED = declare("tool.call.started", ToolCallStarted)
TOOL_CALL_COMPLETED = declare("tool.call.completed", ToolCallCompleted)
TOOL_CALL_FAILED = declare("tool.call.failed", ToolCallFailed)
APPROVAL_REQUESTED = declare("approval.requested", ApprovalRequested)
APPROVAL_RESOLVED = declare("approval.resolved", ApprovalResolved)
ARTIFACT = declare("artifact", ArtifactProduced)
TOOL_CAP_REACHED = declare("tool.cap.reached", ToolCapReached)


# ---------------------------------------------------------------------------------------- MCP
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolProgress(TypedEvent):
    """A running tool reported progress (an MCP server's `notifications/progress`)."""

    type: ClassVar[Literal["tool.progress"]] = "tool.progress"
    tool: str
    call_id: str
    server: str
    progress: float
    total: float | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MCPLog(TypedEvent):
    """An MCP server's log notification, published on each of its calls in flight."""

    type: ClassVar[Literal["mcp.log"]] = "mcp.log"
    tool: str
    call_id: str
    server: str
    level: str
    logger: str | None = None
    log_data: Any = None
    """The notification's `data` (`data` on the wire; `data` here is every event's dict)."""
    adapts: ClassVar[bool] = True

    def _dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"tool": self.tool, "call_id": self.call_id, "server": self.server}
        data["level"] = self.level
        if self.logger is not None:
            data["logger"] = self.logger
        if self.log_data is not None:
            data["data"] = self.log_data
        return data

    @staticmethod
    def kwargs(data: dict[str, Any]) -> dict[str, Any]:
        if "data" not in data:
            return data
        kwargs = dict(data)
        kwargs["log_data"] = kwargs.pop("data")
        return kwargs


@dataclass(frozen=True, slots=True, kw_only=True)
class MCPSampling(TypedEvent):
    """An MCP server asked the agent's model for a completion (`sampling/createMessage`)."""

    type: ClassVar[Literal["mcp.sampling"]] = "mcp.sampling"
    tool: str | None = None
    call_id: str | None = None
    server: str
    status: Literal["answered", "refused", "failed"]
    max_tokens: int
    """What the server asked for (the request sent is capped by `sampling_max_tokens`)."""
    model_hints: list[str] = field(default_factory=list)
    model: str | None = None
    usage: dict[str, Any] | None = None
    reason: str | None = None
    decided_by: Literal["config", "policy", "person", "budget"] | None = None
    """Who allowed or refused it: the server's config, the provider's sampling policy, a person,
    or the run's token budget (spent: refused before the request)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MCPTask(TypedEvent):
    """A tool call running as an MCP task changed status: created (`working`), `input_required`,
    `completed`, `failed`, or `cancelled` (by the server, or by the client abandoning the call)."""

    type: ClassVar[Literal["mcp.task"]] = "mcp.task"
    tool: str
    call_id: str
    server: str
    task_id: str
    status: str
    message: str | None = None
    """The server's `statusMessage`, when it gives one."""
    poll_interval_ms: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ElicitationRequested(TypedEvent):
    """An MCP server asks the user for input; answer with the provider's `respond`."""

    type: ClassVar[Literal["elicitation.requested"]] = "elicitation.requested"
    tool: str | None = None
    call_id: str | None = None
    request: dict[str, Any]
    """id, server, message, requested_schema, url."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ElicitationResolved(TypedEvent):
    type: ClassVar[Literal["elicitation.resolved"]] = "elicitation.resolved"
    tool: str | None = None
    call_id: str | None = None
    id: str
    server: str
    action: Literal["accept", "decline", "cancel"]


TOOL_PROGRESS = declare("tool.progress", ToolProgress)
MCP_LOG = declare("mcp.log", MCPLog)
MCP_SAMPLING = declare("mcp.sampling", MCPSampling)
MCP_TASK = declare("mcp.task", MCPTask)
ELICITATION_REQUESTED = declare("elicitation.requested", ElicitationRequested)
ELICITATION_RESOLVED = declare("elicitation.resolved", ElicitationResolved)


# ---------------------------------------------------------------------------- interruptions
@dataclass(frozen=True, slots=True, kw_only=True)
class InterruptionRequested(TypedEvent):
    """The run waits for someone (`guard._interruptions`): one event for every kind (approval,
    client_tool, breakpoint, question), published where the kind opens its wait. The older
    `approval.requested` and `elicitation.requested` still go out beside it, for readers
    written against them."""

    type: ClassVar[Literal["interruption.requested"]] = "interruption.requested"
    id: str
    """The id its answer names (`Agent.decide`, `POST /api/interruptions/{id}`)."""
    kind: str
    tool: str | None = None
    call_id: str | None = None
    """The tool call it belongs to: an approval's (or client tool's) own call, the call whose
    tool asks a question; None for a breakpoint."""
    request: dict[str, Any]
    """What the person is shown: the kind's payload model in its JSON form (an `Approval`, a
    `Question`), the `payload` of the interruption as `GET /api/interruptions` lists it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InterruptionDecided(TypedEvent):
    """The run took an interruption's answer (the older `approval.resolved` and
    `elicitation.resolved` still go out beside it)."""

    type: ClassVar[Literal["interruption.decided"]] = "interruption.decided"
    id: str
    kind: str
    tool: str | None = None
    call_id: str | None = None
    answer: dict[str, Any]
    """The kind's answer model in its JSON form (an `ApprovalDecision`, a `QuestionAnswer`)."""


INTERRUPTION_REQUESTED = declare("interruption.requested", InterruptionRequested)
INTERRUPTION_DECIDED = declare("interruption.decided", InterruptionDecided)


class Deprecation(NamedTuple):
    """A deprecated event: the event that replaces it and the release that stops emitting it."""

    replacement: str
    removed_in: str = "0.3.0"
    """The release that stops emitting it (every deprecated event so far: 0.3.0)."""


DEPRECATED_EVENTS: dict[str, Deprecation] = {
    APPROVAL_REQUESTED: Deprecation(INTERRUPTION_REQUESTED),
    APPROVAL_RESOLVED: Deprecation(INTERRUPTION_DECIDED),
    ELICITATION_REQUESTED: Deprecation(INTERRUPTION_REQUESTED),
    ELICITATION_RESOLVED: Deprecation(INTERRUPTION_DECIDED),
}
"""The older events of an interruption, still emitted beside the `interruption.*` pair (by
`telemetry._interruption_events`, the one place that emits both) until `removed_in`: kinds
`approval` and `client_tool` had `approval.*`, `question` had `elicitation.*` (`breakpoint` never
had one). Read the replacement instead; the older events say nothing it does not."""


# ------------------------------------------------------------------------------ loops, nodes
@dataclass(frozen=True, slots=True, kw_only=True)
class LoopIteration(TypedEvent):
    type: ClassVar[Literal["loop.iteration"]] = "loop.iteration"
    iteration: int


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopTerminated(TypedEvent):
    """Why a loop ended; an abort condition may add keys of its own, kept as they are."""

    type: ClassVar[Literal["loop.terminated"]] = "loop.terminated"
    reason: str
    iterations: int
    extra: dict[str, Any] = field(default_factory=dict)
    """The abort condition's own keys (in `data` beside `reason` and `iterations`)."""

    def _dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "iterations": self.iterations, **self.extra}

    adapts: ClassVar[bool] = True

    @staticmethod
    def kwargs(data: dict[str, Any]) -> dict[str, Any]:
        """Emitted keys as the class takes them: the abort condition's own ones under `extra`
        (as they are when they come as the class's fields already)."""
        if "extra" in data:
            return data
        own: dict[str, Any] = {key: data[key] for key in ("reason", "iterations") if key in data}
        extra = {key: value for key, value in data.items() if key not in own}
        return {**own, "extra": extra} if extra else own


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeFailure(TypedEvent):
    """A node raised (or its model call failed for good)."""

    type: ClassVar[Literal["node.failed"]] = "node.failed"
    kind: str
    error_type: str
    error: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ParallelStarted(TypedEvent):
    type: ClassVar[Literal["parallel.started"]] = "parallel.started"
    children: list[str]
    dropped: int


LOOP_ITERATION = declare("loop.iteration", LoopIteration)
LOOP_TERMINATED = declare("loop.terminated", LoopTerminated)
NODE_FAILED = declare("node.failed", NodeFailure)
PARALLEL_STARTED = declare("parallel.started", ParallelStarted)


# ------------------------------------------------------------------------- answers, phases
@dataclass(frozen=True, slots=True, kw_only=True)
class OutputValidated(TypedEvent):
    type: ClassVar[Literal["output.validated"]] = "output.validated"
    schema: str


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputInvalid(TypedEvent):
    """A final answer did not match the agent's output type."""

    type: ClassVar[Literal["output.invalid"]] = "output.invalid"
    error: str
    retry: bool
    """Re-asked (else the run fails)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AnswerRejected(TypedEvent):
    """The answer-quality check rejected a final answer."""

    type: ClassVar[Literal["answer.rejected"]] = "answer.rejected"
    problem: AnswerProblem
    retry: bool
    """Re-asked, else accepted as it is."""
    answer: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AnswerFallback(TypedEvent):
    """A run stopped without an answer and wrote a fallback one."""

    type: ClassVar[Literal["answer.fallback"]] = "answer.fallback"
    reason: str
    answer: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Phase(TypedEvent):
    """A phase of an agent's work begins or ends (e.g. "synthesizing", "selecting_tools")."""

    type: ClassVar[Literal["phase"]] = "phase"
    phase: str
    status: Literal["started", "completed", "failed"]
    content: str | None = None
    error: str | None = None
    usage: UsageData | None = None
    tool_calls: int | None = None
    """synthesizing: the tool calls of the trace."""
    total: int | None = None
    """selecting_tools: the tools to choose from."""
    chosen: list[str] | None = None
    ignored: list[str] | None = None
    """selecting_tools: names of the pick that are no tool of the agent's (dropped)."""
    level: str | None = None
    """selecting_tools: how the structured call succeeded (`models.structured`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextCompacted(TypedEvent):
    """A request was compacted to fit the context window (the server's `compact` channel)."""

    type: ClassVar[Literal["context.compacted"]] = "context.compacted"
    messages_before: int
    messages_after: int
    tokens_before: int
    tokens_after: int
    budget: int
    window: int
    strategy: Literal["summarize", "drop", "cut"]
    summarized: int
    dropped: int
    cut_tool_results: int
    over_budget: bool
    tokenizer: str
    summary_error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Inject(TypedEvent):
    """A follow-up injected into a run (`Agent.inject`)."""

    type: ClassVar[Literal["inject"]] = "inject"
    status: Literal["queued", "applied", "dropped"]
    content: str | None = None
    """applied: the merged `[USER INTERRUPT]` message."""
    count: int | None = None
    held_back_answer: bool | None = None


OUTPUT_VALIDATED = declare("output.validated", OutputValidated)
OUTPUT_INVALID = declare("output.invalid", OutputInvalid)
ANSWER_REJECTED = declare("answer.rejected", AnswerRejected)
ANSWER_FALLBACK = declare("answer.fallback", AnswerFallback)
PHASE = declare("phase", Phase)
CONTEXT_COMPACTED = declare("context.compacted", ContextCompacted)
INJECT = declare("inject", Inject)


# ---------------------------------------------------------------- plan, supervisor, critic
@dataclass(frozen=True, slots=True, kw_only=True)
class PlanCreated(TypedEvent):
    type: ClassVar[Literal["plan.created"]] = "plan.created"
    steps: list[dict[str, Any]]
    replan: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanStepStarted(TypedEvent):
    type: ClassVar[Literal["plan.step.started"]] = "plan.step.started"
    step: int
    task: str
    model: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanStepCompleted(TypedEvent):
    type: ClassVar[Literal["plan.step.completed"]] = "plan.step.completed"
    step_namespace: str
    number: int
    task: str
    model: str | None = None
    status: Literal["success", "failure"]
    answer: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SupervisorPlanned(TypedEvent):
    type: ClassVar[Literal["supervisor.planned"]] = "supervisor.planned"
    sub_questions: list[str]
    asked: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SupervisorFollowUps(TypedEvent):
    type: ClassVar[Literal["supervisor.follow_ups"]] = "supervisor.follow_ups"
    follow_ups: list[str]


@dataclass(frozen=True, slots=True, kw_only=True)
class CriticReview(TypedEvent):
    type: ClassVar[Literal["critic.verdict"]] = "critic.verdict"
    accept: bool
    critique: str
    rerun: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class CriticFailed(TypedEvent):
    type: ClassVar[Literal["critic.failed"]] = "critic.failed"
    error: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SupervisorPruned(TypedEvent):
    type: ClassVar[Literal["supervisor.pruned"]] = "supervisor.pruned"
    notes: dict[str, int]
    """Sub-agent namespace → the characters of raw notes dropped."""
    max_chars: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ReflectionCompleted(TypedEvent):
    type: ClassVar[Literal["reflection.completed"]] = "reflection.completed"
    tool_calls: int
    verdict: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReflectionFailed(TypedEvent):
    type: ClassVar[Literal["reflection.failed"]] = "reflection.failed"
    tool_calls: int
    error: str


PLAN_CREATED = declare("plan.created", PlanCreated)
PLAN_STEP_STARTED = declare("plan.step.started", PlanStepStarted)
PLAN_STEP_COMPLETED = declare("plan.step.completed", PlanStepCompleted)
SUPERVISOR_PLANNED = declare("supervisor.planned", SupervisorPlanned)
SUPERVISOR_FOLLOW_UPS = declare("supervisor.follow_ups", SupervisorFollowUps)
CRITIC_VERDICT = declare("critic.verdict", CriticReview)
CRITIC_FAILED = declare("critic.failed", CriticFailed)
SUPERVISOR_PRUNED = declare("supervisor.pruned", SupervisorPruned)
REFLECTION_COMPLETED = declare("reflection.completed", ReflectionCompleted)
REFLECTION_FAILED = declare("reflection.failed", ReflectionFailed)


# ---------------------------------------------------------------------------------------- replay
@dataclass(frozen=True, slots=True, kw_only=True)
class ReplayForked(TypedEvent):
    type: ClassVar[Literal["replay.forked"]] = "replay.forked"
    iteration: int
    """Model calls answered from the recording before this one went to the real model."""
    tick: int
    recording: str
    """The recording replayed."""


REPLAY_FORKED = declare("replay.forked", ReplayForked)


# ---------------------------------------------------------------------------------------- debug
@dataclass(frozen=True, slots=True, kw_only=True)
class Substituted(TypedEvent):
    """A substitution rule answered instead of the tree (`_run.substitutions`)."""

    type: ClassVar[Literal["debug.substituted"]] = "debug.substituted"
    target: str
    """"node" (a node's result forced, unticked), "model" (a model node's reply scripted, the
    model not asked) or "tool" (a tool's output scripted, uncalled)."""
    name: str
    """The node's slash path, or the tool's name."""
    status: str | None = None
    """The node's forced status."""
    output: str | None = None
    """The tool's scripted output, or the scripted reply's text."""
    arguments: dict[str, Any] | None = None
    """The call's arguments (a tool rule)."""
    tool_calls: list[dict[str, Any]] | None = None
    """The scripted reply's tool calls (`name`, `arguments` each)."""


SUBSTITUTED = declare("debug.substituted", Substituted)


class Event(BaseModel):
    """An event as a name and a dict: a type the catalogue does not declare (a user's own,
    published outside the test suite), or one built by hand. `payload()` is the same event
    typed. Events of the catalogue are its classes (`CatalogueEvent`), with the same `type`,
    `node`, `namespace`, `data`, `ts` and `run_id`."""

    type: str
    node: str | None = None
    namespace: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    ts: float = Field(default_factory=time.time)
    run_id: str | None = None

    def payload(self) -> TypedEvent:
        """The event as its type's class (`data` validated; built on demand, never on the hot
        path). Raises `UnknownEventType` for a type the catalogue does not declare."""
        check(self.type, self.data)
        return build(
            self.type,
            self.data,
            node=self.node,
            namespace=self.namespace,
            ts=self.ts,
            run_id=self.run_id,
        )

    def wire(self) -> dict[str, Any]:
        """The event as SSE, `--json` and recordings carry it."""
        return self.model_dump()


CatalogueEvent = (
    RunStarted
    | RunResumed
    | RunCompleted
    | ThreadRepaired
    | ReplyStarted
    | ReplyCompleted
    | ModelCallStarted
    | ModelCallRetry
    | ModelCallCompleted
    | ModelCallFailure
    | TextDelta
    | TextReset
    | ReasoningDelta
    | ToolCallStarted
    | ToolCallCompleted
    | ToolCallFailed
    | ApprovalRequested
    | ApprovalResolved
    | ArtifactProduced
    | ToolCapReached
    | ToolProgress
    | MCPLog
    | MCPSampling
    | MCPTask
    | ElicitationRequested
    | ElicitationResolved
    | InterruptionRequested
    | InterruptionDecided
    | LoopIteration
    | LoopTerminated
    | NodeFailure
    | ParallelStarted
    | OutputValidated
    | OutputInvalid
    | AnswerRejected
    | AnswerFallback
    | Phase
    | ContextCompacted
    | Inject
    | PlanCreated
    | PlanStepStarted
    | PlanStepCompleted
    | SupervisorPlanned
    | SupervisorFollowUps
    | CriticReview
    | CriticFailed
    | SupervisorPruned
    | ReflectionCompleted
    | ReflectionFailed
    | ReplayForked
    | Substituted
)
"""Every event of the catalogue: `match` on it, and `assert_never` where every type counts
(tests/telemetry/test_event_catalogue.py checks it lists each declared class)."""

AnyEvent = CatalogueEvent | Event
"""What a subscriber receives: an event of the catalogue, or a plain `Event` of a name it does
not declare (a user's own type, outside the test suite)."""


def typed(event: AnyEvent) -> CatalogueEvent | None:
    """`event` as its catalogue class, for readers that `match` on it: itself, a plain `Event` of
    a declared type (one built by hand) read as its class (validated), None for a type the
    catalogue does not declare (a user's own)."""
    if not isinstance(event, Event):
        return event
    if event.type not in CATALOGUE:
        return None
    return event.payload()  # type: ignore[return-value]  # the catalogue's classes are the union's
