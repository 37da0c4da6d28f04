"""A hook around every `ModelClient.complete` call of the current task, e.g. to run it as a
step of a durable workflow (jianmu_like.durable), which records the response and replays it
after a crash instead of asking the model again.

A context variable rather than a client attribute: nodes derive clients of their own
(`with_resilience`, `with_tool_protocol`), and asyncio tasks started by the tree inherit the
context, so one `use_model_call_hook` around a run reaches every model call made in it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ._types import ModelEventCallback, ModelRequest, ModelResponse

ModelCall = Callable[[ModelRequest, ModelEventCallback | None], Awaitable[ModelResponse]]
"""One logical model call (retries and fallbacks included)."""
ModelCallHook = Callable[[ModelCall, ModelRequest, ModelEventCallback | None], Awaitable[ModelResponse]]
"""Runs `call(request, on_event)` its own way (or answers without it) and returns the response."""

_hook: ContextVar[ModelCallHook | None] = ContextVar("jianmu_model_call_hook", default=None)


def model_call_hook() -> ModelCallHook | None:
    """The hook of the current context (None: calls go straight to the provider)."""
    return _hook.get()


@contextmanager
def use_model_call_hook(hook: ModelCallHook | None) -> Iterator[None]:
    """Route every model call made in this context (and tasks started from it) through `hook`."""
    token = _hook.set(hook)
    try:
        yield
    finally:
        _hook.reset(token)
