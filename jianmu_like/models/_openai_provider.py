"""`ChatProvider` for any OpenAI-compatible chat-completions endpoint, over the official SDK.

The SDK's own retries are disabled (`max_retries=0`): `ModelClient` owns the retry and fallback
policy, and two stacked retry loops would multiply attempts and hide failures. Importing this
module imports `openai` (about 0.3 s), which is why `jianmu_like.models` does not import it
eagerly.

Every failure becomes a `ModelError` saying what went wrong and where: a 200 whose body is not
a chat completion (malformed JSON, an HTML page from a proxy, no `choices`) quotes the body's
start; a stream that ends without a finish reason was cut short; transport failures say
whether connecting or reading failed; a 429/503 carries the server's `Retry-After`. The
timeout bounds the whole call, a stream to its last chunk included (the SDK's own timeout only
bounds each read, so a server trickling tokens could hold a call for minutes), and a request
without `max_tokens` gets the configured default (`llm.max_tokens`).

The chat body is sent through the SDK's `post`, as `chat.completions.create` sends it but without
its request transform (`wire_body`): the body is plain JSON already, and the transform's walk
of it was a quarter of a run's CPU. The bytes on the wire are the same.
"""

from __future__ import annotations

import asyncio
import email.utils
import inspect
import time
from collections.abc import Mapping
from typing import Any, cast
from urllib.parse import urlsplit

import openai
from openai._base_client import make_request_options
from openai._constants import RAW_RESPONSE_HEADER
from openai.resources.chat.completions import AsyncCompletions
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from .._base.config import CapabilityOverrides
from .._base.redact import redact_text, redact_url, register_secret
from ._errors import ModelError
from ._messages import Message, ToolCall
from ._named_providers import Quirks, apply_quirks, quirks_for_url
from ._provider import DeltaCallback, is_retryable_status, reasoning_sink
from ._server_probe import PROBES, ServerCapabilities
from ._streaming import StreamAccumulator
from ._types import ModelRequest, ModelResponse, Usage
from ._url_hints import connect_hint, v1_candidate
from ._usage import complete_usage

_CREATE_PARAMS = frozenset(inspect.signature(AsyncCompletions.create).parameters) - {"self"}
"""Keyword arguments `chat.completions.create` accepts in the installed SDK version; any other
`extra_params` key is sent in the JSON body through `extra_body` (e.g. vLLM's `top_k`)."""

_RESERVED = frozenset({"messages", "model", "stream"})
"""Set by the provider itself; letting `extra_params` override them would break parsing."""

_PLACEHOLDER_KEY = "not-needed"

_OPTIONS = ("extra_headers", "extra_query", "extra_body", "timeout")
"""`create` arguments that shape the HTTP request (headers, query, merged body, timeout) rather
than being fields of the JSON body."""

_SDK_LEAD = {"model": 0, "stream": 1, "service_tier": 2, "messages": 3}
"""Where `create` puts these body fields (the rest follow in alphabetical order): the same key
order keeps our body byte-identical to the SDK's (tests/models/test_openai_wire.py)."""

_JSON_SCALARS = (str, int, float, bool, type(None))


def _plain_json(value: Any) -> bool:
    """Whether `value` is made of dicts with str keys, lists and JSON scalars only: what the
    SDK's request transform passes through unchanged (it renames aliased keys, formats
    datetimes and files, dumps pydantic models and drops `omit`/`NOT_GIVEN`, none of which a
    plain value has: the chat params declare no alias or format)."""
    kind = type(value)
    if kind in _JSON_SCALARS:
        return True
    if kind is list:
        return all(_plain_json(v) for v in value)
    if kind is dict:
        return all(type(k) is str and _plain_json(v) for k, v in value.items())
    return False


def wire_body(kwargs: Mapping[str, Any]) -> dict[str, Any] | None:
    """The JSON body `chat.completions.create(**kwargs)` sends, without running the SDK's
    request transform (about 1.5 ms of CPU per call, a quarter of a run's), or None where a
    value is not plain JSON and only the transform knows what it becomes. The messages are
    built by us (`Message.to_openai`: strings only) and are not walked."""
    body = {k: v for k, v in kwargs.items() if k not in _OPTIONS}
    if not all(_plain_json(v) for k, v in body.items() if k != "messages"):
        return None
    return dict(sorted(body.items(), key=lambda item: (_SDK_LEAD.get(item[0], len(_SDK_LEAD)), item[0])))


def build_create_kwargs(request: ModelRequest, model: str) -> dict[str, Any]:
    """The keyword arguments of `chat.completions.create` for one attempt of `request`."""
    kwargs: dict[str, Any] = {
        "model": model,
        "messages": [m.to_openai() for m in request.messages],
    }
    if request.tools:
        kwargs["tools"] = request.tools
    if request.tool_choice is not None:
        kwargs["tool_choice"] = request.tool_choice
    kwargs.update(request.sampling())
    if request.timeout is not None:
        kwargs["timeout"] = request.timeout
    extra_body: dict[str, Any] = {}
    if request.top_k is not None:
        extra_body["top_k"] = request.top_k
    for key, value in request.extra_params.items():
        if key in _RESERVED:
            raise ModelError(f"extra_params may not set {key!r}; use the ModelRequest field instead")
        if key == "extra_body" and isinstance(value, Mapping):
            extra_body.update(value)
        elif key in _CREATE_PARAMS:
            kwargs[key] = value
        else:
            extra_body[key] = value
    if request.stream:
        kwargs["stream"] = True
        kwargs.setdefault("stream_options", {"include_usage": True})
    if extra_body:
        kwargs["extra_body"] = extra_body
    return kwargs


def _usage(raw: Any, request: ModelRequest, message: Message) -> Usage:
    """The call's usage as reported, the gaps filled (see `models._usage`)."""
    return complete_usage(
        getattr(raw, "prompt_tokens", None),
        getattr(raw, "completion_tokens", None),
        getattr(raw, "total_tokens", None),
        prompt=request.messages,
        reply=message,
    )


def _excerpt(text: str, limit: int = 200) -> str:
    """The start of a body, quoted, on one line."""
    flat = " ".join(text.split())
    return repr(flat[:limit] + "…" if len(flat) > limit else flat)


def retry_after_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """A `Retry-After` header (delay in seconds, or an HTTP date) as seconds from now."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _transport_failure(exc: openai.APIConnectionError, seconds: float) -> str:
    """What failed on the wire, from the transport exception the SDK wrapped: a connect error
    means the server is not there; a read error or read timeout means it is, but broke off."""
    cause = exc.__cause__
    names = {cls.__name__ for cls in type(cause).__mro__} if cause is not None else set()
    detail = f": {type(cause).__name__}: {cause}" if cause is not None and str(cause) else ""
    if "ConnectTimeout" in names:
        return f"timed out connecting after {seconds:g}s"
    if "PoolTimeout" in names:
        return f"timed out waiting for a free connection after {seconds:g}s"
    if "WriteTimeout" in names:
        return f"timed out sending the request after {seconds:g}s"
    if "TimeoutException" in names or isinstance(exc, openai.APITimeoutError):
        return f"request timed out after {seconds:g}s (no data from the server while reading)"
    if "ConnectError" in names:
        return f"could not connect{detail}"
    if "WriteError" in names:
        return f"connection lost while sending the request{detail}"
    if "ReadError" in names or "ProtocolError" in names or "EndOfStream" in names:
        return f"connection lost while reading the response{detail}"
    return f"could not connect{detail}"


def _grace(seconds: float) -> float:
    """How long the whole-call deadline waits beyond `timeout`: a stalled read hits the SDK's
    own timeout first, whose error says precisely what stalled (connecting, reading). One
    second: the SDK's read timer starts only once the request is sent, and on a loaded machine
    connecting and sending can take a good part of a proportional margin."""
    return 1.0


def _reasoning(raw: Any) -> str | None:
    """The reasoning of a message or delta: `reasoning_content` (DeepSeek, vLLM and llama.cpp's
    reasoning parsers) or `reasoning` (newer vLLM, OpenRouter, gpt-oss servers) — non-standard
    fields the SDK keeps as extras."""
    extra = getattr(raw, "model_extra", None)
    if not extra:
        return None
    value = extra.get("reasoning_content") or extra.get("reasoning")
    return value if isinstance(value, str) and value else None


def _tool_call(raw: Any) -> ToolCall:
    function = getattr(raw, "function", None)
    if function is not None:
        return ToolCall.from_raw(raw.id, function.name, function.arguments)
    custom = raw.custom  # a custom (free-form) tool call: its input is not JSON by contract
    return ToolCall.from_raw(raw.id, custom.name, custom.input)


class OpenAIProvider:
    """One OpenAI-compatible endpoint. The API key is held by the SDK client only and is
    redacted from every error message this provider produces."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        probe: bool = True,
        capabilities: CapabilityOverrides | None = None,
        max_tokens: int | None = None,
        quirks: Quirks | None = None,
        provider_name: str = "",
    ) -> None:
        self.base_url: str | None = redact_url(base_url)  # for display: the SDK client has the real one
        self.timeout = timeout
        self.probe = probe
        """Ask the server what it offers (`models._server_probe`); False: only `overrides`."""
        self.overrides = capabilities
        """Configured facts about the server, winning over the probe's."""
        self.max_tokens = max_tokens
        """Sent when a request sets no `max_tokens` (`llm.max_tokens`): no call is unbounded."""
        self.quirks = quirks if quirks is not None else quirks_for_url(base_url)
        """The server's departures from OpenAI's request format (`models._named_providers`):
        its provider's, or those of the hosted provider at the same host."""
        self.provider_name = provider_name or (urlsplit(base_url).hostname or base_url)
        if api_key and api_key != _PLACEHOLDER_KEY:
            register_secret(api_key, source="model api_key")  # masked wherever it is quoted
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or _PLACEHOLDER_KEY,
            timeout=timeout,
            max_retries=0,
        )

    def __repr__(self) -> str:
        return f"OpenAIProvider(base_url={self.base_url!r}, timeout={self.timeout!r})"

    async def aclose(self) -> None:
        await self._client.close()

    async def capabilities(self, model: str | None) -> ServerCapabilities:
        """What the server offers `model`: probed once per process (`server_probe.PROBES`),
        the configured overrides applied."""
        if not self.probe:
            return ServerCapabilities().overridden(self.overrides)
        url = str(self._client.base_url)
        found = await PROBES.get(url, model=model, api_key=self._client.api_key)
        return found.overridden(self.overrides)

    def create_kwargs(self, request: ModelRequest, model: str) -> dict[str, Any]:
        """The `chat.completions.create` arguments of one attempt: the request's, this
        provider's default `max_tokens` and the server's quirks applied."""
        kwargs = build_create_kwargs(request, model)
        if "max_tokens" not in kwargs and self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        apply_quirks(kwargs, self.quirks, self.provider_name)
        return kwargs

    async def chat(
        self,
        request: ModelRequest,
        *,
        model: str,
        on_delta: DeltaCallback | None = None,
    ) -> ModelResponse:
        """One attempt; SDK failures become `ModelError` (see `ChatProvider`)."""
        kwargs = self.create_kwargs(request, model)
        seconds = request.timeout if request.timeout is not None else self.timeout
        try:
            async with asyncio.timeout(seconds + _grace(seconds)):
                if request.stream:
                    return await self._stream(kwargs, request, model, on_delta)
                raw_response = await self._send(kwargs, raw=True)
                completion = self._completion(raw_response, model)
        except openai.OpenAIError as exc:
            raise self._error(exc, model, request.timeout) from exc
        except TimeoutError:
            what = "the streamed reply" if request.stream else "the reply"
            raise ModelError(
                f"the call timed out after {seconds:g}s ({what} was not complete by then; llm.timeout "
                "bounds the whole call)",
                model=model,
                retryable=True,
                base_url=self.base_url,
            ) from None
        choice = completion.choices[0]
        raw = choice.message
        tool_calls = [_tool_call(tc) for tc in raw.tool_calls or ()]
        content = raw.content if raw.content is not None else raw.refusal
        message = Message(
            role="assistant",
            content=content,
            tool_calls=tool_calls or None,
            reasoning_content=_reasoning(raw),
        )
        return ModelResponse.model_construct(
            message=message,
            usage=_usage(completion.usage, request, message),
            model=model,
            finish_reason=choice.finish_reason,
            attempts=1,
            response_id=completion.id or None,
        )

    async def _send(self, kwargs: dict[str, Any], *, raw: bool) -> Any:
        """`chat.completions.create(**kwargs)` (`with_raw_response` when `raw`), the SDK's
        request transform skipped where the body is already in wire form (`wire_body`):
        everything else is the SDK's own request (retries, timeout, extra headers, query and
        body, auth, errors, streaming), as `create` makes it."""
        body = wire_body(kwargs)
        if body is None:
            completions = self._client.chat.completions
            create = completions.with_raw_response.create if raw else completions.create
            return await create(**kwargs)
        headers = kwargs.get("extra_headers")
        if raw:  # as `with_raw_response` does: the SDK then answers the response, unparsed
            headers = {**(headers or {}), RAW_RESPONSE_HEADER: "true"}
        options = make_request_options(
            extra_headers=headers,
            extra_query=kwargs.get("extra_query"),
            extra_body=kwargs.get("extra_body"),
            timeout=kwargs.get("timeout", openai.NOT_GIVEN),
            security={"bearer_auth": True},
        )
        stream = bool(body.get("stream"))
        return await self._client.post(
            "/chat/completions",
            body=body,
            options=options,
            cast_to=ChatCompletion,
            stream=stream,
            stream_cls=openai.AsyncStream[ChatCompletionChunk],
        )

    def _completion(self, raw_response: Any, model: str) -> ChatCompletion:
        """The parsed completion, or a retryable `ModelError` quoting a body that is not one."""
        try:
            completion = raw_response.parse()
            ok = isinstance(completion, ChatCompletion) and bool(completion.choices)
            ok = ok and getattr(completion.choices[0], "message", None) is not None
        except (ValueError, TypeError, AttributeError, IndexError):  # malformed JSON, missing fields
            ok = False
        if not ok:
            try:
                body = raw_response.text
            except Exception:  # pragma: no cover - the body was read to parse it
                body = ""
            what = (
                "an empty body"
                if not body.strip()
                else f"a body that is not a chat completion: {_excerpt(body)}"
            )
            raise ModelError(
                self._redact(
                    f"the server at {self.base_url} answered {raw_response.status_code} with {what}"
                ),
                model=model,
                retryable=True,
                base_url=self.base_url,
            )
        return cast(ChatCompletion, completion)

    async def _stream(
        self, kwargs: dict[str, Any], request: ModelRequest, model: str, on_delta: DeltaCallback | None
    ) -> ModelResponse:
        stream = cast(
            openai.AsyncStream[ChatCompletionChunk],
            await self._send(kwargs, raw=False),
        )
        acc = StreamAccumulator()
        raw_usage: Any = None
        response_id: str | None = None
        try:
            async for chunk in stream:
                response_id = response_id or chunk.id or None
                if chunk.usage is not None:
                    raw_usage = chunk.usage
                for choice in chunk.choices:
                    if choice.index != 0:
                        continue  # n > 1 is not supported: only the first choice is kept
                    acc.saw_choice = True
                    delta = choice.delta
                    reasoning = _reasoning(delta)
                    if reasoning:
                        acc.add_reasoning(reasoning)
                        sink = reasoning_sink(on_delta)
                        if sink is not None:
                            sink(reasoning)
                    if delta.content:
                        acc.add_content(delta.content)
                        if on_delta is not None:
                            on_delta(delta.content)
                    for tc in delta.tool_calls or ():
                        fn = tc.function
                        acc.add_tool_call(
                            tc.index, tc.id, fn.name if fn else None, fn.arguments if fn else None
                        )
                    if choice.finish_reason is not None:
                        acc.finish_reason = choice.finish_reason
        except (ValueError, TypeError, AttributeError) as exc:  # an event that is not a chunk
            raise ModelError(
                self._redact(f"the stream from {self.base_url} carried an event that is not a chunk: {exc}"),
                model=model,
                retryable=True,
                base_url=self.base_url,
            ) from exc
        finally:
            await stream.close()
        if not acc.saw_choice:
            raise ModelError(
                "stream ended without any choices", model=model, retryable=True, base_url=self.base_url
            )
        if acc.finish_reason is None:
            received = len(acc.content or "") + sum(len(tc.arguments_json) for tc in acc.tool_calls())
            raise ModelError(
                f"stream ended before the answer was complete (no finish_reason; {received} "
                "characters received): the connection was cut or the server stopped early",
                model=model,
                retryable=True,
                base_url=self.base_url,
            )
        message = acc.message()
        return ModelResponse.model_construct(
            message=message,
            usage=_usage(raw_usage, request, message),
            model=model,
            finish_reason=acc.finish_reason,
            attempts=1,
            response_id=response_id,
        )

    def _error(self, exc: openai.OpenAIError, model: str, timeout: float | None) -> ModelError:
        url = self.base_url
        if isinstance(exc, openai.APIConnectionError):  # APITimeoutError included
            seconds = timeout if timeout is not None else self.timeout
            failure = _transport_failure(exc, seconds)
            hint = connect_hint(url, exc) if url else None
            if hint is not None:
                failure = f"{failure}; {hint}"
            return ModelError(self._redact(failure), model=model, retryable=True, base_url=url)
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            message = f"HTTP {status}: {_server_message(exc)}"
            candidate = v1_candidate(url) if status == 404 and url else None
            if candidate is not None:
                message += f"; is the /v1 missing? try OPENAI_BASE_URL={redact_url(candidate)}"
            return ModelError(
                self._redact(message),
                model=model,
                status_code=status,
                retryable=is_retryable_status(status),
                base_url=url,
                retry_after=retry_after_seconds(exc.response.headers.get("retry-after")),
            )
        if isinstance(exc, openai.APIError):  # an error event inside a stream
            return ModelError(self._redact(f"API error: {exc.message}"), model=model, base_url=url)
        return ModelError(self._redact(f"{type(exc).__name__}: {exc}"), model=model, base_url=url)

    def _redact(self, text: str) -> str:
        """The key (registered by value), key-looking text and URLs quoted by the SDK or the
        network stack, masked."""
        return redact_text(text)


def _server_message(exc: openai.APIStatusError) -> str:
    """The server's own error message (OpenAI shape), else the SDK's generic text."""
    body = exc.body
    if isinstance(body, Mapping):
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
    elif isinstance(body, str) and body:
        return body[:500]
    return exc.message
