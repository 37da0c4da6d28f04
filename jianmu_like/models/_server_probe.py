"""What an OpenAI-compatible server can do: one probe per `(base_url, model)`, cached.

Servers that speak the same chat-completions API differ where it matters to an agent:
llama.cpp answers 200 with prose and silently *ignores* `tools` when the model's chat template
has none (its `/props` says so: `chat_template_caps.supports_tools: false`), while it can
constrain decoding to a JSON schema (`response_format`) or a grammar. Asking first lets the
tool protocol pick what works (`auto` goes straight to the JSON protocol) and send the
strongest constraint the server has, instead of learning from failures. Each server is asked
where it documents itself:

- llama.cpp: `GET /props` (`chat_template_caps`, `default_generation_settings.n_ctx`,
  `model_alias`); `response_format` json_schema and `grammar` (GBNF) are both supported;
- Ollama: `POST /api/show` (`capabilities` lists "tools"; `model_info.<arch>.context_length`);
  it honours `response_format` json_schema;
- vLLM and SGLang: `GET /v1/models` (`owned_by`, `max_model_len`); both honour
  `response_format` json_schema (guided decoding); tools depend on launch flags (a 400 says so);
- api.openai.com: known defaults (tools, json_schema, JSON mode);
- any other server: `/v1/models` for the served model's name, everything else unknown (None).

A probe never fails a call: an endpoint that is missing, slow or odd leaves its facts unknown.
Configured values (`provider.capabilities`) win over probed ones, key by key.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from pydantic import ConfigDict

from .._base.config import CapabilityOverrides
from ._url_hints import connect_hint, missing_v1, v1_candidate

if TYPE_CHECKING:
    import httpx2

ServerKind = Literal["llama.cpp", "ollama", "vllm", "sglang", "openai", "unknown"]

PROBE_TIMEOUT = 5.0
"""Seconds for each probe request: the facts are a convenience, never worth a long wait."""


class ServerCapabilities(CapabilityOverrides):
    """What one server offers one model (the fields: `config.CapabilityOverrides`); None means
    unknown, and the caller then tries and learns."""

    model_config = ConfigDict(extra="forbid", validate_assignment=False)

    kind: ServerKind = "unknown"
    reached: bool = True
    """False when the probe got no answer at all (the server is down, or the URL is wrong)."""
    url_hint: str | None = None
    """What is wrong with the base URL, when a sign says (`models._url_hints`): nothing listens
    there, https to a plain-HTTP server, or the `/v1` left out."""

    def overridden(self, overrides: CapabilityOverrides | None) -> ServerCapabilities:
        """These facts with every field `overrides` sets (not None) taking its place."""
        if overrides is None:
            return self
        update = overrides.model_dump(exclude_none=True)
        return self.model_copy(update=update) if update else self


OPENAI = ServerCapabilities(
    kind="openai", supports_tools=True, json_schema=True, json_mode=True, grammar=False
)
"""api.openai.com: function calling and structured outputs on every current chat model."""


OPENAI_DEFAULT_MODEL = "gpt-4o-mini"
"""The model used on api.openai.com when none is configured."""


def _root(base_url: str) -> str:
    """The server root: the base URL without a trailing `/v1` (llama.cpp and Ollama serve their
    own endpoints there)."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


class _Unreachable:
    """What `_get_json` returns when the request got no HTTP answer at all, and why."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


async def _get_json(http: httpx2.AsyncClient, method: str, url: str, **kwargs: Any) -> Any:
    """The JSON object at `url`; None for any other answer; an `_Unreachable` for none."""
    # httpx2: the openai client's own HTTP library (a base dependency; httpx is only in `dev`).
    # Deferred: only a probe needs it (the embedded model never does).
    import httpx2

    try:
        response = await http.request(method, url, **kwargs)
    except (httpx2.HTTPError, OSError) as exc:
        return _Unreachable(exc)
    if response.status_code != 200:
        return None
    try:
        data = response.json()
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _llama_cpp(props: dict[str, Any]) -> ServerCapabilities:
    caps = props.get("chat_template_caps")
    tools: bool | None = None
    if isinstance(caps, dict) and "supports_tools" in caps:
        tools = bool(caps.get("supports_tools")) and bool(caps.get("supports_tool_calls", True))
    settings = props.get("default_generation_settings")
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    alias = props.get("model_alias")
    served = alias if isinstance(alias, str) and alias not in ("", "-") else None
    return ServerCapabilities(
        kind="llama.cpp",
        supports_tools=tools,
        json_schema=True,
        json_mode=True,
        grammar=True,
        context_window=n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else None,
        served_model=served,
    )


def _ollama(show: dict[str, Any], model: str | None) -> ServerCapabilities:
    capabilities = show.get("capabilities")
    tools = "tools" in capabilities if isinstance(capabilities, list) else None
    window: int | None = None
    info = show.get("model_info")
    if isinstance(info, dict):
        lengths = [v for k, v in info.items() if k.endswith(".context_length") and isinstance(v, int)]
        window = lengths[0] if lengths and lengths[0] > 0 else None
    return ServerCapabilities(
        kind="ollama",
        supports_tools=tools,
        json_schema=True,
        json_mode=True,
        grammar=False,
        context_window=window,
        served_model=model,
    )


def _from_models(listing: dict[str, Any] | None, model: str | None) -> ServerCapabilities:
    """vLLM/SGLang (recognised by `owned_by`) or an unknown server, from `/v1/models`."""
    entries = [e for e in (listing or {}).get("data") or () if isinstance(e, dict)]
    entry = next((e for e in entries if e.get("id") == model), entries[0] if entries else None)
    if entry is None:
        return ServerCapabilities()
    served = entry.get("id") if isinstance(entry.get("id"), str) else None
    owner = str(entry.get("owned_by") or "").lower()
    window = entry.get("max_model_len")
    window = window if isinstance(window, int) and window > 0 else None
    if owner in ("vllm", "sglang"):
        return ServerCapabilities(
            kind=owner,
            json_schema=True,
            json_mode=True,
            context_window=window,
            served_model=served,
        )
    return ServerCapabilities(context_window=window, served_model=served)


async def probe(
    base_url: str, *, model: str | None = None, api_key: str | None = None, timeout: float = PROBE_TIMEOUT
) -> ServerCapabilities:
    """Ask the server at `base_url` what it offers `model` (see the module docstring)."""
    host = (urlsplit(base_url).hostname or "").lower()
    if host == "api.openai.com":
        return OPENAI.model_copy(update={"served_model": model or OPENAI_DEFAULT_MODEL})
    import httpx2

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    root = _root(base_url)
    async with httpx2.AsyncClient(timeout=timeout, headers=headers) as http:
        props, listing = await asyncio.gather(
            _get_json(http, "GET", f"{root}/props"),
            _get_json(http, "GET", f"{base_url.rstrip('/')}/models"),
        )
        if isinstance(props, _Unreachable) and isinstance(listing, _Unreachable):
            return ServerCapabilities(reached=False, url_hint=connect_hint(base_url, listing.error))
        props = None if isinstance(props, _Unreachable) else props
        listing = None if isinstance(listing, _Unreachable) else listing
        if props is not None and ("chat_template_caps" in props or "default_generation_settings" in props):
            found = _llama_cpp(props)
            if found.served_model is None:
                found.served_model = _from_models(listing, model).served_model
            return found
        from_models = _from_models(listing, model)
        name = model or from_models.served_model
        if name is not None and from_models.kind == "unknown":
            show = await _get_json(http, "POST", f"{root}/api/show", json={"model": name})
            if isinstance(show, dict) and ("capabilities" in show or "model_info" in show):
                return _ollama(show, from_models.served_model or name)
        candidate = v1_candidate(base_url) if listing is None else None
        if candidate is not None and isinstance(await _get_json(http, "GET", f"{candidate}/models"), dict):
            from_models.url_hint = missing_v1(base_url, candidate)
        return from_models


class ProbeCache:
    """One probe per `(base_url, model)` for the life of the process, once the server answered.
    (Calls racing on a server
    not yet probed may each probe it: a few GETs, not worth a lock bound to one event loop.)"""

    def __init__(self) -> None:
        self._found: dict[tuple[str, str | None], ServerCapabilities] = {}

    async def get(
        self, base_url: str, *, model: str | None, api_key: str | None, timeout: float = PROBE_TIMEOUT
    ) -> ServerCapabilities:
        key = (base_url, model)
        found = self._found.get(key)
        if found is None:
            found = await probe(base_url, model=model, api_key=api_key, timeout=timeout)
            if found.reached:  # a server not up yet is asked again next time
                self._found[key] = found
        return found

    def forget(self, base_url: str) -> None:
        """Drop what was learnt about `base_url` (a server restarted, or another on its port)."""
        for key in [k for k in self._found if k[0].rstrip("/") == base_url.rstrip("/")]:
            del self._found[key]

    def clear(self) -> None:
        self._found.clear()


PROBES = ProbeCache()
"""The process-wide cache (`PROBES.clear()` forgets every server, e.g. after one restarted)."""
