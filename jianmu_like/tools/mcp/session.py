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
import logging
import signal
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack, suppress
from typing import TYPE_CHECKING, Any, TypeVar

from ...redact import redact_text
from .config import MCPServerConfig
from .content import (
    MCPConnectError,
    MCPServerCrashedError,
    MCPServerError,
    MCPTimeoutError,
    MCPToolError,
)
from .process import StdioProcess

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import CallToolResult, Implementation, ListToolsResult
    from mcp.types import Tool as MCPTool

logger = logging.getLogger(__name__)

CLOSE_TIMEOUT = 10.0
"""Seconds `close()` waits for the owner task; the SDK's own stdio shutdown is bounded near
6.5 s (flush, stdin-close grace, SIGTERM, SIGKILL), so this only trips on a wedged transport."""

_T = TypeVar("_T")


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (inner or list(exc.exceptions))[0]
    return exc


def _connection_closed(exc: BaseException) -> bool:
    import anyio
    from mcp import MCPError
    from mcp.types import CONNECTION_CLOSED

    if isinstance(exc, MCPError):
        return exc.code == CONNECTION_CLOSED
    return isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | ConnectionError)


class MCPSession:
    """A single-use connection: `open()` once, send requests from any task, `close()` once."""

    def __init__(
        self, config: MCPServerConfig, *, on_tools_changed: Callable[[], None] | None = None
    ) -> None:
        self.config = config
        self.on_tools_changed = on_tools_changed
        self.server_info: Implementation | None = None
        self.failure: BaseException | None = None
        """Why the owner task ended on its own, if it did."""
        self._process = StdioProcess(config.name)
        self._session: ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lost = False

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
            message = self._start_failure(exc) + self._stderr_note()
            await asyncio.shield(self.close())
            raise MCPConnectError(config.name, message) from exc
        finally:
            if ready.done() and not ready.cancelled():
                ready.exception()  # retrieved: no "exception never retrieved" warning
            ready.cancel()

    def _start_failure(self, exc: BaseException) -> str:
        config, leaf = self.config, _leaf(exc)
        where = f"MCP server {config.name!r} ({config.describe()})"
        if _connection_closed(leaf):
            status = self.returncode
            exited = f" (exit status {status})" if status is not None else ""
            return f"{where} closed the connection before completing the MCP handshake{exited}"
        code = getattr(leaf, "code", None)
        if isinstance(code, int):  # an MCPError: it answered, but not with a handshake
            return f"{where} refused the MCP handshake: {leaf} (error {code})"
        verb = "could not be started" if config.transport == "stdio" else "could not be reached"
        return f"{where} {verb}: {type(leaf).__name__}: {leaf}"

    def _stderr_note(self) -> str:
        if self._process.pid is None:
            return ""  # never started: nothing could be written
        tail = self._process.stderr_tail()
        return f"; its stderr ends with:\n{tail}" if tail else "; it wrote nothing to stderr"

    async def _own(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        from mcp import ClientSession
        from mcp.types import Implementation

        try:
            async with AsyncExitStack() as stack:
                if self.config.transport == "stdio":
                    read, write = await self._process.open(self.config, stack)
                else:
                    read, write = await self._open_http(stack)
                session = ClientSession(
                    read,
                    write,
                    message_handler=self._on_message,
                    client_info=Implementation(name="jianmu_like", version="0.1.0"),
                )
                await stack.enter_async_context(session)
                result = await session.initialize()
                self.server_info = result.server_info
                self._session = session
                if not ready.done():
                    ready.set_result(None)
                await stop.wait()
        except Exception as exc:
            self.failure = exc
            if not ready.done():
                ready.set_exception(exc)
            elif not stop.is_set():
                logger.warning(
                    "MCP server %r: connection ended: %s", self.name, redact_text(repr(_leaf(exc)))
                )
        finally:
            self._session = None

    async def _open_http(self, stack: AsyncExitStack) -> Any:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        config = self.config
        # Reads stay open long enough for the slowest call and the server's SSE stream.
        timeout = httpx2.Timeout(config.connect_timeout, read=max(config.call_timeout, 300.0))
        client = await stack.enter_async_context(
            httpx2.AsyncClient(headers=dict(config.headers), timeout=timeout)
        )
        return await stack.enter_async_context(streamable_http_client(config.url or "", http_client=client))

    async def _on_message(self, message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed" and self.on_tools_changed:
            self.on_tools_changed()

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

    async def list_tools(self) -> list[MCPTool]:
        """Every tool the server offers (following pagination), within `connect_timeout`."""
        from mcp.types import PaginatedRequestParams

        tools: list[MCPTool] = []
        cursor: str | None = None
        for _ in range(100):
            params = PaginatedRequestParams(cursor=cursor) if cursor else None

            async def send(session: ClientSession, params: Any = params) -> ListToolsResult:
                return await session.list_tools(params=params)

            page = await self._request("tools/list", self.config.connect_timeout, send)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """Call the server's tool `name` (its own name, without prefix) within `call_timeout`."""
        return await self._request(
            f"tool {name!r}", self.config.call_timeout, lambda s: s.call_tool(name, arguments), tool=name
        )

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
            if _connection_closed(_leaf(exc)):
                self._lost = True
                await self._process.settle()
                raise MCPServerCrashedError(
                    self.name,
                    f"MCP server {self.name!r} closed the connection during {what}{self._exit_note()}",
                ) from exc
            if not isinstance(exc, MCPError):
                raise
            if exc.code != REQUEST_TIMEOUT:
                message = f"MCP server {self.name!r} rejected {what}: {exc.message} (error {exc.code})"
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
