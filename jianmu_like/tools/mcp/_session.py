"""One live connection to one MCP server, owned by one asyncio task.

The SDK's transports and `ClientSession` are anyio context managers whose cancel scopes must
be entered and exited by the same task ("Attempted to exit cancel scope in a different task"
otherwise). An agent opens tools in one task and closes them in another (`Agent.aclose`, a
test fixture, the CLI), so an *owner task* enters the contexts, completes the handshake,
signals ready and parks until asked to stop; any task may send requests meanwhile, since
requests only use the session's memory streams. `close()` sets the stop event and waits, so
the contexts unwind in their own task, then makes sure no process of a stdio server is left
(see `process`).
"""

from __future__ import annotations

import asyncio
import signal
import warnings
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, contextmanager, suppress
from typing import TYPE_CHECKING, Any, TypeVar

from ..._base.redact import redact_text, redacting_logger
from ._auth import HTTPRefusals, MCPAuthError, build_oauth
from ._config import MCPServerConfig
from ._content import (
    MCPConnectError,
    MCPServerCrashedError,
    MCPServerError,
    MCPTimeoutError,
    MCPToolError,
)
from ._failures import connection_closed, leaf, sends_authorization, start_failure
from ._handlers import SessionHandlers, notify
from ._process import StdioProcess
from ._revision import Listener, answer_input_rounds, is_modern, negotiate
from ._tasks import (
    MCPTasksUnavailableError,
    Progress,
    StatusReport,
    TaskCall,
    TaskWatches,
    check_sdk,
    server_cancels_tasks,
    server_runs_tool_tasks,
)

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.client.session import ClientRequestContext
    from mcp.shared.dispatcher import Dispatcher
    from mcp.types import (
        CallToolResult,
        CreateMessageRequestParams,
        CreateMessageResult,
        ElicitRequestParams,
        ElicitResult,
        ErrorData,
        GetPromptResult,
        Implementation,
        ListRootsResult,
        LoggingMessageNotificationParams,
        Prompt,
        ReadResourceResult,
        Resource,
        ResourceTemplate,
        ServerCapabilities,
    )
    from mcp.types import Tool as MCPTool


logger = redacting_logger(__name__)  # they quote what servers and tools say
for _sdk_logger in (
    "mcp.client.stdio",
    "mcp.client.streamable_http",
    "mcp.client.session",
    "mcp.shared.session",
):
    redacting_logger(
        _sdk_logger
    )  # the SDK logs what it could not parse (a server's output), tracebacks included

CANCEL_GRACE = 10.0
"""Seconds past `max_call_duration` the backstop around a task allows for `tasks/cancel`."""

CLOSE_TIMEOUT = 10.0
"""Seconds `close()` waits for the owner task; the SDK's own stdio shutdown is bounded near
6.5 s (flush, stdin-close grace, SIGTERM, SIGKILL), so this only trips on a wedged transport."""

_T = TypeVar("_T")


class _CallClock:
    """The bound of one tool call: `call_timeout` of silence, `limit` (the loop's time) in all."""

    def __init__(self, loop: asyncio.AbstractEventLoop, silence: float, limit: float) -> None:
        self.loop, self.silence, self.limit = loop, silence, limit
        self.scope: asyncio.Timeout | None = None

    def restart(self) -> None:
        """A sign of life: another `silence` seconds, never past `limit`."""
        if self.scope is not None and not self.scope.expired():
            self.scope.reschedule(min(self.limit, self.loop.time() + self.silence))

    def hold(self) -> None:
        """The server waits for the client: only `limit` bounds the call meanwhile."""
        if self.scope is not None and not self.scope.expired():
            self.scope.reschedule(self.limit)


class MCPSession:
    """A single-use connection: `open()` once, send requests from any task, `close()` once."""

    def __init__(
        self,
        config: MCPServerConfig,
        *,
        on_tools_changed: Callable[[], None] | None = None,
        handlers: SessionHandlers | None = None,
    ) -> None:
        self.config = config
        self.handlers = handlers or SessionHandlers()
        if on_tools_changed is not None:
            self.handlers.tools_changed = on_tools_changed
        self.server_info: Implementation | None = None
        """What the server says it is (a 2026-07-28 server may not say)."""
        self.protocol_version: str | None = None
        """The revision agreed with the server (`_revision`), once connected."""
        self._listener: Listener | None = None
        """The `subscriptions/listen` stream of a 2026-07-28 session."""
        self.failure: BaseException | None = None
        """Why the owner task ended on its own, if it did."""
        self._process = StdioProcess(config.name)
        self._session: ClientSession | None = None
        self._dispatcher: Dispatcher[Any] | None = None
        """The session's dispatcher, which we build: task-augmented calls go through it
        (`_tasks`)."""
        self.tasks = TaskWatches()
        """Status notifications and progress of the calls running as MCP tasks."""
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lost = False
        self._clocks: set[_CallClock] = set()
        """The silence bounds of the tool calls in flight (`call_tool` with progress)."""
        self._waiting_on_us = 0
        """Server requests (sampling, elicitation) the client is answering now."""
        self.refusals = HTTPRefusals(config.url or "")
        """The HTTP server's last 401 / 403, for the error that follows it."""

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def pid(self) -> int | None:
        """PID of the stdio server process (also its process-group id), once started."""
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    @property
    def other_loop(self) -> bool:
        """Opened from an event loop other than the running one (usable from neither)."""
        task = self._task
        try:
            return task is not None and task.get_loop() is not asyncio.get_running_loop()
        except RuntimeError:
            return True

    @property
    def alive(self) -> bool:
        """Usable from the running event loop: handshake done, nothing seen dying since."""
        task = self._task
        if task is None or task.done() or self._session is None or self._lost:
            return False
        return self.returncode is None and not self.other_loop

    # -- lifecycle -------------------------------------------------------------------------

    async def open(self) -> None:
        """Start the owner task and wait for the handshake, at most `connect_timeout` seconds."""
        if self._task is not None:
            raise RuntimeError("an MCPSession is opened once; make a new one to reconnect")
        config = self.config
        try:
            check_sdk()
        except MCPTasksUnavailableError as exc:
            raise MCPConnectError(config.name, f"MCP server {config.name!r}: {exc}") from None
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(self._own(ready, self._stop), name=f"mcp-session:{config.name}")
        try:
            async with asyncio.timeout(config.connect_timeout):
                await asyncio.shield(ready)
        except TimeoutError:
            message = (
                f"MCP server {config.name!r} ({config.describe()}) did not complete the MCP handshake "
                f"(initialize) within connect_timeout={config.connect_timeout:g} s{self._stderr_note()}"
            )
            await asyncio.shield(self.close())
            raise MCPConnectError(config.name, message) from None
        except asyncio.CancelledError:
            await asyncio.shield(self.close())
            raise
        except Exception as exc:
            if self.config.transport == "stdio":
                await self._process.settle()  # its exit status, and all it wrote to stderr
            message = start_failure(self.config, exc, self.refusals, self.returncode) + self._stderr_note()
            await asyncio.shield(self.close())
            cause = leaf(exc)
            kind: type[MCPConnectError] = MCPConnectError
            if isinstance(cause, MCPConnectError):  # MCPLoginRequiredError, MCPAuthError
                kind = type(cause)
            elif self.refusals.status is not None:
                kind = MCPAuthError
            raise kind(config.name, message) from exc
        finally:
            if ready.done() and not ready.cancelled():
                ready.exception()  # retrieved: no "exception never retrieved" warning
            ready.cancel()

    def _stderr_note(self) -> str:
        if self._process.pid is None:
            return ""  # never started: nothing could be written
        tail = self._process.stderr_tail()
        return f"; its stderr ends with:\n{tail}" if tail else "; it wrote nothing to stderr"

    async def _own(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        from mcp import ClientSession
        from mcp.client.extension import NotificationBinding
        from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
        from mcp.types import Implementation, TaskStatusNotificationParams

        from ._tasks import STATUS_METHOD

        try:
            async with AsyncExitStack() as stack:
                if self.config.transport == "stdio":
                    read, write = await self._process.open(self.config, stack)
                else:
                    read, write = await self._open_http(stack)
                # What ClientSession would build itself; ours, so that `_tasks` can send the
                # task-augmented tools/call the session's own call_tool refuses.
                dispatcher: JSONRPCDispatcher[Any] = JSONRPCDispatcher(read, write)
                self._dispatcher = dispatcher
                status = NotificationBinding(
                    method=STATUS_METHOD,
                    params_type=TaskStatusNotificationParams,
                    handler=self.tasks.on_status,
                )
                session = ClientSession(
                    dispatcher=dispatcher,
                    notification_bindings=[status],
                    message_handler=self._on_message,
                    logging_callback=self._on_log,
                    list_roots_callback=self._list_roots if self.handlers.roots is not None else None,
                    sampling_callback=self._sample if self.handlers.sampling is not None else None,
                    elicitation_callback=self._elicit if self.handlers.elicitation is not None else None,
                    client_info=Implementation(name="jianmu_like", version="0.1.0"),
                    # 2026-07-28 sends log messages only to requests that ask (SEP-2577); earlier
                    # revisions send them at the server's level.
                    log_level="info",
                )
                await stack.enter_async_context(session)
                await negotiate(session, self.config.protocol)
                self.server_info, self.protocol_version = session.server_info, session.protocol_version
                logger.info("MCP server %r: protocol revision %s", self.name, self.protocol_version)
                if is_modern(self.protocol_version):
                    self._listener = Listener.for_handlers(self.name, session, self.handlers)
                self._session = session
                if not ready.done():
                    ready.set_result(None)
                try:
                    await stop.wait()
                finally:
                    if self._listener is not None:
                        await self._listener.stop()
        except Exception as exc:
            self.failure = exc
            if not ready.done():
                ready.set_exception(exc)
            elif not stop.is_set():
                logger.warning("MCP server %r: connection ended: %s", self.name, redact_text(repr(leaf(exc))))
        finally:
            self._session = None

    async def _open_http(self, stack: AsyncExitStack) -> Any:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        config = self.config
        # Reads stay open long enough for the slowest call and the server's SSE stream.
        timeout = httpx2.Timeout(config.connect_timeout, read=max(config.call_timeout, 300.0))
        auth = None
        if config.auth is not None:
            auth = build_oauth(
                config.name,
                config.url or "",
                config.describe(),
                config.auth,
                authorize=self.handlers.authorize,
            )
        client = await stack.enter_async_context(
            httpx2.AsyncClient(
                headers=dict(config.headers),
                timeout=timeout,
                auth=auth,
                event_hooks={"response": [self.refusals]},
            )
        )
        return await stack.enter_async_context(streamable_http_client(config.url or "", http_client=client))

    async def _on_message(self, message: Any) -> None:
        method = getattr(message, "method", None)
        if method == "notifications/progress":
            # The progress of a call running as a task (its tools/call was answered long ago).
            params = message.params
            report = self.tasks.progress_report(params.progress_token)
            if report is not None:
                await report(params.progress, params.total, params.message)
            return
        notify(self.handlers, message)

    async def _on_log(self, params: LoggingMessageNotificationParams) -> None:
        if self.handlers.log is not None:
            self.handlers.log(params)

    async def _list_roots(self, context: ClientRequestContext) -> ListRootsResult:
        from mcp.types import ListRootsResult, Root

        roots = self.handlers.roots() if self.handlers.roots is not None else []
        return ListRootsResult(roots=[Root(uri=uri, name=name) for uri, name in roots])

    async def _sample(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult | ErrorData:
        assert self.handlers.sampling is not None  # the callback is only registered with it
        with self._server_waits():
            return await self.handlers.sampling(params)

    async def _elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        assert self.handlers.elicitation is not None  # the callback is only registered with it
        with self._server_waits():
            return await self.handlers.elicitation(params)

    @contextmanager
    def _server_waits(self) -> Iterator[None]:
        """While the server waits for our answer (a person, the agent's model), its silence is
        ours: the calls in flight are bounded only by `max_call_duration`, and get a fresh
        `call_timeout` once the answer is sent."""
        self._waiting_on_us += 1
        for clock in list(self._clocks):
            clock.hold()
        try:
            yield
        finally:
            self._waiting_on_us -= 1
            if self._waiting_on_us == 0:
                for clock in list(self._clocks):
                    clock.restart()

    @property
    def capabilities(self) -> ServerCapabilities | None:
        """What the server declared in its handshake (None before it)."""
        session = self._session
        return session.server_capabilities if session is not None else None

    @property
    def runs_tool_tasks(self) -> bool:
        """The server runs tool calls as tasks (it said so, on a version with core tasks)."""
        session = self._session
        if session is None:
            return False
        return server_runs_tool_tasks(session.server_capabilities, session.protocol_version)

    async def close(self) -> None:
        """Stop the owner task (idempotent) and make sure no server process is left."""
        task, stop = self._task, self._stop
        if task is None or stop is None:
            return
        if task.get_loop() is asyncio.get_running_loop():
            stop.set()
            if self._session is None:
                task.cancel()  # still connecting: it is not waiting for `stop`
            if not task.done():
                await asyncio.wait({task}, timeout=CLOSE_TIMEOUT)
            if not task.done():
                logger.warning("MCP server %r: closing timed out; cancelling its connection", self.name)
                task.cancel()
                await asyncio.wait({task}, timeout=CLOSE_TIMEOUT)
            if task.done() and not task.cancelled():
                task.exception()
        await self._process.kill_leftovers()
        self._process.release()

    # -- requests --------------------------------------------------------------------------

    async def _paginate(self, what: str, method: str, field: str) -> list[Any]:
        """Every item of a paginated list request (at most 100 pages), within `connect_timeout`."""
        from mcp.types import PaginatedRequestParams

        items: list[Any] = []
        cursor: str | None = None
        for _ in range(100):
            params = PaginatedRequestParams(cursor=cursor) if cursor else None

            async def send(session: ClientSession, params: Any = params) -> Any:
                return await getattr(session, method)(params=params)

            page = await self._request(what, self.config.connect_timeout, send)
            items.extend(getattr(page, field))
            cursor = page.next_cursor
            if not cursor:
                break
        return items

    async def list_tools(self) -> list[MCPTool]:
        """Every tool the server offers (following pagination), within `connect_timeout`."""
        return await self._paginate("tools/list", "list_tools", "tools")

    async def list_resources(self) -> list[Resource]:
        return await self._paginate("resources/list", "list_resources", "resources")

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        return await self._paginate(
            "resources/templates/list", "list_resource_templates", "resource_templates"
        )

    async def read_resource(self, uri: str) -> ReadResourceResult:
        async def send(session: ClientSession) -> ReadResourceResult:
            async def again(answers: Any, state: str | None) -> Any:
                return await session.read_resource(
                    uri, input_responses=answers, request_state=state, allow_input_required=True
                )

            return await answer_input_rounds(session, await again(None, None), again)

        return await self._request(f"resources/read of {uri!r}", self.config.call_timeout, send)

    async def subscribe(self, uri: str, *, on: bool = True) -> None:
        """`resources/subscribe` (or `unsubscribe`) of `uri`: the server then sends
        `resources/updated` when it changes. Removed from protocol 2026-07-28 (the SDK warns), but
        servers of earlier revisions (server-everything) still offer it."""
        from mcp.shared.exceptions import MCPDeprecationWarning

        async def send(session: ClientSession) -> Any:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                return await (session.subscribe_resource(uri) if on else session.unsubscribe_resource(uri))

        what = f"resources/{'subscribe' if on else 'unsubscribe'} of {uri!r}"
        listener = self._listener
        if listener is not None:  # 2026-07-28: the listen stream's filter names the resources
            uris = [u for u in listener.uris if u != uri] + ([uri] if on else [])
            try:
                await listener.set_uris(uris, timeout=self.config.connect_timeout)
            except TimeoutError:
                raise MCPTimeoutError(
                    self.name, f"MCP server {self.name!r} did not acknowledge subscriptions/listen for {what}"
                ) from None
            honored = getattr(listener.honored, "resource_subscriptions", None) or []
            if on and uri not in honored:
                raise MCPServerError(
                    self.name,
                    f"MCP server {self.name!r} did not take {what} on its subscriptions/listen stream",
                )
            return
        await self._request(what, self.config.connect_timeout, send)

    async def list_prompts(self) -> list[Prompt]:
        return await self._paginate("prompts/list", "list_prompts", "prompts")

    async def get_prompt(self, name: str, arguments: dict[str, str] | None) -> GetPromptResult:
        async def send(session: ClientSession) -> GetPromptResult:
            async def again(answers: Any, state: str | None) -> Any:
                return await session.get_prompt(
                    name, arguments, input_responses=answers, request_state=state, allow_input_required=True
                )

            return await answer_input_rounds(session, await again(None, None), again)

        return await self._request(f"prompt {name!r}", self.config.connect_timeout, send)

    async def roots_changed(self) -> None:
        """Tell the server the client's roots changed (`notifications/roots/list_changed`)."""
        session = self._session
        if is_modern(self.protocol_version):
            return  # 2026-07-28 asks for the roots with each request that needs them
        if session is not None and self.alive:
            # Roots are deprecated from protocol 2026-07-28 (SEP-2577), but servers of earlier
            # revisions (server-everything, the filesystem server) still ask for them.
            from mcp.shared.exceptions import MCPDeprecationWarning

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await session.send_roots_list_changed()

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        report: Progress | None = None,
        task: StatusReport | None = None,
    ) -> CallToolResult:
        """Call the server's tool `name` (its own name, without prefix).

        Without progress the call has `call_timeout` seconds. A server that reports progress
        proves it is working: each notification gives the call another `call_timeout` seconds,
        up to `max_call_duration` in all. Abandoning the call (timeout, a halted run) sends the
        server `notifications/cancelled` (the SDK does, for a request its caller cancels).

        With `task` (told each status), the call runs as an MCP task (`_tasks`): each of its
        requests has `call_timeout` seconds, the task `max_call_duration` in all, and a task
        abandoned before its end is cancelled on the server (`tasks/cancel`).
        """
        config = self.config
        if task is not None:
            on_status = task
            return await self._request(
                f"tool {name!r}",
                config.max_call_duration + CANCEL_GRACE,
                lambda s: self._call_task(s, name, arguments, report, on_status),
                tool=name,
            )
        if report is None:
            return await self._request(
                f"tool {name!r}",
                config.call_timeout,
                lambda s: self._call(s, name, arguments, None),
                tool=name,
            )
        loop = asyncio.get_running_loop()
        clock = _CallClock(loop, config.call_timeout, loop.time() + config.max_call_duration)

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if not self._waiting_on_us:
                clock.restart()
            await report(progress, total, message)

        async def send(session: ClientSession) -> CallToolResult:
            try:
                async with asyncio.timeout(config.call_timeout) as clock.scope:
                    self._clocks.add(clock)
                    if self._waiting_on_us:
                        clock.hold()
                    return await self._call(session, name, arguments, on_progress)
            except TimeoutError:
                if loop.time() >= clock.limit:
                    limit_s = config.max_call_duration
                    why = f"did not finish tool {name!r} within max_call_duration={limit_s:g} s"
                else:
                    why = (
                        f"did not answer tool {name!r} or report its progress for "
                        f"call_timeout={config.call_timeout:g} s"
                    )
                raise MCPTimeoutError(self.name, f"MCP server {self.name!r} {why}") from None

            finally:
                self._clocks.discard(clock)

        # The outer bound is only a backstop: `send` ends the call first, saying why.
        return await self._request(f"tool {name!r}", config.max_call_duration + 5.0, send, tool=name)

    async def _call(
        self, session: ClientSession, name: str, arguments: dict[str, Any], on_progress: Any
    ) -> CallToolResult:
        """`tools/call`, answering the server's `input_required` rounds (2026-07-28)."""
        from mcp.types import CallToolResult

        async def again(answers: Any, state: str | None) -> Any:
            result = await session.call_tool(
                name,
                arguments,
                progress_callback=on_progress,
                input_responses=answers,
                request_state=state,
                allow_input_required=True,
            )
            return result

        result = await answer_input_rounds(session, await again(None, None), again)
        if not isinstance(result, CallToolResult):  # an extension's result: none is enabled
            raise MCPToolError(
                self.name, name, f"MCP server {self.name!r}: tool {name!r} sent an unknown result"
            )
        return result

    async def _call_task(
        self,
        session: ClientSession,
        name: str,
        arguments: dict[str, Any],
        report: Progress | None,
        on_status: StatusReport,
    ) -> CallToolResult:
        config = self.config
        assert self._dispatcher is not None  # set before the session is
        call = TaskCall(
            session=session,
            dispatcher=self._dispatcher,
            watches=self.tasks,
            protocol_version=session.protocol_version or "",
            server=self.name,
            name=name,
            arguments=arguments,
            call_timeout=config.call_timeout,
            # Kept while we may still ask for it; the server may choose otherwise.
            ttl_ms=int((config.max_call_duration + config.call_timeout) * 1000),
            can_cancel=server_cancels_tasks(session.server_capabilities),
            on_status=on_status,
            report=report,
        )
        try:
            async with asyncio.timeout(config.max_call_duration):
                return await call.run()
        except TimeoutError:
            limit = config.max_call_duration
            why = f"did not finish the task of tool {name!r} within max_call_duration={limit:g} s"
            raise MCPTimeoutError(self.name, f"MCP server {self.name!r} {why}") from None

    async def _request(
        self,
        what: str,
        timeout: float,
        send: Callable[[ClientSession], Awaitable[_T]],
        *,
        tool: str | None = None,
    ) -> _T:
        """Send with a timeout; failures become `MCPServerError`s naming the server and why."""
        from mcp import MCPError
        from mcp.types import REQUEST_TIMEOUT

        session = self._session
        if session is None or not self.alive:
            message = f"MCP server {self.name!r} is not connected{self._exit_note()}"
            raise MCPServerCrashedError(self.name, message, sent=False)
        try:
            async with asyncio.timeout(timeout):
                return await send(session)
        except TimeoutError:
            pass
        except Exception as exc:
            if connection_closed(leaf(exc)):
                self._lost = True
                await self._process.settle()
                raise MCPServerCrashedError(
                    self.name,
                    f"MCP server {self.name!r} closed the connection during {what}{self._exit_note()}",
                ) from exc
            if tool is not None and isinstance(exc, RuntimeError) and not isinstance(exc, MCPError):
                # The SDK refuses a result itself: structured content that does not match the
                # tool's outputSchema (or is missing). The model reads why; the run goes on.
                message = f"MCP server {self.name!r}: the result of tool {tool!r} was refused: {exc}"
                raise MCPToolError(self.name, tool, message) from exc
            if not isinstance(exc, MCPError):
                raise
            if exc.code != REQUEST_TIMEOUT:
                message = f"MCP server {self.name!r} rejected {what}: {exc.message} (error {exc.code})"
                refused = self.refusals.explain(
                    self.name,
                    self.config.describe(),
                    self.config.auth,
                    header=sends_authorization(self.config),
                )
                if refused is not None and self.config.transport == "http":
                    message = f"{refused} (during {what})"
                if tool is not None:
                    raise MCPToolError(self.name, tool, message) from exc
                raise MCPServerError(self.name, message) from exc
        raise MCPTimeoutError(
            self.name, f"MCP server {self.name!r} did not answer {what} within {timeout:g} s"
        )

    def _exit_note(self) -> str:
        status = self.returncode
        if status is None:
            return ""
        if status < 0:
            with suppress(ValueError):
                return f" (the server process was killed by {signal.Signals(-status).name})"
        return f" (the server process exited with status {status})"

    def __repr__(self) -> str:
        if self._task is None:
            state = "new"
        elif self._stop is not None and self._stop.is_set():
            state = "closed"
        else:
            state = "alive" if self.alive else f"dead{self._exit_note()}"
        return f"MCPSession(name={self.name!r}, transport={self.config.transport!r}, pid={self.pid}, {state})"
