"""`MCPToolProvider`: the tools of one MCP server as `Tool`s, behind the `ToolProvider` protocol.

It connects on `initialize()`, lists the server's tools once (again on `refresh()` or when the
server announces `tools/list_changed`), and wraps each as a `Tool` whose parameters are the
server's JSON schema and whose name is `prefix + name`, made safe for OpenAI. Each call goes
over the one live session; results are rendered to text (`content`).

A server that dies is restarted, once per failing call. When it died *during* a call, that
call is retried on the new session only if the tool is configured idempotent; otherwise the
model reads that the server crashed and was restarted, and decides itself whether to call
again (a non-idempotent call may already have taken effect).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from ..base import Tool
from .config import MCPServerConfig, parse_mcp_servers
from .content import MCPServerCrashedError, MCPServerError, render_mcp_result
from .session import MCPSession

if TYPE_CHECKING:
    from mcp.types import CallToolResult
    from mcp.types import Tool as MCPTool

logger = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def mcp_tool_name(prefix: str, name: str) -> str:
    """`prefix + name` made to fit OpenAI's `^[a-zA-Z0-9_-]{1,64}$` (other characters -> '_')."""
    return _UNSAFE.sub("_", prefix + name)[:64] or "_"


def _parameters(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The server's input schema, less `$schema`: some OpenAI-compatible servers reject it."""
    return {k: v for k, v in (schema or {}).items() if k != "$schema"}


class MCPToolProvider:
    """Tools of one MCP server (stdio or streamable HTTP) for a `ToolSet` or `create_react_node`.

    `MCPToolProvider(MCPServerConfig(...))`, `MCPToolProvider({...})` or keyword arguments
    (`MCPToolProvider(command="uvx", args=["mcp-server-time"], prefix="time_")`). Use it with
    `async with`, or let `Agent.aclose()` / `ToolSet.aclose()` close it.
    """

    def __init__(self, config: MCPServerConfig | Mapping[str, Any] | None = None, /, **options: Any) -> None:
        if config is not None and options:
            raise TypeError("pass either an MCPServerConfig (or mapping) or keyword options, not both")
        if config is None:
            config = MCPServerConfig(**options)
        elif not isinstance(config, MCPServerConfig):
            config = MCPServerConfig.model_validate(dict(config))
        self.config = config
        self.name = config.name
        self._session: MCPSession | None = None
        self._tools: list[Tool] | None = None
        self._stale = False
        self._closed = False
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None
        self.restarts = 0
        """How many times a dead server was started again."""

    # -- ToolProvider ----------------------------------------------------------------------

    async def initialize(self) -> None:
        """Start (or reach) the server and complete the handshake; `MCPConnectError` if not."""
        self._closed = False
        await self._live_session()

    async def get_tools(self, *, refresh: bool = False, **kwargs: Any) -> Sequence[Tool]:
        """The server's tools as `Tool`s: listed once, again after `refresh` or a change notice."""
        if self._tools is None or refresh or self._stale:
            self._stale = False
            listed = await self._with_restart("tools/list", lambda s: s.list_tools(), retry=True)
            self._tools = self._wrap(listed)
        return list(self._tools)

    async def refresh(self) -> Sequence[Tool]:
        """List the server's tools again (then `await toolset.refresh()` to use them)."""
        return await self.get_tools(refresh=True)

    async def close(self) -> None:
        """Disconnect; a stdio server's process (and its children) is gone on return. Idempotent."""
        self._closed = True
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def __aenter__(self) -> Self:
        await self.initialize()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- state -----------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """PID of the current stdio server process (None for HTTP or before the start)."""
        return self._session.pid if self._session is not None else None

    @property
    def connected(self) -> bool:
        return self._session is not None and self._session.alive

    def _get_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:
            self._lock, self._lock_loop = asyncio.Lock(), loop
        return self._lock

    def _tools_changed(self) -> None:
        self._stale = True

    async def _live_session(self, failed: MCPSession | None = None) -> MCPSession:
        """The connected session, (re)starting it when there is none or it died.

        With `failed`, replace that session unless another caller already did, so concurrent
        calls that saw the same crash restart the server once.
        """
        async with self._get_lock():
            if self._closed:
                raise MCPServerError(self.name, f"MCP server {self.name!r}: the provider is closed")
            current = self._session
            if current is not None and current is not failed and current.alive:
                return current
            if current is not None:
                self._session = None
                if current.other_loop:  # e.g. a second asyncio.run(): that loop cancelled it
                    logger.info(
                        "MCP server %r was connected from an event loop now gone; reconnecting", self.name
                    )
                else:
                    logger.warning(
                        "MCP server %r stopped answering (%r); starting it again", self.name, current
                    )
                    self.restarts += 1
                await current.close()
            session = MCPSession(self.config, on_tools_changed=self._tools_changed)
            await session.open()
            if self._closed:  # close() ran while we were connecting
                await session.close()
                raise MCPServerError(self.name, f"MCP server {self.name!r}: the provider is closed")
            self._session = session
            return session

    async def _with_restart(
        self, what: str, request: Callable[[MCPSession], Awaitable[Any]], *, retry: bool
    ) -> Any:
        session = await self._live_session()
        try:
            return await request(session)
        except MCPServerCrashedError as crash:
            if self._closed:
                raise
            retry = retry or not crash.sent
            try:
                session = await self._live_session(failed=session)
            except MCPServerError as exc:
                raise MCPServerCrashedError(self.name, f"{crash}; restarting it failed: {exc}") from exc
            if not retry:
                raise MCPServerCrashedError(
                    self.name,
                    f"{crash}. The server was restarted, but {what} was not retried because it is not "
                    "marked idempotent: it may or may not have taken effect",
                ) from crash
            try:
                return await request(session)
            except MCPServerCrashedError as again:
                raise MCPServerCrashedError(
                    self.name, f"{again}, again, when {what} was retried after a restart"
                ) from again

    # -- tools -----------------------------------------------------------------------------

    async def call(self, tool: str, arguments: Mapping[str, Any] | None = None) -> str:
        """Call the server's tool `tool` (its own name) and return the observation text."""
        result: CallToolResult = await self._with_restart(
            f"the call to {tool!r}",
            lambda s: s.call_tool(tool, dict(arguments or {})),
            retry=self.config.is_idempotent(tool),
        )
        return render_mcp_result(result, server=self.name, tool=tool)

    def _wrap(self, listed: Sequence[MCPTool]) -> list[Tool]:
        config = self.config
        # The executor's timeout is only a backstop around ours: a call, a restart and a retry.
        backstop = 2 * config.call_timeout + config.connect_timeout + 15.0
        tools: dict[str, Tool] = {}
        origin: dict[str, str] = {}
        for spec in listed:
            if not config.exposes(spec.name):
                continue
            name = mcp_tool_name(config.prefix, spec.name)
            if name in tools:
                logger.warning(
                    "MCP server %r: tools %r and %r both become %r; keeping the first",
                    *(self.name, origin[name], spec.name, name),
                )
                continue
            origin[name] = spec.name
            try:
                tools[name] = Tool(
                    name=name,
                    description=spec.description or spec.title or "",
                    parameters=_parameters(spec.input_schema),
                    fn=self._caller(spec.name),
                    parallel_safe=config.parallel_safe,
                    effect_tags=config.effect_tags_for(spec.name),
                    idempotent=config.is_idempotent(spec.name),
                    timeout=backstop,
                    max_output_chars=config.max_output_chars,
                )
            except ValueError as exc:
                logger.warning("MCP server %r: skipping tool %r: %s", self.name, spec.name, exc)
        return list(tools.values())

    def _caller(self, tool: str) -> Callable[..., Awaitable[str]]:
        async def call(**arguments: Any) -> str:
            return await self.call(tool, arguments)

        call.__name__ = mcp_tool_name("", tool)
        return call

    def __repr__(self) -> str:
        state = "closed" if self._closed else "connected" if self.connected else "not connected"
        return (
            f"MCPToolProvider(name={self.name!r}, transport={self.config.transport!r}, "
            f"target={self.config.describe()!r}, {state})"
        )


def mcp_servers_from_config(data: Any) -> list[MCPToolProvider]:
    """Providers for a `mcp_servers:` section (not connected: a ToolSet initialises them)."""
    return [MCPToolProvider(config) for config in parse_mcp_servers(data)]
