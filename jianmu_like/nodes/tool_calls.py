"""Running one tool call: the checks before it, its timeout, and every way it can fail.

Whatever happens — unknown tool, malformed or invalid arguments, an exception, a timeout — the
result is a `ToolOutcome` whose text the model can read; nothing propagates to the tree.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator
from types import CoroutineType
from typing import Any, cast

from ..models.messages import ToolCall
from ..telemetry import events as ev
from ..tools.base import Tool
from ..tools.errors import ToolArgumentsError
from ..tools.toolset import ToolSet
from .tool_outcome import ToolOutcome

ToolRunner = Callable[[Tool, dict[str, Any]], Awaitable[str]]
"""Replaces `tool.invoke(arguments)`, e.g. to run tools in a sandbox or another process."""

Emit = Callable[..., None]


class ToolCallRunner:
    """Executes single calls against a ToolSet with timeouts and output limits."""

    def __init__(
        self,
        tools: ToolSet,
        *,
        emit: Emit,
        tool_runner: ToolRunner | None = None,
        default_timeout: float = 60.0,
        max_output_chars: int = 8000,
    ) -> None:
        self.tools = tools
        self.emit = emit
        self.tool_runner = tool_runner
        self.default_timeout = default_timeout
        self.max_output_chars = max_output_chars

    def precheck(self, call: ToolCall, tool: Tool | None) -> ToolOutcome | None:
        """The failure a call has before any policy or execution (None when it can run)."""
        if tool is None:
            available = ", ".join(self.tools.names()) or "none"
            return self.fail(call, f"unknown tool {call.name!r}. Available tools: {available}.")
        if call.arguments_error is not None:
            return self.fail(
                call,
                f"could not read the arguments for tool {call.name!r}: {call.arguments_error}. "
                f"Raw arguments: {clip(call.raw_arguments or '', 300)!r}. "
                "Call the tool again with a JSON object as arguments.",
            )
        return None

    async def run(self, call: ToolCall, tool: Tool) -> ToolOutcome:
        """Run an allowed call; every failure becomes an error outcome."""
        timeout = tool.timeout if tool.timeout is not None else self.default_timeout
        self.emit(ev.TOOL_CALL_STARTED, tool=call.name, call_id=call.id, arguments=call.arguments)
        started = time.perf_counter()
        try:
            output = await _within(
                timeout,
                self.tool_runner(tool, call.arguments)
                if self.tool_runner is not None
                else tool.invoke(call.arguments),
            )
        except ToolArgumentsError as exc:
            return self.fail(call, f"invalid arguments for tool {call.name!r}: {exc}")
        except TimeoutError:
            return self.fail(call, f"tool {call.name!r} timed out after {timeout:g} s")
        except Exception as exc:
            return self.fail(call, f"tool {call.name!r} raised {type(exc).__name__}: {exc}")
        content = self.truncate(output)
        self.emit(
            ev.TOOL_CALL_COMPLETED,
            tool=call.name,
            call_id=call.id,
            output=clip(content, 500),
            duration=time.perf_counter() - started,
        )
        return ToolOutcome(content=content, effect_tags=sorted(tool.effect_tags))

    def fail(self, call: ToolCall, reason: str, *, denied: bool = False) -> ToolOutcome:
        self.emit(ev.TOOL_CALL_FAILED, tool=call.name, call_id=call.id, error=reason, denied=denied)
        return ToolOutcome(content=f"Error: {reason}", failed=True)

    def truncate(self, output: str) -> str:
        limit = self.max_output_chars
        if len(output) <= limit:
            return output
        return (
            output[:limit] + f"\n\n[output truncated: showing the first {limit} of {len(output)} characters]"
        )


async def _within(timeout: float, work: Awaitable[str]) -> str:
    """`await work` with a deadline `timeout` seconds from now.

    The deadline timer is armed only if the work actually waits: most tools finish in their
    first step, and a timer armed and cancelled for each of them was a measurable share of a
    ReAct iteration. A synchronous step cannot be interrupted by a timer anyway."""
    deadline = asyncio.get_running_loop().time() + timeout
    if type(work) is not CoroutineType and not isinstance(work, Coroutine):
        async with asyncio.timeout_at(deadline):
            return await work
    try:
        pending = work.send(None)
    except StopIteration as done:
        return cast(str, done.value)
    async with asyncio.timeout_at(deadline):  # no extra task, unlike wait_for on 3.11
        return await _Resume(work, pending)


class _Resume:
    """Awaitable that continues a coroutine already started by hand (see `_within`)."""

    __slots__ = ("pending", "work")

    def __init__(self, work: Coroutine[Any, Any, str], pending: Any) -> None:
        self.work = work
        self.pending = pending

    def __await__(self) -> Generator[Any, Any, str]:
        work, pending = self.work, self.pending
        while True:
            try:
                sent = yield pending
            except GeneratorExit:
                work.close()
                raise
            except BaseException as exc:  # cancellation (the deadline) goes to the tool
                try:
                    pending = work.throw(exc)
                except StopIteration as done:
                    return cast(str, done.value)
            else:
                try:
                    pending = work.send(sent)
                except StopIteration as done:
                    return cast(str, done.value)


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
