"""Answering an MCP server's `sampling/createMessage`: the server asks the client's model.

A server may ask the client to run a completion for it (to summarise a document it fetched, to
classify a result) instead of holding model credentials itself. The agent's model client answers,
under rules the server cannot change:

- **Off unless allowed.** `sampling: deny` (the default) refuses every request with an error the
  server reads; `sampling: allow` answers them. A server that could spend the agent's tokens
  without the user's say-so is a cost and a prompt-injection channel.
- **Bounded.** The request's `maxTokens` is honoured, capped by `sampling_max_tokens`.
- **Counted.** The tokens count in the run's usage and its token budget (through the tool call
  that was running when the server asked: `tools.call_context.add_call_usage`), and each request
  is an `mcp.sampling` event (server, model, max_tokens, usage, or why it was refused).
- **Model preferences are hints.** The agent's client decides the model; the server's hints are
  recorded in the event, not obeyed.

Only text is exchanged: image or audio content in a request is refused, since the framework's
messages carry text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...telemetry import events as ev
from .._call_context import ToolCallContext, add_call_usage

if TYPE_CHECKING:
    from mcp.types import CreateMessageRequestParams, CreateMessageResult, ErrorData

    from ...models._client import ModelClient
    from ._config import MCPServerConfig


def _refuse(message: str) -> ErrorData:
    from mcp.types import INVALID_REQUEST, ErrorData

    return ErrorData(code=INVALID_REQUEST, message=message)


async def answer_sampling(
    params: CreateMessageRequestParams,
    *,
    config: MCPServerConfig,
    client: ModelClient | None,
    call: ToolCallContext | None,
    emit: Callable[..., None] | None,
) -> CreateMessageResult | ErrorData:
    """The server's completion, from `client`, or an error saying why not."""
    from mcp.types import CreateMessageResult, TextContent

    from ...models._messages import Message, ai, human, system
    from ...models._types import ModelRequest

    hints = [hint.name for hint in (params.model_preferences.hints or [])] if params.model_preferences else []
    requested = params.max_tokens

    def report(**data: Any) -> None:
        if emit is not None:
            emit(ev.MCP_SAMPLING, server=config.name, max_tokens=requested, model_hints=hints, **data)

    if config.sampling != "allow":
        reason = (
            f"sampling is not allowed for MCP server {config.name!r} "
            "(the client's mcp_servers entry must set `sampling: allow`)"
        )
        report(status="refused", reason=reason)
        return _refuse(reason)
    if client is None:
        reason = f"MCP server {config.name!r} asked for sampling, but no model client is attached"
        report(status="refused", reason=reason)
        return _refuse(reason)
    messages: list[Message] = [system(params.system_prompt)] if params.system_prompt else []
    for message in params.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        if any(getattr(block, "type", None) != "text" for block in blocks):
            reason = "only text content can be sampled by this client"
            report(status="refused", reason=reason)
            return _refuse(reason)
        text = "\n".join(str(getattr(block, "text", "")) for block in blocks)
        messages.append(ai(text) if message.role == "assistant" else human(text))
    max_tokens = min(requested, config.sampling_max_tokens)
    request = ModelRequest(
        messages=messages,
        max_tokens=max_tokens,
        temperature=params.temperature,
        extra_params={"stop": list(params.stop_sequences)} if params.stop_sequences else {},
    )
    try:
        response = await client.complete(request)
    except Exception as exc:  # the server reads why; the run goes on
        reason = f"the client's model failed: {exc}"
        report(status="failed", reason=reason)
        return _refuse(reason)
    add_call_usage(call, response.usage)
    report(status="answered", model=response.model, usage=response.usage.model_dump())
    stop = "maxTokens" if response.finish_reason == "length" else "endTurn"
    return CreateMessageResult(
        role="assistant",
        content=TextContent(type="text", text=response.message.content or ""),
        model=response.model,
        stop_reason=stop,
    )
