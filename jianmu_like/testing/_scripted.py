"""`ScriptedProvider`: a scripted model in-process, with no HTTP and almost no overhead.

Unit tests of agents and the framework-overhead benchmark both need a model that answers
instantly and deterministically; this provider plays a `Script` back as `ModelResponse`s built
from precomputed parts (no pydantic validation per call), and applies the same error and
streaming rules as a real backend so the client's retry and streaming paths are exercised.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from .._base.config import ResilienceConfig
from ..models._client import ModelClient
from ..models._errors import ModelError
from ..models._messages import Message, ToolCall
from ..models._provider import DeltaCallback, is_retryable_status, reasoning_sink
from ..models._types import ModelRequest, ModelResponse
from ._script import Script, ScriptedReply, ScriptSource


def fast_resilience(**fields: Any) -> ResilienceConfig:
    """A retry policy without backoff delays (tests should not sleep, not even for a scripted
    `Retry-After`); `fields` override it."""
    values: dict[str, Any] = {"backoff_initial": 0.0, "backoff_max": 0.0, "retry_after_max": 0.0}
    values.update(fields)
    return ResilienceConfig(**values)


def request_body(request: ModelRequest, model: str) -> dict[str, Any]:
    """The OpenAI-shaped JSON body of `request`, as a responder would see it over HTTP."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [m.to_openai() for m in request.messages],
        "stream": request.stream,
    }
    if request.tools:
        body["tools"] = request.tools
    if request.tool_choice is not None:
        body["tool_choice"] = request.tool_choice
    for key in ("temperature", "max_tokens", "top_p", "top_k"):
        value = getattr(request, key)
        if value is not None:
            body[key] = value
    body.update(request.extra_params)
    return body


class ScriptedProvider:
    """A `ChatProvider` answering from a script. Records every `ModelRequest` in `requests`.

    `latency` seconds are awaited before each answer (0 awaits nothing at all). A reply's
    `error_status` raises `ModelError` with the same retryable rule as HTTP backends; its
    `delay` longer than `request.timeout` becomes a retryable timeout error.
    """

    base_url: str | None = None

    def __init__(self, script: ScriptSource, latency: float = 0.0, *, record: bool = True) -> None:
        self.script = Script.of(script)
        self.latency = latency
        self.record = record
        """Keep every request in `requests` (turn off in benchmarks: requests hold prompts)."""
        self.requests: list[ModelRequest] = []
        self.closed = False
        self._ids = itertools.count(1)

    def __repr__(self) -> str:
        return f"ScriptedProvider(latency={self.latency!r}, served={self.script.served})"

    async def chat(
        self,
        request: ModelRequest,
        *,
        model: str,
        on_delta: DeltaCallback | None = None,
    ) -> ModelResponse:
        if self.record:
            self.requests.append(request)
        if self.latency:
            await asyncio.sleep(self.latency)
        script = self.script
        if script.uses_responder:
            reply = script.next_reply(model, lambda: request_body(request, model))
        else:
            reply = script.next_reply(model)
        if reply.delay:
            await self._wait(reply.delay, request.timeout, model)
        status = reply.error_status
        if status is not None:
            raise ModelError(
                f"HTTP {status}: {reply.error_message}",
                model=model,
                status_code=status,
                retryable=is_retryable_status(status),
            )
        if request.stream and on_delta is not None:
            sink = reasoning_sink(on_delta) if reply.reasoning_pieces else None
            if sink is not None:
                for piece in reply.reasoning_pieces:
                    sink(piece)
            for piece in reply.content_pieces:
                on_delta(piece)
        return ModelResponse(
            message=self._message(reply),
            usage=reply.effective_usage,
            model=model,
            finish_reason=reply.effective_finish_reason,
        )

    def _message(self, reply: ScriptedReply) -> Message:
        """The reply's message, with fresh `call_<n>` ids for tool calls scripted without one."""
        template = reply.message_template
        tool_calls = template.tool_calls
        if not tool_calls or all(tc.id for tc in tool_calls):
            return template
        ids = self._ids
        # Plain (validated) constructors: pydantic-core validation of a few already-typed fields is
        # cheaper than model_copy/model_construct, which matters in the overhead benchmark.
        fresh = [
            tc
            if tc.id
            else ToolCall(
                id=f"call_{next(ids)}",
                name=tc.name,
                arguments=tc.arguments,
                raw_arguments=tc.raw_arguments,
                arguments_error=tc.arguments_error,
            )
            for tc in tool_calls
        ]
        return Message(
            role="assistant",
            content=template.content,
            tool_calls=fresh,
            reasoning_content=template.reasoning_content,
        )

    @staticmethod
    async def _wait(delay: float, timeout: float | None, model: str) -> None:
        if timeout is not None and delay > timeout:
            await asyncio.sleep(timeout)
            raise ModelError(f"request timed out after {timeout:g}s", model=model, retryable=True)
        await asyncio.sleep(delay)

    async def aclose(self) -> None:
        self.closed = True


def scripted_client(
    script: ScriptSource,
    *,
    latency: float = 0.0,
    model: str = "scripted-model",
    resilience: ResilienceConfig | None = None,
    record: bool = True,
) -> ModelClient:
    """A `ModelClient` over a `ScriptedProvider` (zero backoff unless `resilience` is given);
    the provider is `client.provider`, its recorded requests `client.provider.requests`
    (`record=False` keeps none, for benchmarks and long runs)."""
    return ModelClient(
        ScriptedProvider(script, latency, record=record),
        model=model,
        resilience=resilience if resilience is not None else fast_resilience(),
    )
