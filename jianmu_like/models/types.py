"""Request, response and usage shapes exchanged between nodes, the ModelClient and providers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .messages import Message


class Usage(BaseModel):
    """Token accounting. `a + b` sums, so a state field can accumulate it with `operator.add`."""

    model_config = ConfigDict(frozen=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    calls: int = 0
    """Number of model calls that reported this usage (successful attempts only)."""

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            calls=self.calls + other.calls,
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


class ModelResponse(BaseModel):
    """The assistant message a call produced, with its usage and provenance."""

    message: Message
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    finish_reason: str | None = None
    attempts: int = 1
    """How many attempts (retries and fallbacks included) the logical call took."""


ModelEventCallback = Callable[[str, dict[str, Any]], None]
"""Observer of a logical call: receives ("model.call.started" | "text.delta" | "model.call.retry"
| "model.call.completed" | "model.call.failed", data)."""
