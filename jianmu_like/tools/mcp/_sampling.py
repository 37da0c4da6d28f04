"""Answering an MCP server's `sampling/createMessage`: the server asks the client's model.

A server may ask the client to run a completion for it (to summarise a document it fetched, to
classify a result) instead of holding model credentials itself. The agent's model client answers,
under rules the server cannot change:

- **Off unless allowed.** `sampling: deny` (the default) refuses every request with an error the
  server reads; `sampling: allow` answers them; `sampling: ask` puts each one to a person (the
  same pending requests as elicitations: `Agent.pending_elicitations`, the server's API, the CLI,
  the console), and only an accepted one is answered. A server that could spend the agent's
  tokens without the user's say-so is a cost and a prompt-injection channel.
- **A guard policy decides each request**, when one is set (`MCPToolProvider.sampling_policy`, a
  function of the `SamplingRequest` returning "allow", "deny" or "ask", or a `SamplingDecision`
  with a reason): instead of the config's `allow` / `ask`, never instead of `deny` (a denied
  server is not offered sampling at all).
- **Bounded.** The request's `maxTokens` is honoured, capped by `sampling_max_tokens`.
- **Counted, before and after.** Before each request the run's token budget is checked (what the
  run and the batch's calls spent, and the requests in flight): once it is spent the request is
  refused, and `maxTokens` is capped by what is left. The tokens then count in the run's usage
  and budget (through the tool call that was running when the server asked:
  `tools.call_context.add_call_usage`), and each request is an `mcp._sampling` event (server,
  model, max_tokens, usage, or why it was refused). A request while none of the server's calls
  runs is refused (`tools.mcp._bounds`).
- **Model preferences are hints, among the models allowed.** With `sampling_models` configured,
  the first of the request's model hints that is part of an allowed model's name picks it (the
  spec's substring rule), else the first allowed model answers; without, the agent's model
  does. A server never names a model the configuration did not allow. The hints and the model
  that answered are in the event; the numeric priorities (cost, speed, intelligence) are not
  weighed, since the client knows nothing of the models' prices or speeds.

Only text is exchanged: image or audio content in a request is refused, since the framework's
messages carry text.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from ...telemetry import events as ev
from .._call_context import ToolCallContext, add_call_usage
from ._elicitation import ElicitationBox

if TYPE_CHECKING:
    from mcp.types import CreateMessageRequestParams, CreateMessageResult, ErrorData

    from ...models._client import ModelClient
    from ._config import MCPServerConfig


Verdict = Literal["allow", "deny", "ask"]


class SamplingRequest(BaseModel):
    """What a server asks the agent's model, as a sampling policy (and a person) sees it."""

    server: str
    messages: list[dict[str, str]]
    """`{"role": "user" | "assistant", "content": text}`, in order."""
    system_prompt: str | None = None
    max_tokens: int
    """What the server asked for (the request sent is capped by `sampling_max_tokens`)."""
    model_hints: list[str] = Field(default_factory=list)


class SamplingDecision(BaseModel):
    """A sampling policy's answer; `reason` is what the server reads when it is refused."""

    decision: Verdict
    reason: str = ""


PolicyAnswer = Verdict | SamplingDecision
SamplingPolicy = Callable[[SamplingRequest], PolicyAnswer | Awaitable[PolicyAnswer]]
"""Decides each sampling request of a server (sync or async)."""


async def _decide(policy: SamplingPolicy, request: SamplingRequest) -> SamplingDecision:
    """The policy's decision; one that raises or answers something else denies, saying why."""
    try:
        verdict = policy(request)
        if inspect.isawaitable(verdict):
            verdict = await verdict
    except Exception as exc:
        return SamplingDecision(decision="deny", reason=f"the sampling policy failed: {exc!r}")
    if isinstance(verdict, SamplingDecision):
        return verdict
    if verdict in ("allow", "deny", "ask"):
        return SamplingDecision(decision=verdict)
    return SamplingDecision(
        decision="deny", reason=f"the sampling policy answered {verdict!r}, not allow, deny or ask"
    )


def sampling_model(allowed: list[str], hints: list[str]) -> str | None:
    """The allowed model the hints pick (the first hint contained in an allowed name, compared
    without case), else the first allowed one; None (the client's model) when none is configured."""
    for hint in hints:
        for model in allowed:
            if hint and hint.lower() in model.lower():
                return model
    return allowed[0] if allowed else None


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
    policy: SamplingPolicy | None = None,
    box: ElicitationBox | None = None,
) -> CreateMessageResult | ErrorData:
    """The server's completion, from `client`, or an error saying why not (the config, the
    policy or a person refused it, or the model failed)."""
    from mcp.types import CreateMessageResult, TextContent

    from ...models._messages import Message, ai, human, system
    from ...models._types import ModelRequest

    preferences = params.model_preferences
    hints = [hint.name for hint in (preferences.hints or []) if hint.name] if preferences else []
    requested = params.max_tokens

    def report(**data: Any) -> None:
        if emit is not None:
            emit(ev.MCPSampling, server=config.name, max_tokens=requested, model_hints=hints, **data)

    if config.sampling == "deny":
        reason = (
            f"sampling is not allowed for MCP server {config.name!r} "
            "(the client's mcp_servers entry must set `sampling: allow` or `ask`)"
        )
        report(status="refused", reason=reason, decided_by="config")
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
    asked = SamplingRequest(
        server=config.name,
        messages=[{"role": m.role, "content": m.content or ""} for m in messages if m.role != "system"],
        system_prompt=params.system_prompt,
        max_tokens=requested,
        model_hints=hints,
    )
    decision, decided_by = SamplingDecision(decision=config.sampling), "config"
    if policy is not None:
        decision, decided_by = await _decide(policy, asked), "policy"
    if decision.decision == "ask":
        decision, decided_by = await _ask_person(asked, config, box, emit), "person"
    if decision.decision != "allow":
        reason = decision.reason or f"the {decided_by} refused sampling for MCP server {config.name!r}"
        report(status="refused", reason=reason, decided_by=decided_by)
        return _refuse(reason)
    max_tokens = min(requested, config.sampling_max_tokens)
    budget = call.budget if call is not None else None
    if budget is not None:  # checked now, after any wait for a person: others may have spent it
        left = budget.left()
        if left <= 0:
            reason = (
                f"the run's token budget is spent ({budget.used} of {budget.limit} tokens"
                + (f", {budget.reserved} reserved by requests in flight" if budget.reserved else "")
                + f"): sampling refused for MCP server {config.name!r}"
            )
            report(status="refused", reason=reason, decided_by="budget")
            return _refuse(reason)
        max_tokens = min(max_tokens, left)
    request = ModelRequest(
        messages=messages,
        model=sampling_model(config.sampling_models, hints),
        max_tokens=max_tokens,
        temperature=params.temperature,
        extra_params={"stop": list(params.stop_sequences)} if params.stop_sequences else {},
    )
    if budget is not None:
        budget.reserved += max_tokens
    try:
        response = await client.complete(request)
    except Exception as exc:  # the server reads why; the run goes on
        reason = f"the client's model failed: {exc}"
        report(status="failed", reason=reason)
        return _refuse(reason)
    finally:
        if budget is not None:
            budget.reserved -= max_tokens
    add_call_usage(call, response.usage)
    report(status="answered", model=response.model, usage=response.usage.model_dump(), decided_by=decided_by)
    stop = "maxTokens" if response.finish_reason == "length" else "endTurn"
    return CreateMessageResult(
        role="assistant",
        content=TextContent(type="text", text=response.message.content or ""),
        model=response.model,
        stop_reason=stop,
    )


async def _ask_person(
    asked: SamplingRequest,
    config: MCPServerConfig,
    box: ElicitationBox | None,
    emit: Callable[..., None] | None,
) -> SamplingDecision:
    """Put the request to a person (the provider's elicitation box): accept allows it."""
    if box is None:
        return SamplingDecision(decision="deny", reason="no person can be asked about this sampling request")
    if box.full():
        why = f"{box.max_open} questions of this server are open already (max_open_elicitations)"
        return SamplingDecision(
            decision="deny", reason=f"sampling for MCP server {config.name!r} refused: {why}"
        )
    answer = await box.ask_human(
        message=(
            f"MCP server {config.name!r} asks the agent's model for a completion "
            f"(at most {min(asked.max_tokens, config.sampling_max_tokens)} tokens): accept to let it answer"
        ),
        kind="sampling",
        details=asked.model_dump(),
        emit=emit,
        runs=box.callers(),  # it arrives in the session's task: any run calling may have asked
    )
    if answer.action == "accept":
        return SamplingDecision(decision="allow")
    why = "nobody answered in time" if answer.action == "cancel" else "a person declined it"
    return SamplingDecision(decision="deny", reason=f"sampling for MCP server {config.name!r} refused: {why}")
