"""MCP tasks (protocol 2025-11-25): a tool call the server runs as a task.

A tool whose `execution.taskSupport` is "required" cannot be called plainly: the server answers
`-32601 ... requires task augmentation`. Run as a task, the call is four exchanges: `tools/call`
with a `task` field answers at once with a `CreateTaskResult` (a task id, its status, a
`pollInterval`); `tasks/get` reads the status until it is terminal (`completed`, `failed`,
`cancelled`) or `input_required` (the server has a question: `tasks/result` delivers it, as an
elicitation or sampling request on that request's stream); `tasks/result` returns the tool's
`CallToolResult`; `tasks/cancel` stops a task the client gave up on (a halted run, a timeout).

Why this module talks to the SDK below `ClientSession.call_tool`: the `mcp` SDK (2.3) checks
every `tools/call` result against the negotiated version's `CallToolResult` (`content` is
required), so the `CreateTaskResult` a task-augmented call returns would be refused before we
see it, and the `tasks/*` methods are deliberately left out of its method tables. What it does
offer, publicly: a `ClientSession` built over a `Dispatcher` its owner constructs
(`ClientSession(dispatcher=...)`), whose `send_raw_request` returns the result as a dict; the
task models in `mcp_types`; `ClientSession.send_request`, which checks only the methods in its
tables (so `tasks/get`, `tasks/result` and `tasks/cancel` are parsed by the models we give);
and `NotificationBinding` for `notifications/tasks/status`, a method its tables do not route.
`check_sdk()` verifies all of that when a session opens, so an SDK that drops one of them fails
with an error naming its version instead of breaking silently.

On protocol 2026-07-28 tasks left the core protocol for an extension
(`io.modelcontextprotocol/tasks`) which the SDK does not ship; a session always negotiates
2025-11-25 or older (`ClientSession.initialize`), where the core tasks above apply.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Any, Literal, TypeVar

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.shared.dispatcher import Dispatcher
    from mcp.types import CallToolResult, ServerCapabilities, Task, TaskStatusNotificationParams
    from mcp.types import Tool as MCPTool

from ..._base.redact import redacting_logger
from ..._base.validation import describe_validation
from ...errors import JianmuError
from ._content import MCPTimeoutError, MCPToolError

logger = redacting_logger(__name__)  # they quote what servers and tools say

_R = TypeVar("_R")

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
"""`(progress, total, message)`: one `notifications/progress` of a call in flight."""

TaskMode = Literal["auto", "always", "never"]
"""When a tool runs as a task: "auto" when it requires it, "always" when it allows it (taskSupport
"optional" too), "never" (a tool that requires it is then not offered to the model)."""

TASK_PROTOCOL_VERSIONS = frozenset({"2025-11-25"})
"""Protocol versions whose core includes tasks (2026-07-28 moved them to an extension)."""

STATUS_METHOD = "notifications/tasks/status"
TERMINAL = frozenset({"completed", "failed", "cancelled"})
DEFAULT_POLL_INTERVAL = 1.0
"""Seconds between `tasks/get` when the server suggests no `pollInterval`."""
MIN_POLL_INTERVAL = 0.05
"""A server's `pollInterval: 0` must not turn the wait into a busy loop."""
CANCEL_TIMEOUT = 5.0
"""Seconds `tasks/cancel` may take when a call is abandoned (a halted run must not hang on it)."""


class MCPTasksUnavailableError(JianmuError):
    """The installed `mcp` SDK lacks something MCP tasks (and the session built for them) use."""


def _sdk_version() -> str:
    try:
        return metadata.version("mcp")
    except metadata.PackageNotFoundError:
        return "unknown"


def check_sdk() -> None:
    """Fail, naming the installed `mcp` version, when it lacks what this module relies on."""
    missing = _missing_sdk_features()
    if missing:
        raise MCPTasksUnavailableError(
            f"the installed mcp SDK {_sdk_version()} lacks what jianmu_like's MCP client uses "
            f"(tested with mcp>=2.3,<3): {'; '.join(missing)}"
        )


def _missing_sdk_features() -> list[str]:
    missing: list[str] = []
    try:
        import mcp.types as types
        from mcp import ClientSession
        from mcp.client.extension import NotificationBinding
        from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
    except ImportError as exc:
        return [str(exc)]
    parameters = inspect.signature(ClientSession).parameters
    missing += [
        f"ClientSession({name}=...)"
        for name in ("dispatcher", "notification_bindings")
        if name not in parameters
    ]
    missing += [
        f"ClientSession.{name}"
        for name in ("send_request", "validate_tool_result")
        if not hasattr(ClientSession, name)
    ]
    if not callable(getattr(JSONRPCDispatcher, "send_raw_request", None)):
        missing.append("JSONRPCDispatcher.send_raw_request")
    if "method" not in getattr(NotificationBinding, "__dataclass_fields__", {}):
        missing.append("NotificationBinding(method=...)")
    names = (
        "CreateTaskResult",
        "GetTaskRequest",
        "GetTaskResult",
        "GetTaskPayloadRequest",
        "CancelTaskRequest",
        "CancelTaskResult",
        "TaskStatusNotificationParams",
        "CallToolRequestParams",
    )
    missing += [f"mcp.types.{name}" for name in names if not hasattr(types, name)]
    params = getattr(types, "CallToolRequestParams", None)
    if params is not None and "task" not in getattr(params, "model_fields", {}):
        missing.append("CallToolRequestParams.task")
    return missing


# -- which calls run as tasks ------------------------------------------------------------------


def task_support(tool: MCPTool) -> str:
    """The tool's `execution.taskSupport`: "forbidden" (absent), "optional" or "required"."""
    return getattr(getattr(tool, "execution", None), "task_support", None) or "forbidden"


def server_runs_tool_tasks(capabilities: ServerCapabilities | None, protocol_version: str | None) -> bool:
    """The server declared `tasks.requests.tools.call` on a version whose core has tasks; without
    it a client must not augment a call, whatever the tool says (spec, tool-level negotiation)."""
    tasks = getattr(capabilities, "tasks", None)
    call = getattr(getattr(getattr(tasks, "requests", None), "tools", None), "call", None)
    return call is not None and protocol_version in TASK_PROTOCOL_VERSIONS


def server_cancels_tasks(capabilities: ServerCapabilities | None) -> bool:
    return getattr(getattr(capabilities, "tasks", None), "cancel", None) is not None


def call_as_task(mode: TaskMode, support: str, server_runs_tasks: bool) -> bool | None:
    """True: run as a task; False: a plain call; None: it cannot be called (not offered)."""
    if support == "required":
        return True if mode != "never" and server_runs_tasks else None
    return support == "optional" and mode == "always" and server_runs_tasks


# -- following a task ------------------------------------------------------------------------


class TaskWatches:
    """Routes `notifications/tasks/status` and the progress of running tasks to their callers.

    A status notification only wakes the caller's wait for its next `tasks/get` (the spec lets a
    requestor rely on polling alone, and a poll's answer is the status acted on).

        The progress token of a task-augmented call stays valid for the task's whole life, long after
        the `tools/call` request (whose progress the SDK routes) has been answered: the session's
        message handler asks `progress_report(token)` for the report of the task that owns it.
    """

    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Event] = {}
        self._progress: dict[str, Progress] = {}
        self._tokens = itertools.count(1)

    @contextmanager
    def progress_token(self, report: Progress | None) -> Iterator[str]:
        """A token no other request of the session uses (a string: the SDK's own are integers)."""
        token = f"jianmu-task-{next(self._tokens)}"
        if report is not None:
            self._progress[token] = report
        try:
            yield token
        finally:
            self._progress.pop(token, None)

    def progress_report(self, token: object) -> Progress | None:
        return self._progress.get(token) if isinstance(token, str) else None

    @contextmanager
    def watch(self, task_id: str) -> Iterator[asyncio.Event]:
        """Set when the server tells the task's status between polls."""
        watch = self._tasks[task_id] = asyncio.Event()
        try:
            yield watch
        finally:
            self._tasks.pop(task_id, None)

    async def on_status(self, params: TaskStatusNotificationParams) -> None:
        """A `notifications/tasks/status` (the SDK's `NotificationBinding` handler)."""
        watch = self._tasks.get(params.task_id)
        if watch is not None:
            watch.set()


StatusReport = Callable[["Task"], None]
"""Told each status the client learns (creation, each change); emits the `mcp.task` event."""


@dataclass
class TaskCall:
    """One task-augmented `tools/call`, from creation to result (or cancellation)."""

    session: ClientSession
    dispatcher: Dispatcher[Any]
    watches: TaskWatches
    protocol_version: str
    server: str
    """The server's configured name, for the errors the model reads."""
    name: str
    arguments: dict[str, Any]
    call_timeout: float
    """Seconds the server may take to answer one request (create, get, cancel)."""
    ttl_ms: int
    can_cancel: bool
    on_status: StatusReport
    report: Progress | None = None
    _last_seen: tuple[str, str | None] | None = field(default=None, init=False)
    _ended = False
    """The server said the task ended (or its result came): nothing to cancel."""

    async def run(self) -> CallToolResult:
        """Create the task, follow it to its end, return its result; a call abandoned before
        then (cancelled, timed out, failed) cancels the task on the server first."""
        from mcp.types import CallToolResult

        with self.watches.progress_token(self.report) as token:
            task = await self._create(token)
            if isinstance(task, CallToolResult):
                return await self._checked(task)
            self._told(task)
            try:
                with self.watches.watch(task.task_id) as watch:
                    return await self._follow(task, watch)
            finally:
                if not self._ended:  # abandoned: cancelled, timed out, or failed on our side
                    await self._abandon(task.task_id)

    async def _create(self, token: str) -> Task | CallToolResult:
        """The task the server created; or, from a server that ran the call at once (it may,
        for a tool that only allows tasks), the tool's result."""
        from mcp.types import CallToolResult, CreateTaskResult
        from pydantic import ValidationError

        params = {
            "name": self.name,
            "arguments": self.arguments,
            "task": {"ttl": self.ttl_ms},
            "_meta": {"progressToken": token},
        }
        # The same header the session stamps on its own requests (streamable HTTP reads it).
        options: Any = {
            "timeout": self.call_timeout,
            "headers": {"mcp-protocol-version": self.protocol_version},
        }
        raw = await self._send(
            f"the task-augmented call of tool {self.name!r}",
            self.dispatcher.send_raw_request("tools/call", params, options),
        )
        try:
            if "task" not in raw and "content" in raw:
                return CallToolResult.model_validate(raw, by_name=False)
            return CreateTaskResult.model_validate(raw, by_name=False).task
        except ValidationError as exc:
            problems = "; ".join(describe_validation(exc, inputs=False)[:3])
            detail = f"answered the task-augmented call of tool {self.name!r} with no valid task ({problems})"
            raise self._tool_error(detail) from None

    async def _follow(self, task: Task, watch: asyncio.Event) -> CallToolResult:
        """Poll until the task ends, honouring its `pollInterval` (a status notification ends
        the wait early); ask for the result as soon as it ends or needs input."""
        fetch: asyncio.Task[CallToolResult] | None = None
        try:
            while True:
                if task.status == "cancelled":
                    self._ended = True
                    why = f": {task.status_message}" if task.status_message else ""
                    raise self._tool_error(f"cancelled the task of tool {self.name!r}{why}")
                if fetch is None and (task.status in TERMINAL or task.status == "input_required"):
                    # input_required: the server sends its question on the tasks/result stream.
                    fetch = asyncio.create_task(self._result(task.task_id, terminal=task.status in TERMINAL))
                if task.status in TERMINAL and fetch is not None:
                    self._ended = True
                    return await fetch
                await self._pause(task, watch, fetch)
                if fetch is not None and fetch.done():
                    self._ended = True  # tasks/result answered: the task has ended
                    return fetch.result()
                watch.clear()
                # The answer to a request, not a notification, is the status we act on.
                task = await self._get(task.task_id)
                self._told(task)
        finally:
            if fetch is not None and not fetch.done():
                fetch.cancel()
                await asyncio.wait({fetch})  # its outcome is moot; our own cancellation is not

    async def _pause(
        self, task: Task, watch: asyncio.Event, fetch: asyncio.Task[CallToolResult] | None
    ) -> None:
        interval = DEFAULT_POLL_INTERVAL if task.poll_interval is None else task.poll_interval / 1000
        waits: set[asyncio.Future[Any]] = {asyncio.ensure_future(watch.wait())}
        if fetch is not None:
            waits.add(fetch)
        try:
            await asyncio.wait(
                waits, timeout=max(MIN_POLL_INTERVAL, interval), return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for waiter in waits:
                if waiter is not fetch:
                    waiter.cancel()

    async def _get(self, task_id: str) -> Task:
        from mcp.types import GetTaskRequest, GetTaskRequestParams, GetTaskResult

        request = GetTaskRequest(params=GetTaskRequestParams(task_id=task_id))
        send = self.session.send_request(
            request, GetTaskResult, request_read_timeout_seconds=self.call_timeout
        )
        return await self._send(f"tasks/get for task {task_id}", send)

    async def _result(self, task_id: str, *, terminal: bool) -> CallToolResult:
        """`tasks/result`: prompt for an ended task; for one waiting on input it blocks until
        the task ends (the caller's bound, and its polling, watch over it meanwhile)."""
        from mcp.types import CallToolResult, GetTaskPayloadRequest, GetTaskPayloadRequestParams

        request = GetTaskPayloadRequest(params=GetTaskPayloadRequestParams(task_id=task_id))
        timeout = self.call_timeout if terminal else None
        send = self.session.send_request(request, CallToolResult, request_read_timeout_seconds=timeout)
        return await self._checked(await self._send(f"tasks/result for task {task_id}", send))

    async def _checked(self, result: CallToolResult) -> CallToolResult:
        """What `ClientSession.call_tool` checks: structured content against the outputSchema."""
        if not result.is_error:
            await self.session.validate_tool_result(self.name, result)
        return result

    async def _abandon(self, task_id: str) -> None:
        """Cancel the task on the server (`tasks/cancel`), shielded and bounded: the caller is
        being cancelled or timed out and must not wait long, but the server must be told."""
        if not self.can_cancel:
            logger.warning(
                "MCP task %s of tool %r was abandoned; the server does not offer tasks/cancel",
                task_id,
                self.name,
            )
            return
        from mcp.types import CancelTaskRequest, CancelTaskRequestParams, CancelTaskResult

        request = CancelTaskRequest(params=CancelTaskRequestParams(task_id=task_id))
        send = self.session.send_request(
            request, CancelTaskResult, request_read_timeout_seconds=CANCEL_TIMEOUT
        )
        sent = asyncio.ensure_future(send)
        sent.add_done_callback(_consume)  # it may end after we stopped waiting for it
        try:
            # Shielded: cancelled again while cancelling, we leave; the request still goes out.
            await asyncio.wait_for(asyncio.shield(sent), CANCEL_TIMEOUT + 1.0)
        except Exception as exc:  # already ended, unknown, or the server is gone: nothing to undo
            logger.info("MCP task %s of tool %r: tasks/cancel failed: %s", task_id, self.name, exc)
            return
        self._told(sent.result())

    def _told(self, task: Task) -> None:
        """Report a status once: polls that see nothing new are not events."""
        seen = (task.status, task.status_message)
        if seen != self._last_seen:
            self._last_seen = seen
            self.on_status(task)

    async def _send(self, what: str, send: Awaitable[_R]) -> _R:
        """One request of the task: the SDK's timeout becomes an `MCPTimeoutError` naming it."""
        from mcp import MCPError
        from mcp.types import REQUEST_TIMEOUT

        try:
            return await send
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                limit = self.call_timeout
                why = f"did not answer {what} within call_timeout={limit:g} s"
                raise MCPTimeoutError(self.server, f"MCP server {self.server!r} {why}") from None
            raise

    def _tool_error(self, detail: str) -> MCPToolError:
        return MCPToolError(self.server, self.name, f"MCP server {self.server!r} {detail}")


def _consume(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
