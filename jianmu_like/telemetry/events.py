"""The event catalogue: every telemetry event type, declared once with its typed payload.

An emitter names its event by the constant declared here (`self.emit(ev.TOOL_CALL_STARTED,
tool=..., call_id=..., arguments=...)`), the SSE mapping (`server.channels`), the CLI and
OpenTelemetry (`telemetry.otel`) dispatch on the same constants, and the event table of
docs/guides/telemetry.md is checked against `CATALOGUE` (tests/telemetry/test_event_catalogue.py).

Emitting stays cheap: the hot path passes plain keyword arguments, kept as `Event.data`, and
nothing is validated while an agent runs. The payload models say what each type carries, give
readers a typed view (`event.payload()`), and check the emitters in the test suite, where
`JIANMU_CHECK_EVENTS=1` makes the hub validate every event it publishes against its model and
refuse a type the catalogue does not declare.

Adding an event type: a payload model (fields an emitter always sends are required, the others
default to None) and one `declare(...)` line below.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import JianmuError


class Payload(BaseModel):
    """The data of one event type. Unknown fields are refused: an emitter that sends a field
    the catalogue does not declare fails the suite's check."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True, slots=True)
class EventType:
    """One entry of the catalogue."""

    name: str
    payload: type[Payload]


CATALOGUE: dict[str, EventType] = {}
"""Event type name → its entry, in declaration order."""


def declare(name: str, payload: type[Payload]) -> str:
    """Add an event type to the catalogue; returns its name (the constant emitters use)."""
    if name in CATALOGUE:
        raise ValueError(f"event type {name!r} is declared twice")
    CATALOGUE[name] = EventType(name, payload)
    return name


class UnknownEventType(KeyError, JianmuError):
    """An event type the catalogue does not declare (raised by `check` and `Event.payload`)."""

    def __str__(self) -> str:
        return f"event type {self.args[0]!r} is not in the catalogue (telemetry/events.py)"


def check(event_type: str, data: dict[str, Any]) -> Payload:
    """`data` validated against `event_type`'s payload model (the suite's emitter check)."""
    entry = CATALOGUE.get(event_type)
    if entry is None:
        raise UnknownEventType(event_type)
    return entry.payload.model_validate(data)


UsageData = dict[str, Any]
"""`Usage.model_dump()`: prompt_tokens, completion_tokens, total_tokens, estimated..."""


# ---------------------------------------------------------------------------------------- runs
class RunStarted(Payload):
    thread_id: str | None = None


class RunCompleted(Payload):
    status: str
    final_answer: str | None = None
    termination: dict[str, Any] | None = None
    usage: UsageData
    error: str | None = None


class ThreadRepaired(Payload):
    thread_id: str | None = None
    calls: list[dict[str, Any]]
    """Each tool call that had no result: `call_id`, `tool`, `namespace` and `answer` ("outcome":
    its recorded outcome, "waiting": it waited for an approval, "interrupted")."""


RUN_STARTED = declare("run.started", RunStarted)
RUN_RESUMED = declare("run.resumed", RunStarted)
RUN_COMPLETED = declare("run.completed", RunCompleted)
THREAD_REPAIRED = declare("thread.repaired", ThreadRepaired)


# ---------------------------------------------------------------------------- replies, models
class ReplyStarted(Payload):
    round: int


class ReplyCompleted(Payload):
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


class ModelCallStarted(Payload):
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


class ModelCallRetry(Payload):
    model: str
    attempt: int
    delay: float
    error: str
    retry_after: float | None = None


class ModelCallCompleted(Payload):
    model: str
    attempts: int
    usage: UsageData
    finish_reason: str | None = None
    tool_protocol: str | None = None
    response_id: str | None = None


class ModelCallFailure(Payload):
    error: str
    attempts: int
    status_code: int | None = None
    """The HTTP status of the last attempt's error (429: the model server's rate limit)."""
    retry_after: float | None = None
    """The last attempt's `Retry-After` (seconds), when the model server sent one."""


class TextDelta(Payload):
    delta: str


class ReasoningDelta(Payload):
    """One fragment of the model's reasoning as a streamed reply arrives (servers with a
    reasoning parser stream it apart from the content); `reply.completed` has it whole."""

    delta: str


class TextReset(Payload):
    """The text deltas a model call streamed so far are void: its attempt failed mid-stream (a
    cut connection, a stream without a finish reason) and a retry or the next model starts the
    text over."""

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
class ToolCallStarted(Payload):
    tool: str
    call_id: str
    arguments: dict[str, Any]


class ToolCallCompleted(Payload):
    tool: str
    call_id: str
    output: str
    duration: float


class ToolCallFailed(Payload):
    tool: str
    call_id: str
    error: str
    denied: bool
    arguments: dict[str, Any] | None = None


class ApprovalRequested(Payload):
    approval_id: str
    tool: str
    arguments: dict[str, Any]
    reason: str | None = None


class ApprovalResolved(Payload):
    approval_id: str
    tool: str
    approved: bool
    reason: str | None = None
    arguments: dict[str, Any] | None = None
    """The reviewer's corrected arguments the call runs with (None: the model's)."""


class ArtifactProduced(Payload):
    """A tool produced an artifact; the model saw only its placeholder."""

    tool: str
    call_id: str
    artifact: dict[str, Any]
    """The whole `Artifact` as a dict: name, mime_type, content, path, summary."""


class ToolCapReached(Payload):
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
class ToolProgress(Payload):
    """A running tool reported progress (an MCP server's `notifications/progress`)."""

    tool: str
    call_id: str
    server: str
    progress: float
    total: float | None = None
    message: str | None = None


class MCPLog(Payload):
    """An MCP server's log notification, published on each of its calls in flight."""

    tool: str
    call_id: str
    server: str
    level: str
    logger: str | None = None
    data: Any = None


class MCPSampling(Payload):
    """An MCP server asked the agent's model for a completion (`sampling/createMessage`)."""

    tool: str | None = None
    call_id: str | None = None
    server: str
    status: Literal["answered", "refused", "failed"]
    max_tokens: int
    """What the server asked for (the request sent is capped by `sampling_max_tokens`)."""
    model_hints: list[str] = Field(default_factory=list)
    model: str | None = None
    usage: dict[str, Any] | None = None
    reason: str | None = None
    decided_by: Literal["config", "policy", "person", "budget"] | None = None
    """Who allowed or refused it: the server's config, the provider's sampling policy, a person,
    or the run's token budget (spent: refused before the request)."""


class MCPTask(Payload):
    """A tool call running as an MCP task changed status: created (`working`), `input_required`,
    `completed`, `failed`, or `cancelled` (by the server, or by the client abandoning the call)."""

    tool: str
    call_id: str
    server: str
    task_id: str
    status: str
    message: str | None = None
    """The server's `statusMessage`, when it gives one."""
    poll_interval_ms: int | None = None


class ElicitationRequested(Payload):
    """An MCP server asks the user for input; answer with the provider's `respond`."""

    tool: str | None = None
    call_id: str | None = None
    request: dict[str, Any]
    """id, server, message, requested_schema, url."""


class ElicitationResolved(Payload):
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


# ------------------------------------------------------------------------------ loops, nodes
class LoopIteration(Payload):
    iteration: int


class LoopTerminated(Payload):
    """Why a loop ended; an abort condition may add keys of its own, kept as they are."""

    model_config = ConfigDict(extra="allow", frozen=True)

    reason: str
    iterations: int


class NodeFailure(Payload):
    """A node raised (or its model call failed for good)."""

    kind: str
    error_type: str
    error: str


class ParallelStarted(Payload):
    children: list[str]
    dropped: int


LOOP_ITERATION = declare("loop.iteration", LoopIteration)
LOOP_TERMINATED = declare("loop.terminated", LoopTerminated)
NODE_FAILED = declare("node.failed", NodeFailure)
PARALLEL_STARTED = declare("parallel.started", ParallelStarted)


# ------------------------------------------------------------------------- answers, phases
class OutputValidated(Payload):
    schema_: str = Field(alias="schema")


class OutputInvalid(Payload):
    """A final answer did not match the agent's output type."""

    error: str
    retry: bool
    """Re-asked (else the run fails)."""


class AnswerRejected(Payload):
    """The answer-quality check rejected a final answer."""

    problem: Literal["empty", "too_short", "non_answer", "repeat", "tool_call_as_text"]
    retry: bool
    """Re-asked, else accepted as it is."""
    answer: str


class AnswerFallback(Payload):
    """A run stopped without an answer and wrote a fallback one."""

    reason: str
    answer: str


class Phase(Payload):
    """A phase of an agent's work begins or ends (e.g. "synthesizing", "selecting_tools")."""

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


class ContextCompacted(Payload):
    """A request was compacted to fit the context window (the server's `compact` channel)."""

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


class Inject(Payload):
    """A follow-up injected into a run (`Agent.inject`)."""

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
class PlanCreated(Payload):
    steps: list[dict[str, Any]]
    replan: bool


class PlanStepStarted(Payload):
    step: int
    task: str
    model: str | None = None


class PlanStepCompleted(Payload):
    step_namespace: str
    number: int
    task: str
    model: str | None = None
    status: Literal["success", "failure"]
    answer: str | None = None
    error: str | None = None


class SupervisorPlanned(Payload):
    sub_questions: list[str]
    asked: int


class SupervisorFollowUps(Payload):
    follow_ups: list[str]


class CriticReview(Payload):
    accept: bool
    critique: str
    rerun: bool


class CriticFailed(Payload):
    error: str


class SupervisorPruned(Payload):
    notes: dict[str, int]
    """Sub-agent namespace → the characters of raw notes dropped."""
    max_chars: int


class ReflectionCompleted(Payload):
    tool_calls: int
    verdict: str


class ReflectionFailed(Payload):
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
class ReplayForked(Payload):
    iteration: int
    """Model calls answered from the recording before this one went to the real model."""
    tick: int
    recording: str
    """The recording replayed."""


REPLAY_FORKED = declare("replay.forked", ReplayForked)


class Event(BaseModel):
    """One telemetry event. `node` is the emitting node's path, `namespace` its state namespace,
    so events of nested or parallel agents stay distinguishable. `data` is the payload as
    emitted (redacted); `payload()` is the same, typed."""

    type: str
    node: str | None = None
    namespace: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    ts: float = Field(default_factory=time.time)
    run_id: str | None = None

    def payload(self) -> Payload:
        """`data` as its type's payload model (validated; built on demand, never on the hot
        path). Raises `UnknownEventType` for a type the catalogue does not declare."""
        return check(self.type, self.data)
