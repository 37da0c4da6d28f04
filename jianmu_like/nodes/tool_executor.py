"""ToolExecutor: run the tool calls the model asked for and hand back one observation per call.

Every call yields exactly one `tool` message, in the order of the calls, paired by
`tool_call_id` (the OpenAI protocol requires it directly after the assistant message). Nothing
the model or a tool does can crash the node: unknown tools, malformed or invalid arguments,
exceptions, timeouts and guard denials all become error observations the model can read.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from py_trees.common import Status

from ..bt.async_behaviour import AsyncBehaviour
from ..guard.decisions import Decision
from ..guard.enforcer import GuardContext, GuardEnforcer
from ..models.messages import Message, ToolCall, tool_message
from ..presets.react_config import ExecutionMode
from ..state.schema import StateKeys
from ..telemetry import events as ev
from ..tools.base import Tool
from ..tools.errors import ToolArgumentsError
from ..tools.toolset import ToolSet

ToolRunner = Callable[[Tool, dict[str, Any]], Awaitable[str]]
"""Replaces `tool.invoke(arguments)`, e.g. to run tools in a sandbox or another process."""


class _Observation:
    __slots__ = ("content", "failed", "tool")

    def __init__(self, content: str, *, failed: bool, tool: Tool | None) -> None:
        self.content = content
        self.failed = failed
        self.tool = tool


class ToolExecutor(AsyncBehaviour):
    """Executes `actions` (serially, in parallel, or `auto`) after a guard preflight."""

    def __init__(
        self,
        name: str,
        tools: ToolSet,
        *,
        keys: StateKeys | None = None,
        namespace: str | None = None,
        constraints: GuardEnforcer | None = None,
        tool_runner: ToolRunner | None = None,
        execution_mode: ExecutionMode = "auto",
        default_timeout: float = 60.0,
        max_output_chars: int = 8000,
    ) -> None:
        super().__init__(name)
        self.tools = tools
        self.keys = keys or StateKeys()
        self.namespace = namespace
        self.constraints = constraints
        self.tool_runner = tool_runner
        self.execution_mode = execution_mode
        self.default_timeout = default_timeout
        self.max_output_chars = max_output_chars
        self._finished: dict[int, _Observation] = {}
        """Observations of the current batch by call index, as they complete."""

    def update_sync(self) -> Status | None:
        # No tool calls (the model answered): nothing to do, no task to start.
        return None if self.state_manager.get(self.keys.actions, self.namespace) else Status.SUCCESS

    async def update_async(self) -> Status:
        sm, keys, ns = self.state_manager, self.keys, self.namespace
        actions: list[ToolCall] = list(sm.get(keys.actions, ns))
        if not self.tools.ready:
            await self.tools.ensure_ready()
        self._finished = {}
        observations = await self._execute(actions)
        self._commit(actions, observations)
        return Status.SUCCESS

    def terminate(self, new_status: Status) -> None:
        if new_status == Status.INVALID and self.in_flight:
            # Halted mid-batch (run cancelled, a Parallel sibling failed...): answer every call
            # anyway, so the history never holds tool calls without results (the API rejects it).
            actions: list[ToolCall] = list(self.state_manager.get(self.keys.actions, self.namespace))
            interrupted = _Observation(
                "Error: interrupted: the run was stopped before this call finished", failed=True, tool=None
            )
            self._commit(actions, [self._finished.get(i, interrupted) for i in range(len(actions))])
        super().terminate(new_status)

    def _commit(self, actions: Sequence[ToolCall], observations: Sequence[_Observation]) -> None:
        """Append one observation per call (in call order) and record effects and repeats."""
        sm, keys, ns = self.state_manager, self.keys, self.namespace
        counts: dict[str, int] = dict(sm.get(keys.call_counts, ns) or {})
        messages: list[Message] = []
        effects: list[str] = []
        known_effects = set(sm.get(keys.tool_effects, ns) or ())
        for call, obs in zip(actions, observations, strict=True):
            content = obs.content
            signature = _signature(call)
            seen = counts.get(signature, 0)
            counts[signature] = seen + 1
            if seen:
                content += (
                    f"\n\n[note: you already made this exact call {seen} time(s) in this run; "
                    "do not repeat it: use the earlier result, change the arguments, or answer]"
                )
            messages.append(tool_message(content, call.id, call.name))
            if obs.tool is not None and not obs.failed:
                for tag in sorted(obs.tool.effect_tags):
                    if tag not in known_effects:
                        known_effects.add(tag)
                        effects.append(tag)
        updates: dict[str, Any] = {keys.messages: messages, keys.call_counts: counts}
        if effects:
            updates[keys.tool_effects] = [*sm.get(keys.tool_effects, ns), *effects]
        sm.update(updates, ns)

    # ------------------------------------------------------------------ execution
    async def _execute(self, actions: Sequence[ToolCall]) -> list[_Observation]:
        resolved = [self.tools.get(call.name) for call in actions]
        runs = (self._run_recorded(i, c, t) for i, (c, t) in enumerate(zip(actions, resolved, strict=True)))
        if self._parallel(resolved):
            return list(await asyncio.gather(*runs))
        return [await run for run in runs]

    async def _run_recorded(self, index: int, call: ToolCall, tool: Tool | None) -> _Observation:
        observation = await self._run_one(call, tool)
        self._finished[index] = observation
        return observation

    def _parallel(self, resolved: Sequence[Tool | None]) -> bool:
        if len(resolved) < 2 or self.execution_mode == "serial":
            return False
        if self.execution_mode == "parallel":
            return True
        return all(t is not None and t.parallel_safe for t in resolved)

    async def _run_one(self, call: ToolCall, tool: Tool | None) -> _Observation:
        if tool is None:
            available = ", ".join(self.tools.names()) or "none"
            return self._fail(call, tool, f"unknown tool {call.name!r}. Available tools: {available}.")
        if call.arguments_error is not None:
            return self._fail(
                call,
                tool,
                f"could not read the arguments for tool {call.name!r}: {call.arguments_error}. "
                f"Raw arguments: {_clip(call.raw_arguments or '', 300)!r}. "
                "Call the tool again with a JSON object as arguments.",
            )
        if self.constraints is not None:
            verdict = self.constraints.check(call, tool, self._guard_context())
            if verdict.decision is Decision.DENY:
                return self._fail(call, tool, f"denied by policy: {verdict.reason}", denied=True)
            if verdict.decision is Decision.PENDING:
                return self._fail(
                    call,
                    tool,
                    f"this call needs human approval ({verdict.reason}) and this agent has no "
                    "approval channel; it was not run",
                    denied=True,
                )
        timeout = tool.timeout if tool.timeout is not None else self.default_timeout
        self.emit(ev.TOOL_CALL_STARTED, tool=call.name, call_id=call.id, arguments=call.arguments)
        started = time.perf_counter()
        try:
            async with asyncio.timeout(timeout):  # no extra task, unlike wait_for on 3.11
                if self.tool_runner is not None:
                    output = await self.tool_runner(tool, call.arguments)
                else:
                    output = await tool.invoke(call.arguments)
        except ToolArgumentsError as exc:
            return self._fail(call, tool, f"invalid arguments for tool {call.name!r}: {exc}")
        except TimeoutError:
            return self._fail(call, tool, f"tool {call.name!r} timed out after {timeout:g} s")
        except Exception as exc:
            return self._fail(call, tool, f"tool {call.name!r} raised {type(exc).__name__}: {exc}")
        content = self._truncate(output)
        if self.telemetry is not None and self.telemetry.active:
            self.emit(
                ev.TOOL_CALL_COMPLETED,
                tool=call.name,
                call_id=call.id,
                output=_clip(content, 500),
                duration=time.perf_counter() - started,
            )
        return _Observation(content, failed=False, tool=tool)

    def _fail(self, call: ToolCall, tool: Tool | None, reason: str, *, denied: bool = False) -> _Observation:
        self.emit(ev.TOOL_CALL_FAILED, tool=call.name, call_id=call.id, error=reason, denied=denied)
        return _Observation(f"Error: {reason}", failed=True, tool=tool)

    def _guard_context(self) -> GuardContext:
        sm = self.state_manager
        return GuardContext(
            state=sm.state,
            namespace=self.namespace,
            tool_effects=list(sm.get(self.keys.tool_effects, self.namespace) or ()),
        )

    def _truncate(self, output: str) -> str:
        limit = self.max_output_chars
        if len(output) <= limit:
            return output
        return (
            output[:limit] + f"\n\n[output truncated: showing the first {limit} of {len(output)} characters]"
        )


def _signature(call: ToolCall) -> str:
    """Identifies an exact call: same tool, same (JSON-decoded) arguments in any key order."""
    return f"{call.name}:{sorted(call.arguments.items())!r}"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
