"""Request, response and usage shapes exchanged between nodes, the ModelClient and providers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ParamSpec, Protocol

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from ..telemetry import events as ev
from ._construct import construct
from ._messages import Message

P = ParamSpec("P")


class Usage(BaseModel):
    """Token accounting. `a + b` sums, so a state field can accumulate it with `operator.add`.

    `total_tokens` is always filled, so a token budget always binds: a server reporting prompt
    and completion tokens only gets their sum, one reporting nothing gets an estimate
    (`models.usage.estimate_usage`, ~4 characters per token) and `estimated=True`, which a sum
    keeps when any part was estimated.
    """

    model_config = ConfigDict(frozen=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    calls: int = 0
    """Number of model calls that reported this usage (successful attempts only)."""
    estimated: bool = False
    """Some of these tokens were estimated from text length, not reported by the server
    (dumped only when true, so reported usage serialises as it always did)."""

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if not self.estimated:
            data.pop("estimated", None)
        return data

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        mine, theirs = self.__dict__, other.__dict__  # both valid: the sum needs no validation
        return construct(
            Usage,
            {
                "prompt_tokens": mine["prompt_tokens"] + theirs["prompt_tokens"],
                "completion_tokens": mine["completion_tokens"] + theirs["completion_tokens"],
                "total_tokens": mine["total_tokens"] + theirs["total_tokens"],
                "calls": mine["calls"] + theirs["calls"],
                "estimated": mine["estimated"] or theirs["estimated"],
            },
        )


class ModelRequest(BaseModel):
    """Everything one logical model call needs; the client fills `model` per attempt/fallback."""

    messages: list[Message]
    model: str | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: Any = None
    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    top_k: int | None = None
    timeout: float | None = None
    stream: bool = False
    extra_params: dict[str, Any] = Field(default_factory=dict)

    def sampling(self) -> dict[str, Any]:
        """The OpenAI sampling parameters this request sets (temperature, max_tokens, top_p):
        what the provider sends and what a trace records, from one list."""
        return {
            name: value
            for name, value in (
                ("temperature", self.temperature),
                ("max_tokens", self.max_tokens),
                ("top_p", self.top_p),
            )
            if value is not None
        }

    persona: str | None = None
    """The system prompt's own text, without the native tool-calling instructions and tool listing
    the prompt builder added to the first system message: a tool protocol that writes its own
    prompt (json, text) builds it around this. None: that system message is taken as it is."""


class ModelResponse(BaseModel):
    """The assistant message a call produced, with its usage and provenance."""

    message: Message
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    finish_reason: str | None = None
    attempts: int = 1
    """How many attempts (retries and fallbacks included) the logical call took."""
    response_id: str | None = None
    """The server's id of the completion (`chatcmpl-...`), for tracing (`gen_ai.response.id`)."""
    tool_protocol: str | None = None
    """How tools reached the model: "native" (function calling), "json" or "text" (described
    in the prompt, the reply parsed); None when the call offered no tools through an adapter."""
    correction: Message | None = None
    """A corrective message to append after `message` and ask again: the reply could not be
    read in the tool protocol (see `models._tool_protocol`)."""


ModelEvent = (
    ev.ModelCallStarted
    | ev.ModelCallRetry
    | ev.ModelCallCompleted
    | ev.ModelCallFailure
    | ev.TextDelta
    | ev.ReasoningDelta
    | ev.TextReset
)
"""The events of one logical model call (`ModelClient.complete`): each attempt's
`model.call.started`, a `model.call.retry` before each retry, the streamed `text.delta` and
`reasoning.delta`, a `text.reset` voiding what a failed attempt streamed, then
`model.call.completed` or `model.call.failed`."""


class ModelEventCallback(Protocol):
    """Observer of a logical model call: called with a `ModelEvent` class and its fields, as a
    node's `emit` is (`on_event(ev.ModelCallRetry, model=..., attempt=..., delay=..., error=...)`),
    so mypy checks every field an emitter sends and nothing is built for an unobserved call (no
    callback: no event; a node's `emit` builds it only when its hub has subscribers).

    A callable taking `(name, data)`, the shape before events were classes, still works through
    `ModelClient.complete` with a `DeprecationWarning` (see `models._client.typed_events`)."""

    def __call__(self, event: Callable[P, ModelEvent], /, *args: P.args, **fields: P.kwargs) -> None: ...
