"""Running one tool call: the checks before it, its timeout, and every way it can fail.

Whatever happens — unknown tool, malformed or invalid arguments, an exception (even one whose
message cannot be rendered), `sys.exit()` in the tool, a timeout, a tool ignoring its
cancellation (its late result is dropped) — the result is a `ToolOutcome` whose text the model
can read; nothing propagates to the tree. Only a cancellation of the run itself, or a
KeyboardInterrupt on the event-loop thread (possibly a real Ctrl-C), goes on up.

A tool that swallows the cancellation its timeout (or the run's cancellation) sends and goes on
waiting is *abandoned*: it gets `ABANDON_GRACE` seconds to end (an `except CancelledError:` that
cleans up and re-raises ends well within it), then it is moved to a task of its own and the call
fails with the timeout (or the run stops) at once. The stray task is logged, kept referenced until
it ends (so it is not garbage collected mid-flight) and never awaited again; its result or error
is logged and dropped. It ends when the tool ends, or when it is cancelled (the event loop's
shutdown: `asyncio.run` cancels every task): its coroutine is then closed (GeneratorExit runs its
`finally` blocks; it can await nothing more), so it cannot hold the shutdown either.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any

from .._base.redact import redact_secrets
from ..models._construct import construct
from ..models._messages import ToolCall
from ..telemetry import events as ev
from ..telemetry.logging import get_logger
from ..tools._base import Tool, render_result
from ..tools._errors import ToolArgumentsError, ToolExitError, safe_message
from ..tools._hooks import ToolTimedOut, deadline_watch, tool_call_hook
from ..tools._toolset import ToolSet
from ..tools._truncation import cut_output
from ._tool_outcome import ToolOutcome

ToolRunner = Callable[[Tool, dict[str, Any]], Awaitable[str]]
"""Replaces `tool.invoke(arguments)`, e.g. to run tools in a sandbox or another process."""

Emit = Callable[..., None]

ABANDON_GRACE = 0.5
"""Seconds a cancelled tool call may go on (cleaning up) before it is abandoned to a task of its
own; a run is held at most this long past a tool's timeout."""

_log = get_logger("jianmu_like.tools")
_strays: set[asyncio.Task[Any]] = set()
"""Abandoned tool calls still running: referenced here until they end (the event loop keeps only
weak references to tasks)."""


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
            raw = f" Raw arguments: {clip(call.raw_arguments, 300)!r}." if call.raw_arguments else ""
            return self.fail(
                call,
                f"invalid arguments for tool {call.name!r}: {call.arguments_error}.{raw} "
                "Call the tool again with a JSON object as arguments.",
            )
        return None

    async def run(self, call: ToolCall, tool: Tool) -> ToolOutcome:
        """Run an allowed call; every failure becomes an error outcome.

        A tool that swallows the cancellation its timeout sends, and returns later, still gets
        the timeout error as its observation: the late result is dropped. (The call runs in the
        batch's own task rather than one of its own, which would cost every call a fifth of an
        iteration, so such a tool delays its batch until it returns.)
        """
        timeout = tool.timeout if tool.timeout is not None else self.default_timeout
        listening = self.listening()
        if listening:
            self.emit(ev.ToolCallStarted, tool=call.name, call_id=call.id, arguments=call.arguments)
        started = time.perf_counter() if listening else 0.0
        begun = asyncio.get_running_loop().time()  # the deadline counts from the call's start
        deadline: _Deadline | None = None
        # A plain Tool is executed directly and its result rendered here: two coroutine layers
        # fewer per call than going through `_invoke` and `Tool.invoke`. A tool-call hook
        # (tools._hooks: durable runs) sees every call, so none is direct under one.
        direct = self.tool_runner is None and type(tool).invoke is _TOOL_INVOKE and tool_call_hook() is None
        work: Coroutine[Any, Any, Any] = (
            tool.execute(call.arguments) if direct else self._invoke(tool, call.arguments)
        )
        try:
            # The first step runs here (most tools finish in it, armed with no timer and no
            # extra frame); only work that waits goes on under the deadline.
            output: str
            try:
                pending = work.send(None)
            except StopIteration as done:
                output = done.value
            else:
                deadline = _Deadline(begun + timeout)
                output = await deadline.run(work, pending, watched=not direct)
            if direct:
                output = render_result(output)
        except ToolArgumentsError as exc:
            return self.fail(call, safe_message(exc))  # its message names the tool already
        except ToolExitError as exc:
            return self.fail(call, f"tool {call.name!r} {safe_message(exc)}")
        except TimeoutError as exc:
            if deadline is not None and deadline.expired():
                deadline.settle(call.name, timeout)
                return self.fail(call, _timed_out(call, timeout))
            if isinstance(exc, ToolTimedOut):  # a hook's answer: it timed out (when recorded)
                return self.fail(call, _timed_out(call, timeout))
            return self.fail(call, f"tool {call.name!r} raised TimeoutError: {safe_message(exc)}")
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is None or current.cancelling():
                if deadline is not None:
                    deadline.settle(call.name, timeout)
                raise  # the run is being cancelled
            return self.fail(call, f"tool {call.name!r} was cancelled")  # by its own doing
        except KeyboardInterrupt:
            raise  # on the event-loop thread it may be a real Ctrl-C: stop the run
        except BaseException as exc:
            return self.fail(call, f"tool {call.name!r} raised {type(exc).__name__}: {safe_message(exc)}")
        if deadline is not None and deadline.expired():
            # It swallowed its cancellation and answered anyway: too late.
            return self.fail(call, _timed_out(call, timeout))
        content = self.truncate(output, tool.max_output_chars)
        if listening:
            self.emit(
                ev.ToolCallCompleted,
                tool=call.name,
                call_id=call.id,
                output=clip(content, 500),
                duration=time.perf_counter() - started,
            )
        return outcome(content, False, sorted(tool.effect_tags) if tool.effect_tags else [])

    async def _invoke(self, tool: Tool, arguments: dict[str, Any]) -> str:
        """The observation text; a SystemExit is turned into an error here, since one leaving a
        task stops the whole event loop."""
        hook = tool_call_hook()
        try:
            if hook is not None:
                output: Any = await hook(self.tool_runner or _invoke_tool, tool, arguments)
            elif self.tool_runner is None:
                return await tool.invoke(arguments)
            else:
                output = await self.tool_runner(tool, arguments)
        except SystemExit as exc:
            raise ToolExitError(exc) from exc
        return output if isinstance(output, str) else render_result(output)

    def listening(self) -> bool:
        """Whether anyone receives this runner's events (`emit` is then worth its arguments)."""
        owner = getattr(self.emit, "__self__", None)
        hub = getattr(owner, "telemetry", _NO_OWNER) if owner is not None else _NO_OWNER
        return hub is _NO_OWNER or (hub is not None and hub.active)

    def fail(self, call: ToolCall, reason: str, *, denied: bool = False) -> ToolOutcome:
        """The outcome of a call that failed: `reason` cut like an output (`truncate`) before it
        reaches the event, the observation and, through it, the state and the next request."""
        reason = self.truncate(reason)
        self.emit(
            ev.ToolCallFailed,
            tool=call.name,
            call_id=call.id,
            error=reason,
            denied=denied,
            arguments=call.arguments,  # a refused call never started: say what was refused
        )
        return outcome(f"Error: {reason}", True, [])

    def truncate(self, output: str, limit: int | None = None) -> str:
        """The rule for every text a call hands the model, output or error: registered secrets
        masked by value (`_base.redact.register_secret`: before the text reaches the state, the
        journal, the checkpoint, the events or the model), then at most `limit` (the tool's own
        `max_output_chars`) or else `max_output_chars`, cut by its shape with a note saying how
        much there was (`tools._truncation`)."""
        output = redact_secrets(output)
        limit = limit or self.max_output_chars
        if len(output) <= limit:
            return output
        return cut_output(output, limit)


class _Deadline:
    """`asyncio.timeout_at(at)`, armed only once the work actually waits.

    Most tools finish in their first step, and a timer armed and cancelled for each of them was
    a measurable share of a ReAct iteration; a synchronous step cannot be interrupted by a timer
    anyway. The deadline still counts from the start of the call."""

    __slots__ = ("_resume", "_timeout", "at")

    def __init__(self, at: float) -> None:
        self.at = at
        self._timeout: asyncio.Timeout | None = None
        self._resume: _Resume | None = None

    def expired(self) -> bool:
        """Whether the deadline passed while the work was waiting (as `Timeout.expired`)."""
        return self._timeout is not None and self._timeout.expired()

    async def run(self, work: Coroutine[Any, Any, Any], pending: Any, *, watched: bool = False) -> Any:
        """Carry on `work`, whose first step yielded `pending`, until the deadline (loop time).
        `watched`: a tool-call hook runs in `work`, and may ask whether the deadline passed
        (`tools._hooks.call_timed_out`: a recording tells a timeout from a cancelled run)."""
        self._timeout = timeout = asyncio.timeout_at(self.at)  # no extra task, unlike wait_for on 3.11
        self._resume = resume = _Resume(work, pending)
        if watched:
            with deadline_watch(timeout.expired):
                async with timeout:
                    return await resume
        async with timeout:
            return await resume

    def settle(self, tool: str, timeout: float) -> None:
        """After the call was cancelled: if the work swallowed the cancellation past the grace
        and was moved to a task of its own (`_Resume.stray`), abandon it: logged, kept
        referenced until it ends, never awaited again."""
        stray = self._resume.stray if self._resume is not None else None
        if stray is None:
            return
        _strays.add(stray)
        stray.add_done_callback(_stray_ended)
        _log.warning(
            "tool_call_abandoned",
            tool=tool,
            timeout=timeout,
            grace=ABANDON_GRACE,
            detail=(
                f"tool {tool!r} ignored its cancellation and did not end within {ABANDON_GRACE:g} s: "
                "abandoned, it goes on in the background and its result will be dropped"
            ),
        )


class _Resume:
    """Awaitable that continues a coroutine already started by hand (see `_Deadline.run`).

    A cancellation goes to the work. If the work swallows it (or cleans up, awaiting), it goes on
    in this task for `ABANDON_GRACE` seconds; cancelled again then (by the grace's own timer, or
    anyone), it is abandoned: moved to a task of its own (`stray`) while this awaitable raises
    the cancellation, so the call ends. Cleanup that ends within the grace stays in its task
    (anyio cancel scopes, as the MCP SDK's, must exit in the task that entered them)."""

    __slots__ = ("abandoned", "nudged", "pending", "stray", "work")

    def __init__(self, work: Coroutine[Any, Any, Any], pending: Any, *, abandoned: bool = False) -> None:
        self.work = work
        self.pending = pending
        self.abandoned = abandoned
        """Driving a stray: no grace, no second abandonment."""
        self.nudged = False
        """The grace ran out and its timer cancelled the task (a cancellation to take back)."""
        self.stray: asyncio.Task[Any] | None = None
        """The work, moved to a task of its own when it swallowed its cancellation."""

    def _nudge(self, task: asyncio.Task[Any]) -> None:
        self.nudged = True
        task.cancel()

    def __await__(self) -> Generator[Any, Any, Any]:
        work, pending = self.work, self.pending
        grace: asyncio.TimerHandle | None = None
        try:
            while True:
                try:
                    sent = yield pending
                except GeneratorExit:
                    work.close()
                    raise
                except BaseException as exc:  # cancellation (the deadline) goes to the tool
                    if self.abandoned and isinstance(exc, asyncio.CancelledError):
                        # A stray cancelled (the event loop's shutdown): it ignored that once,
                        # so it is closed (GeneratorExit: its `finally` blocks run) and ends.
                        work.close()
                        raise
                    if grace is not None and isinstance(exc, asyncio.CancelledError):
                        task = asyncio.current_task()
                        if self.nudged and task is not None:
                            task.uncancel()  # ours: the caller sees only the first cancellation
                        self.stray = asyncio.get_running_loop().create_task(
                            _drive(work, pending), name="jianmu-abandoned-tool-call"
                        )
                        raise
                    try:
                        pending = work.throw(exc)
                    except StopIteration as done:
                        return done.value
                    if isinstance(exc, asyncio.CancelledError) and not self.abandoned:
                        task = asyncio.current_task()
                        if task is not None:  # swallowed, or cleaning up: a little longer, here
                            grace = asyncio.get_running_loop().call_later(ABANDON_GRACE, self._nudge, task)
                else:
                    try:
                        pending = work.send(sent)
                    except StopIteration as done:
                        return done.value
        finally:
            if grace is not None:
                grace.cancel()


async def _drive(work: Coroutine[Any, Any, Any], pending: Any) -> Any:
    """Carry on abandoned work in a task of its own. What it waited for was cancelled with the
    task it ran in (or is done): the work resumes and reads that outcome, a cancellation."""
    if asyncio.isfuture(pending) and not pending.done():
        await asyncio.wait({pending})
    try:
        first = work.send(None)
    except StopIteration as done:
        return done.value
    return await _Resume(work, first, abandoned=True)


def _drop_result(task: asyncio.Task[Any]) -> None:
    """The ended stray's error, retrieved (no "never retrieved" warning) and logged."""
    if task.cancelled():
        return
    error = task.exception()
    if error is not None:
        _log.info("abandoned_tool_call_failed", error=f"{type(error).__name__}: {safe_message(error)}")


def _stray_ended(task: asyncio.Task[Any]) -> None:
    _strays.discard(task)
    _log.info("abandoned_tool_call_ended", cancelled=task.cancelled())
    _drop_result(task)


_TOOL_INVOKE = Tool.invoke


def _invoke_tool(tool: Tool, arguments: dict[str, Any]) -> Awaitable[str]:
    """A node without a `tool_runner` calls the tool itself (what a hook is handed)."""
    return tool.invoke(arguments)


_NO_OWNER: Any = object()
"""`emit` is not a node's bound method: always call it (its owner's hub is unknown)."""


def outcome(content: str, failed: bool, effect_tags: list[str]) -> ToolOutcome:
    """A ToolOutcome from the runner's own (typed) values, without validating them again."""
    return construct(
        ToolOutcome,
        {
            "content": content,
            "failed": failed,
            "effect_tags": effect_tags,
            "final_answer": None,
            "artifacts": [],
            "usage": None,
        },
    )


def _timed_out(call: ToolCall, timeout: float) -> str:
    return f"tool {call.name!r} timed out after {timeout:g} s"


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
