"""The tool call being executed, readable from inside the tool (sync or async) while it runs.

A tool with outside side effects can pass `current_tool_call().idempotency_key` to the service
it calls (an idempotency key, a request id): if the process dies after the effect but before the
outcome is journaled, a retry with the same key is recognised by the service. The key is stable
across a resume of the thread and unique within the checkpoint store.

A tool can also end the ReAct loop it runs in: `finish(answer)` makes `answer` the agent's final
answer (the state contract lets the tool executor write `done` and `final_answer`), so a tool
that *is* the answer (a submit, a hand-off) saves the model a last round. `add_artifact(a)`
hands the user a document the model only sees as a placeholder (see `tools._artifact`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ._artifact import Artifact


class TokenBudget:
    """What is left of a run's token budget while its tool calls spend tokens themselves (an MCP
    server's sampling requests): shared by the calls of one batch, so each request is checked
    against what the run and the batch's other calls spent, before it is sent."""

    __slots__ = ("limit", "reserved", "used")

    def __init__(self, limit: int, used: int) -> None:
        self.limit = limit
        self.used = used
        """The run's tokens when the batch started, plus what its calls spent since."""
        self.reserved = 0
        """`max_tokens` of requests in flight (so concurrent requests cannot overshoot together)."""

    def left(self) -> int:
        return self.limit - self.used - self.reserved


class ToolCallContext(BaseModel):
    """Which call is running: its id (from the model), tool, and a durable idempotency key."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    call_id: str
    tool: str
    idempotency_key: str
    """`<thread id>/<journal key>` with a checkpointer; the call id otherwise."""
    final_answer: str | None = None
    """Set by `finish()`: the loop ends after this batch with this answer."""
    artifacts: list[Artifact] = Field(default_factory=list)
    """Artifacts the call produced (returned, or `add_artifact()`): kept out of the observation."""
    usage: Any = None
    """`models._types.Usage` of model calls made on the call's behalf (`add_call_usage`): an MCP
    server's sampling requests; the executor adds it to the run's usage."""
    budget: TokenBudget | None = Field(default=None, exclude=True, repr=False)
    """The run's token budget (None: unlimited), checked before tokens are spent on the call's
    behalf (`add_call_usage` counts them in)."""
    emit: Callable[..., None] | None = Field(default=None, exclude=True, repr=False)
    """The executing node's event emitter (`emit(event_type, **payload)`): a tool that reports
    progress (an MCP server's `notifications/progress`) publishes it as the run's events."""


_current: ContextVar[ToolCallContext | None] = ContextVar("jianmu_tool_call", default=None)


def current_tool_call() -> ToolCallContext | None:
    """The call being executed in this task or worker thread (None outside a tool call)."""
    return _current.get()


def set_current_tool_call(context: ToolCallContext | None) -> Token[ToolCallContext | None]:
    """Set the current call (the executor does this); returns a token for `reset_current_tool_call`."""
    return _current.set(context)


def reset_current_tool_call(token: Token[ToolCallContext | None]) -> None:
    _current.reset(token)


def finish(answer: str) -> None:
    """From inside a tool: end the ReAct loop after this batch of calls with `answer` as the
    final answer (the tool's return value is still its observation). RuntimeError outside a
    tool call; a call that fails afterwards (exception, timeout) does not end the loop."""
    context = _current.get()
    if context is None:
        raise RuntimeError("finish() can only be called from inside a tool while it runs")
    context.final_answer = str(answer)


def add_artifact(artifact: Artifact) -> str:
    """From inside a tool: attach `artifact` to the running call (it reaches the state, the
    events and the result like a returned one) and get its placeholder, e.g. to include in the
    tool's text result. Outside a tool call only the placeholder is returned."""
    context = _current.get()
    if context is not None:
        context.artifacts.append(artifact)
    return artifact.placeholder()


def artifact_observation(result: object) -> str | None:
    """The placeholder text for a tool result that is an Artifact or a non-empty list of them
    (each attached to the running call); None for any other result."""
    if isinstance(result, Artifact):
        return add_artifact(result)
    if isinstance(result, list | tuple) and result and all(isinstance(item, Artifact) for item in result):
        return "\n".join(add_artifact(item) for item in result)
    return None


def tool_event_emitter() -> Callable[..., None] | None:
    """From inside a tool: a function publishing events tagged with the running call's id and
    tool (through the executing node, so they carry its path), usable from other tasks too (an
    MCP session's reader task delivers progress); None outside a tool call or without telemetry."""
    context = _current.get()
    if context is None or context.emit is None:
        return None
    emit, tool, call_id = context.emit, context.tool, context.call_id

    def emit_tool_event(event: Callable[..., Any] | str, /, **payload: Any) -> None:
        emit(event, tool=tool, call_id=call_id, **payload)

    return emit_tool_event


def add_call_usage(context: ToolCallContext | None, usage: Any) -> None:
    """Count `usage` (a `models._types.Usage`) against the call `context` (None: nowhere)."""
    if context is not None:
        context.usage = usage if context.usage is None else context.usage + usage
        if context.budget is not None:
            context.budget.used += usage.total_tokens
