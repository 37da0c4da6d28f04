"""A hook around every tool call of the current task, e.g. to run it as a step of a durable
workflow (jianmu_like.durable), which records the outcome and replays it after a crash instead
of calling the tool again.

A context variable rather than something installed on the tree's nodes: trees build children
during the run (a supervisor's sub-agents, a plan's steps, `DynamicParallel`), and asyncio tasks
started by the tree inherit the context, so one `use_tool_call_hook` around a run reaches every
tool call made in it, whichever node makes it and whenever that node was built. Every call
passes through `ToolCallRunner` (nodes._tool_calls), the one place that consults the hook.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ._base import Tool
from ._errors import ToolError

ToolInvoke = Callable[[Tool, dict[str, Any]], Awaitable[Any]]
"""Runs one call the node's way (its `tool_runner`, or `Tool.invoke`): the observation text."""
ToolCallHook = Callable[[ToolInvoke, Tool, dict[str, Any]], Awaitable[Any]]
"""Runs `invoke(tool, arguments)` its own way (or answers without it) and returns its output."""

_hook: ContextVar[ToolCallHook | None] = ContextVar("jianmu_tool_call_hook", default=None)
_expired: ContextVar[Callable[[], bool] | None] = ContextVar("jianmu_tool_call_expired", default=None)


class ToolTimedOut(TimeoutError, ToolError):
    """Raised by a hook to answer a call as timed out (a replay of a call that timed out when
    recorded): the executor reports it as it reports its own deadline passing."""


def call_timed_out() -> bool:
    """Whether the deadline of the tool call running in this task has passed: a hook that sees
    the call cancelled asks this to tell the call's timeout from the run being cancelled."""
    expired = _expired.get()
    return expired is not None and expired()


@contextmanager
def deadline_watch(expired: Callable[[], bool]) -> Iterator[None]:
    """Makes `expired` (the current call's deadline) what `call_timed_out` asks, inside."""
    token = _expired.set(expired)
    try:
        yield
    finally:
        _expired.reset(token)


def tool_call_hook() -> ToolCallHook | None:
    """The hook of the current context (None: tools are called directly)."""
    return _hook.get()


@contextmanager
def use_tool_call_hook(hook: ToolCallHook | None) -> Iterator[None]:
    """Route every tool call made in this context (and tasks started from it) through `hook`."""
    token = _hook.set(hook)
    try:
        yield
    finally:
        _hook.reset(token)
