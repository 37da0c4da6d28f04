"""The provider protocol: one attempt of one chat call against one backend.

Providers do exactly one HTTP (or in-process) attempt and translate failures into `ModelError`
with `retryable` set; retries, backoff and fallback models live in `ModelClient` only, so every
backend gets the same resilience policy and tests can swap the backend without touching it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from ._types import ModelRequest, ModelResponse

DeltaCallback = Callable[[str], None]
"""Receives each streamed content fragment as it arrives."""


@runtime_checkable
class ChatProvider(Protocol):
    """A chat-completions backend.

    `chat` performs a single attempt with `model` (the client's choice for this attempt, which
    overrides `request.model`) and returns a fresh `ModelResponse` the caller may update. It
    raises `ModelError` for every backend failure, with `retryable=True` for 429, 5xx, timeouts
    and connection errors. When `request.stream` is set it calls `on_delta` for each content
    delta. The same `request` object is passed on every retry and fallback: do not mutate it.
    """

    base_url: str | None
    """Where requests go, for error messages and telemetry (None for in-process providers)."""

    async def chat(
        self,
        request: ModelRequest,
        *,
        model: str,
        on_delta: DeltaCallback | None = None,
    ) -> ModelResponse: ...

    async def aclose(self) -> None:
        """Release connections; the provider must not be used afterwards."""
        ...


def is_retryable_status(status: int) -> bool:
    """Whether an HTTP status is worth retrying: rate limits, request timeouts, server errors.

    408 counts as a timeout. Other 4xx mean the request itself is wrong and would fail again.
    """
    return status == 429 or status == 408 or status >= 500
