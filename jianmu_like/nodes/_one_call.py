"""An agent config's sampling settings on one model call, plain or structured.

Several nodes ask the model exactly once — a single-call LLM node, the presets' planner, writer
and compressor (`PromptCall`), the supervisor's steps, the critic, tool selection, synthesis.
Each must send the *agent's* model, temperature, token limit, timeout and extra parameters; this
module is the one place that maps a `ModelCallConfig` onto a request, so a new setting reaches every
such call at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from ..models._client import ModelClient
from ..models._messages import Message
from ..models._structured import StructuredOutputError, StructuredResult, structured_llm_call
from ..models._types import ModelRequest, Usage
from ..telemetry import events as ev
from ._settings import ModelCallConfig


def request_for(config: ModelCallConfig, messages: list[Message], **overrides: Any) -> ModelRequest:
    """A request for `messages` with `config`'s sampling settings (`overrides` win, e.g.
    `stream=True`)."""
    fields: dict[str, Any] = {
        "messages": messages,
        "model": config.model,
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
        "top_p": config.top_p,
        "top_k": config.top_k,
        "timeout": config.timeout,
        "extra_params": dict(config.extra_params),
    }
    fields.update(overrides)
    return ModelRequest(**fields)


async def structured_call(
    client: ModelClient,
    messages: list[Message],
    schema: type[BaseModel] | Mapping[str, Any],
    config: ModelCallConfig,
    **options: Any,
) -> StructuredResult:
    """`structured_llm_call` with `config`'s model, temperature, token limit and timeout
    (`options`: its other keywords — `parse_fn`, `default_value`, `name`, `on_event`, ...)."""
    settings: dict[str, Any] = {
        "model": config.model,
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
        "timeout": config.timeout,
    }
    settings.update(options)
    return await structured_llm_call(client, messages, schema, **settings)


def spent(exc: BaseException) -> Usage | None:
    """What a failed call still cost (the invalid replies of a structured call), for the usage
    key: None when nothing was paid for."""
    if isinstance(exc, StructuredOutputError) and exc.calls:
        return exc.usage
    return None


def reply_completed(emit: Callable[..., None], content: str, usage: Usage, reasoning: str | None) -> None:
    """The `reply.completed` of a node that asks once and answers (a single-call LLM node, a
    `PromptCall`, the supervisor's answer): final, no tool calls, and the model's reasoning on
    it as the ReAct loop's LLM node puts it, for people (never sent back to the model)."""
    emit(
        ev.ReplyCompleted,
        round=1,
        tool_calls=[],
        final=True,
        content=content,
        usage=usage.model_dump(),
        reasoning=reasoning,
    )
