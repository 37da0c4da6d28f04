"""Which model answers, said where the user looks: `run`'s first line, `serve`'s banner, the console.

`ModelClient.resolve` picks the embedded model when no base URL is set anywhere, which is right
for trying the project offline and a surprise for someone who set only `OPENAI_API_KEY`: a
135M model then answers where they expected a hosted one. So the choice is always named, and
the embedded one says why it was chosen and how to use a real server instead.

`check` asks the server once (the probe `capabilities` already makes and caches) and turns
what it learnt into a warning with the cause: nothing listening, the `/v1` left out, no model
named anywhere. It never refuses: a server may come up after the agent is served.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from .._base.redact import redact_url
from ._tool_protocol import ProtocolAdapter

if TYPE_CHECKING:
    import py_trees

    from ._client import ModelClient
    from ._server_probe import ServerCapabilities

REAL_SERVER = "OPENAI_BASE_URL=http://HOST:PORT/v1 (and JIANMU_MODEL if the server serves several)"
"""How to point an agent at a real server, in the embedded model's note."""


def clients_in(root: py_trees.behaviour.Behaviour) -> list[ModelClient]:
    """The distinct model clients of a tree's nodes, in tree order."""
    from ._client import ModelClient

    found: dict[int, ModelClient] = {}
    for node in root.iterate():
        client = getattr(node, "model_client", None)
        if isinstance(client, ModelClient):
            found.setdefault(id(client), client)
    return list(found.values())


def _backend(client: ModelClient) -> str | None:
    """The embedded backend's name (xllamacpp, ...); None for a model server."""
    provider = client.provider.inner if isinstance(client.provider, ProtocolAdapter) else client.provider
    backend = getattr(provider, "backend", None)
    name = getattr(backend, "name", None)
    return str(name) if isinstance(name, str) and name else None


def embedded_note() -> str:
    """Why the embedded model answers, and how to use a real server instead."""
    if os.environ.get("OPENAI_API_KEY"):
        return (
            "OPENAI_API_KEY is set but no base URL, so the small embedded model answers; for OpenAI set "
            f"OPENAI_BASE_URL=https://api.openai.com/v1, for another server {REAL_SERVER}"
        )
    why = "no model server is configured, so the small embedded model answers"
    return f"{why}; for a real one set {REAL_SERVER}"


def describe(client: ModelClient, served: str | None = None, kind: str | None = None) -> str:
    """`qwen3 at http://127.0.0.1:8080/v1 (llama.cpp)`, or `local/smollm2 (embedded model,
    xllamacpp backend, in this process)` followed by `embedded_note()`."""
    backend = _backend(client)
    if backend is not None:
        return f"{client.model} (embedded model, {backend} backend, in this process): {embedded_note()}"
    name = client.model or served or "the model the server serves"
    server = f" ({kind})" if kind and kind != "unknown" else ""
    return f"{name} at {redact_url(client.provider.base_url)}{server}"


def describe_all(clients: Iterable[ModelClient]) -> list[str]:
    """One description per distinct client (several agents of a tree often share one)."""
    return list(dict.fromkeys(describe(client) for client in clients))


async def check(client: ModelClient) -> tuple[str, str | None]:
    """The client described with what its server said, and a warning when the server cannot
    answer a run as configured (the cause and what to do); `(description, None)` when it can."""
    if _backend(client) is not None or client.provider.base_url is None:  # nothing to ask
        return describe(client), None
    caps = await client.capabilities(None)
    label = describe(client, caps.served_model, caps.kind)
    return label, problem(client.provider.base_url, caps, named=bool(client.model))


def problem(base_url: str | None, caps: ServerCapabilities, *, named: bool) -> str | None:
    """What keeps the server at `base_url` from answering, from its probe `caps` (the cause, and
    what to do), for a client with a model `named` or not; None when nothing does."""
    url = redact_url(base_url)
    if not caps.reached:
        remedy = caps.url_hint or "is it running? (set OPENAI_BASE_URL or provider.base_url)"
        return f"cannot reach the model server at {url}: {remedy}"
    if caps.url_hint is not None:
        return caps.url_hint
    if not named and not caps.served_model:
        return (
            f"the server at {url} does not name the model it serves (/v1/models), and no model is "
            "configured: set JIANMU_MODEL, models.default or the agent file's model"
        )
    return None
