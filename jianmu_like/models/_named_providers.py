"""Models named by provider: `anthropic:claude-sonnet-4-5` instead of a base URL and a key.

Most hosted and local model servers speak OpenAI's chat-completions API, so a provider's name is
enough to know where it listens and which environment variable holds its key. `PROVIDERS` is the
one table of them (the docs' table is checked against it by a test); `models.providers.<name>`
in the configuration, `base_url=` / `api_key_env=` in Python and `model: {name, base_url,
api_key_env}` in an agent file override an entry's URL and key variable, and the configuration
may add names of its own.

Each entry also carries its server's documented departures from OpenAI's request format
(`Quirks`), applied in one place (`apply_quirks`, called by the provider on every request): a
field renamed, a message field the server refuses removed, and the fields it refuses outright
refused here, before the call, with an error naming the provider (a field it silently ignores
becomes a capability the framework does not rely on: `supports_json_mode=False` for a server
that ignores `response_format`). A base URL given without a provider name gets the quirks of the
entry whose URL has the same host, so `OPENAI_BASE_URL=https://api.openai.com/v1` behaves like
`openai:`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .._base.config import ConfigError
from .._base.names import did_you_mean
from ._errors import ModelError

if TYPE_CHECKING:
    from .._base.config import ProviderEntryConfig


@dataclass(frozen=True)
class Quirks:
    """How one server's chat-completions endpoint departs from OpenAI's, as its docs say."""

    renamed: Mapping[str, str] = field(default_factory=dict)
    """Request field -> the name this server wants (OpenAI: `max_tokens` ->
    `max_completion_tokens`, which its reasoning models require)."""
    refused: tuple[str, ...] = ()
    """Request fields the server answers with HTTP 400: refused before the call, naming the
    provider, instead of a round trip that fails anyway."""
    message_fields_dropped: tuple[str, ...] = ()
    """Fields of `messages[]` the server refuses (Groq: `name`); removed from every message
    (a participant's name is a label the model does not need)."""
    docs: str = ""
    """Where the server documents these departures."""


NO_QUIRKS = Quirks()


@dataclass(frozen=True)
class ProviderEntry:
    """One provider: where its OpenAI-compatible endpoint listens and what it needs."""

    base_url: str | None
    """None: the embedded local model (`local:`), no server."""
    api_key_env: str | None
    """The environment variable holding the key; None: the server needs none (local servers)."""
    quirks: Quirks = NO_QUIRKS
    supports_json_mode: bool | None = None
    """False for a server that ignores `response_format` (structured calls skip JSON mode)."""


PROVIDERS: dict[str, ProviderEntry] = {
    "openai": ProviderEntry(
        "https://api.openai.com/v1",
        "OPENAI_API_KEY",
        Quirks(
            renamed={"max_tokens": "max_completion_tokens"},
            refused=("top_k",),
            docs="https://platform.openai.com/docs/api-reference/chat/create",
        ),
    ),
    "anthropic": ProviderEntry(
        "https://api.anthropic.com/v1/",
        "ANTHROPIC_API_KEY",
        Quirks(docs="https://docs.claude.com/en/api/openai-sdk"),
        supports_json_mode=False,
    ),
    "google": ProviderEntry(
        "https://generativelanguage.googleapis.com/v1beta/openai/",
        "GEMINI_API_KEY",
        Quirks(docs="https://ai.google.dev/gemini-api/docs/openai"),
    ),
    "mistral": ProviderEntry("https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    "groq": ProviderEntry(
        "https://api.groq.com/openai/v1",
        "GROQ_API_KEY",
        Quirks(
            refused=("logprobs", "logit_bias", "top_logprobs"),
            message_fields_dropped=("name",),
            docs="https://console.groq.com/docs/openai",
        ),
    ),
    "deepseek": ProviderEntry("https://api.deepseek.com", "DEEPSEEK_API_KEY"),
    "openrouter": ProviderEntry("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "together": ProviderEntry("https://api.together.xyz/v1", "TOGETHER_API_KEY"),
    "fireworks": ProviderEntry("https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"),
    "ollama": ProviderEntry("http://localhost:11434/v1", None),
    "vllm": ProviderEntry("http://localhost:8000/v1", None),
    "llamacpp": ProviderEntry("http://localhost:8080/v1", None),
    "local": ProviderEntry(None, None),
}
"""Provider name -> its endpoint, key variable and quirks (see the module docstring)."""


@dataclass(frozen=True)
class NamedModel:
    """A `provider:model` name resolved against the table and the configuration."""

    provider: str
    model: str
    base_url: str | None
    api_key_env: str | None
    quirks: Quirks
    supports_json_mode: bool | None


def _entries(overrides: Mapping[str, ProviderEntryConfig]) -> dict[str, ProviderEntry]:
    """The table with the configuration's entries laid over it (and its new names added)."""
    entries = dict(PROVIDERS)
    for name, override in overrides.items():
        base = entries.get(name, ProviderEntry(None, None))
        fields = override.model_fields_set
        entries[name] = ProviderEntry(
            override.base_url if "base_url" in fields else base.base_url,
            override.api_key_env if "api_key_env" in fields else base.api_key_env,
            base.quirks,
            base.supports_json_mode,
        )
    return entries


def split_provider(
    name: str, overrides: Mapping[str, ProviderEntryConfig], *, has_server: bool
) -> NamedModel | None:
    """`name` as `provider:model`, or None when it names no provider.

    A prefix that is no provider is part of a model name when a server is configured (Ollama's
    `qwen2.5:7b`); without one it can only be a misspelt provider: a `ConfigError` suggesting
    the closest name."""
    prefix, colon, rest = name.partition(":")
    if not colon or "/" in prefix:
        return None
    entries = _entries(overrides)
    entry = entries.get(prefix)
    if entry is None:
        if has_server:
            return None
        raise ConfigError(
            f"model {name!r}: unknown provider {prefix!r}{did_you_mean(prefix, entries)}; "
            f"known providers: {', '.join(sorted(entries))}"
        )
    if not rest and entry.base_url is not None:
        raise ConfigError(f"model {name!r}: name the model after {prefix + ':'!r}")
    return NamedModel(prefix, rest, entry.base_url, entry.api_key_env, entry.quirks, entry.supports_json_mode)


def served_name(name: str | None, overrides: Mapping[str, ProviderEntryConfig]) -> str | None:
    """The name the server knows a model by: `name` without a provider prefix (`groq:llama-3`
    -> `llama-3`); any other name as it is. For a model name set per agent or per request on a
    client resolved elsewhere."""
    if not name:
        return name
    prefix, colon, rest = name.partition(":")
    if colon and prefix in _entries(overrides):
        return f"local/{rest}" if prefix == "local" and rest else rest
    return name


def quirks_for_url(base_url: str) -> Quirks:
    """The quirks of the hosted provider whose endpoint has `base_url`'s host (none for a host
    the table does not know: a local or self-hosted server is taken at its word)."""
    host = (urlsplit(base_url).hostname or "").lower()
    for entry in PROVIDERS.values():
        hosted = entry.base_url is not None and entry.api_key_env is not None
        if hosted and (urlsplit(entry.base_url or "").hostname or "").lower() == host:
            return entry.quirks
    return NO_QUIRKS


def apply_quirks(kwargs: dict[str, Any], quirks: Quirks, provider: str) -> None:
    """Adapt one request's `chat.completions.create` arguments to `quirks`, in place; a
    `ModelError` (not retryable) for a field the server refuses."""
    if quirks is NO_QUIRKS:
        return
    extra = kwargs.get("extra_body") or {}
    for key in quirks.refused:
        if key in kwargs or key in extra:
            where = f" (see {quirks.docs})" if quirks.docs else ""
            raise ModelError(
                f"{provider} refuses the request field {key!r}{where}: remove it from the "
                "configuration (llm.*) or the request's extra_params",
                retryable=False,
            )
    for old, new in quirks.renamed.items():
        if old in kwargs:
            kwargs.setdefault(new, kwargs.pop(old))
    if quirks.message_fields_dropped:
        dropped = quirks.message_fields_dropped
        kwargs["messages"] = [
            {k: v for k, v in message.items() if k not in dropped}
            if any(k in message for k in dropped)
            else message
            for message in kwargs["messages"]
        ]
