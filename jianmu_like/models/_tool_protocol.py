"""`ProtocolAdapter`: lets a model without function calling act, by wrapping its provider.

A request with tools is rewritten for the chosen protocol — the tools and the reply format
go into the prompt (`json`: one JSON object per reply; `text`: the classic ReAct format), the
`tools` field is not sent — and the reply text is read back into tool calls or a final answer,
so nodes see the same `ModelResponse` whatever the protocol. `auto` uses native calling unless
the model is configured without it, or its server rejects the `tools` field (HTTP 400): then
it falls back to `json` and remembers that. A reply the protocol cannot read gets one
corrective message (`ModelResponse.correction`; the caller appends it and asks again, which
counts as an iteration of a ReAct loop); a second unreadable reply is taken as the answer.
"""

from __future__ import annotations

import itertools
from typing import Any, get_args

from .._base.config import ToolProtocol as ToolProtocol  # declared once, in the configuration
from ._constraints import reply_constraint
from ._errors import ModelError
from ._messages import Message, human
from ._provider import ChatProvider, DeltaCallback, ReasoningOnly
from ._react_text import TEXT_DIALECT
from ._server_probe import ServerCapabilities
from ._text_protocol import (
    CORRECTION_PREFIX,
    JSON_DIALECT,
    Dialect,
    is_correction,
    to_chat_messages,
    tool_functions,
)
from ._types import ModelRequest, ModelResponse

TOOL_PROTOCOLS: tuple[str, ...] = get_args(ToolProtocol)

DIALECTS: dict[str, Dialect] = {"json": JSON_DIALECT, "text": TEXT_DIALECT}


def correction_message(dialect: Dialect) -> Message:
    """The corrective user message for a reply that was in neither form of `dialect`."""
    return human(
        f"{CORRECTION_PREFIX}: it is neither a tool call nor a final answer.\n{dialect.reply_format}"
    )


class ProtocolAdapter:
    """A `ChatProvider` speaking `protocol` to the `inner` provider (see the module docstring).

    `supports_tools` is the model's known capability for `auto` (None: try native, learn from
    a 400). Requests without tools pass through unchanged.
    """

    def __init__(
        self, inner: ChatProvider, protocol: ToolProtocol, *, supports_tools: bool | None = None
    ) -> None:
        if protocol not in TOOL_PROTOCOLS:
            raise ValueError(f"unknown tool_protocol {protocol!r} (one of {', '.join(TOOL_PROTOCOLS)})")
        self.inner = inner
        self.protocol: ToolProtocol = protocol
        self.supports_tools = supports_tools
        self.fallback_reason: str | None = None
        """Why `auto` uses the JSON protocol (the server's rejection), once it does."""
        self.base_url = inner.base_url
        self._ids = itertools.count(1)
        self._capabilities: dict[str | None, ServerCapabilities] = {}
        self._unconstrained = False
        """The server rejected a reply constraint once: none is sent any more."""

    def __repr__(self) -> str:
        return f"ProtocolAdapter({self.inner!r}, protocol={self.protocol!r})"

    def _new_id(self) -> str:
        return f"call_p{next(self._ids)}"

    async def chat(
        self,
        request: ModelRequest,
        *,
        model: str,
        on_delta: DeltaCallback | None = None,
    ) -> ModelResponse:
        if not request.tools:
            return await self.inner.chat(request, model=model, on_delta=on_delta)
        protocol = self.protocol
        if protocol == "auto":
            if self.supports_tools is None:
                caps = await self.capabilities(model)
                if caps.supports_tools is False:
                    self.supports_tools = False
                    self.fallback_reason = f"the server ({caps.kind}) reports no tool support"
            if self.supports_tools is False:
                protocol = "json"
            else:
                return await self._auto_native(request, model, on_delta)
        if protocol == "native":
            response = await self.inner.chat(request, model=model, on_delta=on_delta)
            response.tool_protocol = "native"
            return response
        return await self.prompted(request, model, on_delta, DIALECTS[protocol])

    async def _auto_native(
        self, request: ModelRequest, model: str, on_delta: DeltaCallback | None
    ) -> ModelResponse:
        """`auto` trying native calls: a 400 about the tools, or a reply that ignored a forced
        tool (a server that drops `tools` it cannot render answers 200 with prose), switches to
        the JSON protocol, asks again once, and remembers it."""
        try:
            response = await self.inner.chat(request, model=model, on_delta=on_delta)
        except ModelError as exc:
            if exc.status_code != 400 or self.supports_tools:
                raise
            return await self._fall_back(
                request, model, on_delta, f"the server rejected the tools field: {exc.message}", exc
            )
        if not response.message.tool_calls and not self.supports_tools and _forced(request.tool_choice):
            return await self._fall_back(
                request,
                model,
                on_delta,
                "the server ignored the offered tools (a forced tool was not called)",
            )
        if response.message.tool_calls:
            self.supports_tools = True
        response.tool_protocol = "native"
        return response

    async def _fall_back(
        self,
        request: ModelRequest,
        model: str,
        on_delta: DeltaCallback | None,
        reason: str,
        rejection: ModelError | None = None,
    ) -> ModelResponse:
        """`auto` after native calls failed: the JSON protocol, remembered once it works."""
        try:
            response = await self.prompted(request, model, on_delta, JSON_DIALECT)
        except ModelError:
            if rejection is None:
                raise
            raise rejection from None  # the 400 was about something else: report it
        self.supports_tools = False
        self.fallback_reason = reason
        return response

    async def capabilities(self, model: str | None) -> ServerCapabilities:
        """What the inner provider's server offers `model` (all unknown when it cannot say)."""
        known = self._capabilities.get(model)
        if known is None:
            ask = getattr(self.inner, "capabilities", None)
            known = await ask(model) if ask is not None else ServerCapabilities()
            self._capabilities[model] = known
        return known

    async def prompted(
        self, request: ModelRequest, model: str, on_delta: DeltaCallback | None, dialect: Dialect
    ) -> ModelResponse:
        """One call with the tools in the prompt, the reply read back with `dialect`."""
        turns = to_chat_messages(request.messages, request.tools, dialect=dialect, persona=request.persona)
        messages = [Message.model_validate(turn) for turn in turns]
        plain = request.model_copy(update={"messages": messages, "tools": None, "tool_choice": None})
        raw = await self._constrained(plain, request, model, dialect, ReasoningOnly.of(on_delta))
        text = raw.message.content or ""
        names = {function["name"] for function in tool_functions(request.tools)}
        message, understood = dialect.parse(text, self._new_id, names)
        correction: Message | None = None
        if not understood and not (request.messages and is_correction(request.messages[-1])):
            correction = correction_message(dialect)
            message = Message(role="assistant", content=text)
        reasoning = "\n".join(r for r in (raw.message.reasoning_content, message.reasoning_content) if r)
        if reasoning != (message.reasoning_content or ""):
            message = message.model_copy(update={"reasoning_content": reasoning or None})
        if request.stream and on_delta is not None and message.content and correction is None:
            on_delta(message.content)  # one delta: the answer is known once the reply is parsed
        return ModelResponse(
            message=message,
            usage=raw.usage,
            model=raw.model or model,
            finish_reason=replied_finish(raw.finish_reason, message),
            attempts=raw.attempts,
            tool_protocol=dialect.name,
            correction=correction,
        )

    async def _constrained(
        self,
        plain: ModelRequest,
        request: ModelRequest,
        model: str,
        dialect: Dialect,
        on_delta: ReasoningOnly | None,
    ) -> ModelResponse:
        """`plain` sent under the strongest reply constraint the server offers (see
        `models._constraints`); a server that rejects it (400) is asked again without, and no
        constraint is sent to it after that. The streamed content is protocol text, so only
        the reasoning streams on (`on_delta`)."""
        constraint: dict[str, Any] = {}
        if not self._unconstrained:
            caps = await self.capabilities(model)
            constraint = reply_constraint(
                dialect.name, request.tools, request.tool_choice, caps, request.extra_params
            )
        if not constraint:
            return await self.inner.chat(plain, model=model, on_delta=on_delta)
        bound = plain.model_copy(update={"extra_params": {**plain.extra_params, **constraint}})
        try:
            return await self.inner.chat(bound, model=model, on_delta=on_delta)
        except ModelError as exc:
            if exc.status_code != 400:
                raise
        self._unconstrained = True
        return await self.inner.chat(plain, model=model, on_delta=on_delta)

    async def aclose(self) -> None:
        await self.inner.aclose()


def replied_finish(finish_reason: str | None, message: Message) -> str | None:
    """The finish reason of a prompted reply: `tool_calls` when it reads as calls, but a cut
    at the length limit stays `length` (its last call may be incomplete)."""
    if message.tool_calls and finish_reason != "length":
        return "tool_calls"
    return finish_reason


def _forced(tool_choice: Any) -> bool:
    """Whether `tool_choice` obliges the reply to call a tool."""
    return tool_choice in ("required", "any") or isinstance(tool_choice, dict)
