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

from ..._base.redact import redacting_logger
from ...telemetry import events as ev
from .._base import Tool
from .._call_context import current_tool_call, tool_event_emitter
from ._auth import Authorize
from ._bounds import Flight, LogGate, refusal
from ._config import MCPServerConfig, parse_mcp_servers
from ._content import MCPServerCrashedError, MCPServerError, render_mcp_result
from ._elicitation import Action, ElicitationBox, ElicitationRequest
from ._handlers import SessionHandlers
from ._prompts import prompt_messages
from ._resources import ResourceIndex, read_resource_tool, render_read_result
from ._revision import is_modern
from ._sampling import SamplingPolicy, answer_sampling
from ._session import MCPSession
from ._tasks import call_as_task, task_support

if TYPE_CHECKING:
    from mcp.types import (
        CallToolResult,
        CreateMessageRequestParams,
        CreateMessageResult,
        ElicitRequestParams,
        ElicitResult,
        ErrorData,
        GetPromptResult,
        LoggingMessageNotificationParams,
        Prompt,
        ReadResourceResult,
        Resource,
        ResourceTemplate,
        Task,
    )
    from mcp.types import Tool as MCPTool

    from ...models._client import ModelClient
    from ...models._messages import Message

logger = redacting_logger(__name__)  # they quote what servers and tools say

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


LOG_KEEP = 200
"""Log notifications a provider keeps (`log_records`)."""

_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


def mcp_tool_name(prefix: str, name: str) -> str:
    """`prefix + name` made to fit OpenAI's `^[a-zA-Z0-9_-]{1,64}$` (other characters -> '_')."""
    return _UNSAFE.sub("_", prefix + name)[:64] or "_"


def _parameters(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The server's input schema as it sent it: JSON Schema 2020-12 (`$schema`, `$defs`, `$ref`,
    `prefixItems`, `const`, ...) reaches the model and the argument validator unchanged. The
    model servers the tests reach (llama.cpp's, tests/local/test_real_server.py; the OpenAI API
    takes it too) accept it; a provider that refused a keyword would drop it for itself only."""
    return dict(schema or {})


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
        self._task_tools: set[str] = set()
        """The server's tools (own names) whose calls run as MCP tasks (see `config.tasks`)."""
        self._stale = False
        self._closed = False
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None
        self.restarts = 0
        """How many times a dead server was started again."""
        self._roots = config.root_uris()
        self._resources: ResourceIndex | None = None
        self._subscriptions: list[str] = list(dict.fromkeys(config.subscribe))
        """Resource URIs subscribed to (again on every new session, after a restart too)."""
        self.updated_resources: set[str] = set()
        self.prompts_version = 0
        """Counts the server's `prompts/list_changed`: what was read at an older one may be stale."""
        """Subscribed resources the server said changed, not read since (`read_resource`)."""
        self._in_flight: list[Flight] = []
        """The tool calls of this server running now: their context, event emitter and the
        bounds of their notifications (`_bounds`)."""
        self._idle_logs = LogGate(config.max_log_events)
        """The cap on log lines between calls (reset when a call starts)."""
        self.elicitations = ElicitationBox(
            config.name, config.elicitation_timeout, max_open=config.max_open_elicitations
        )
        """The server's open questions to the user (`elicitation: ask`): `pending()`, `respond()`,
        or a `handler` answering them in code."""
        self.sampling_client: ModelClient | None = None
        """Answers the server's sampling requests when its config allows them; the ReAct preset
        attaches the agent's own model client (`use_model_client`)."""
        self.sampling_policy: SamplingPolicy | None = None
        """Decides each sampling request instead of the config's `allow` / `ask` ("allow",
        "deny", "ask" a person, or a `SamplingDecision` with the reason the server reads)."""
        self.authorize: Authorize | None = None
        """Plays the person's part of an OAuth login for an `auth:` server (`jianmu-like mcp
        login` opens a browser); None in a run: a server that needs a login fails, saying how."""
        self.log_records: list[LoggingMessageNotificationParams] = []
        """The server's most recent log notifications (at most `LOG_KEEP`), oldest first."""

    # -- ToolProvider ----------------------------------------------------------------------

    async def initialize(self) -> None:
        """Start (or reach) the server and complete the handshake; `MCPConnectError` if not."""
        self._closed = False
        await self._live_session()

    async def get_tools(self, *, refresh: bool = False, **kwargs: Any) -> Sequence[Tool]:
        """The server's tools as `Tool`s: listed once, again after `refresh` or a change notice;
        plus a `read_resource` tool when the server has resources (and `resources` is on)."""
        if self._tools is None or refresh or self._stale:
            self._stale = False
            listed = await self._with_restart("tools/list", lambda s: s.list_tools(), retry=True)
            tools = self._wrap(listed)
            reader = await self._resource_tool(refresh=refresh)
            if reader is not None and all(t.name != reader.name for t in tools):
                tools.append(reader)
            self._tools = tools
        return list(self._tools)

    # -- resources -------------------------------------------------------------------------

    async def list_resources(self) -> list[Resource]:
        """The server's resources (`resources/list`, every page); [] when it has none."""
        if not await self._declares("resources"):
            return []
        return list(await self._with_restart("resources/list", lambda s: s.list_resources(), retry=True))

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        """The server's resource templates (`resources/templates/list`); [] when it has none."""
        if not await self._declares("resources"):
            return []
        return list(
            await self._with_restart(
                "resources/templates/list", lambda s: s.list_resource_templates(), retry=True
            )
        )

    async def read_resource(self, uri: str) -> ReadResourceResult:
        """Read one resource (`resources/read`): its contents, text or base64 blobs, whole."""
        result: ReadResourceResult = await self._with_restart(
            f"resources/read of {uri!r}", lambda s: s.read_resource(uri), retry=True
        )
        if uri in self.updated_resources:  # read since its update: the description stops naming it
            self.updated_resources.discard(uri)
            self._resources_changed()
        return result

    async def subscribe_resource(self, uri: str) -> None:
        """Subscribe to `uri` (`resources/subscribe`): when the server says it changed, it is in
        `updated_resources` and the `read_resource` tool's description names it until it is read.
        Kept across restarts; `MCPServerError` if the server offers no subscriptions."""
        session = await self._live_session()
        if not _subscribable(session):
            raise MCPServerError(self.name, f"MCP server {self.name!r} does not offer resource subscriptions")
        await self._with_restart(f"resources/subscribe of {uri!r}", lambda s: s.subscribe(uri), retry=True)
        if uri not in self._subscriptions:
            self._subscriptions.append(uri)

    async def unsubscribe_resource(self, uri: str) -> None:
        """Stop the subscription to `uri` (`resources/unsubscribe`)."""
        if uri in self._subscriptions:
            self._subscriptions.remove(uri)
            await self._with_restart(
                f"resources/unsubscribe of {uri!r}", lambda s: s.subscribe(uri, on=False), retry=True
            )
        self.updated_resources.discard(uri)

    @property
    def subscriptions(self) -> list[str]:
        """The resource URIs subscribed to, in order."""
        return list(self._subscriptions)

    def _resource_updated(self, uri: str) -> None:
        if uri not in self._subscriptions:  # only what the client asked for (see `_bounds`)
            logger.debug("MCP server %r: resources/updated of %r, not subscribed: ignored", self.name, uri)
            return
        self.updated_resources.add(uri)
        self._resources_changed()

    async def read_resource_text(self, uri: str) -> str:
        """A resource as the model reads it: text as is, binary data and documents as
        artifacts (attached to the running tool call) with a placeholder."""
        return render_read_result(await self.read_resource(uri), server=self.name, uri=uri)

    async def _resource_tool(self, *, refresh: bool) -> Tool | None:
        if not self.config.resources or not await self._declares("resources"):
            return None
        if self._resources is None or refresh or self._resources.stale:
            resources = await self.list_resources()
            templates = await self.list_resource_templates()
            self._resources = ResourceIndex(resources, templates)
        if not self._resources.resources and not self._resources.templates:
            return None
        return read_resource_tool(self, self._resources, sorted(self.updated_resources))

    def _resources_changed(self) -> None:
        if self._resources is not None:
            self._resources.stale = True
        self._stale = True  # the read_resource tool's description lists them

    # -- prompts ---------------------------------------------------------------------------

    def _prompts_changed(self) -> None:
        """`prompts/list_changed`: an agent's prompt read from this server is read again before
        its next model call (`prompts_version`, and the tools re-listed so its check runs)."""
        self.prompts_version += 1
        self._stale = True

    async def list_prompts(self) -> list[Prompt]:
        """The server's prompt templates (`prompts/list`); [] when it has none."""
        if not await self._declares("prompts"):
            return []
        return list(await self._with_restart("prompts/list", lambda s: s.list_prompts(), retry=True))

    async def get_prompt(self, name: str, arguments: Mapping[str, Any] | None = None) -> list[Message]:
        """The prompt `name` filled with `arguments` (`prompts/get`), as messages a tree can use
        (`system_prompt`, a first message); its text content only (images become placeholders)."""
        return prompt_messages(await self.read_prompt(name, arguments), server=self.name, prompt=name)

    async def read_prompt(self, name: str, arguments: Mapping[str, Any] | None = None) -> GetPromptResult:
        """The prompt `name` as the server sends it (`prompts/get`): messages with content blocks."""
        args = {key: str(value) for key, value in (arguments or {}).items()}
        result: GetPromptResult = await self._with_restart(
            f"prompt {name!r}", lambda s: s.get_prompt(name, args or None), retry=True
        )
        return result

    # -- roots -----------------------------------------------------------------------------

    @property
    def roots(self) -> list[tuple[str, str | None]]:
        """The `(file:// URI, name)` roots offered to the server when it asks (`roots/list`)."""
        return list(self._roots)

    async def set_roots(self, roots: Sequence[str]) -> None:
        """Offer other roots (paths or URIs) and tell a connected server they changed
        (`notifications/roots/list_changed`): it asks again with `roots/list`."""
        self._roots = self.config.model_copy(update={"roots": list(roots)}).root_uris()
        session = self._session
        if session is not None and session.alive:
            await session.roots_changed()

    # -- notifications ---------------------------------------------------------------------

    def _on_log(self, params: LoggingMessageNotificationParams) -> None:
        """A server log notification: kept (`log_records`), and an `mcp.log` event of each tool
        call of this server running now (servers log while they work on a call) and a log line,
        up to `max_log_events` per call (between calls, until the next starts; see `_bounds`)."""
        self.log_records.append(params)
        del self.log_records[:-LOG_KEEP]
        flights = list(self._in_flight)
        kept = any([flight.log(params) for flight in flights]) if flights else self._idle_logs.admit()
        if kept:
            level = _LOG_LEVELS.get(str(params.level), logging.INFO)
            logger.log(level, "MCP server %r (%s): %s", self.name, params.logger or "-", params.data)

    def use_model_client(self, client: ModelClient) -> None:
        """Answer the server's sampling requests with `client` (unless one is set already)."""
        if self.sampling_client is None:
            self.sampling_client = client

    async def _on_sampling(self, params: CreateMessageRequestParams) -> CreateMessageResult | ErrorData:
        """A server's `sampling/createMessage`, counted against the call it arrived during (the
        newest of this server's calls in flight); refused when none is running (see `_bounds`)."""
        if not self._in_flight:
            reason = (
                f"MCP server {self.name!r} asked for sampling while none of its tool calls was "
                "running: refused (nothing would count its tokens)"
            )
            logger.warning("%s", reason)
            return refusal(reason)
        flight = self._in_flight[-1]
        try:
            return await answer_sampling(
                params,
                config=self.config,
                client=self.sampling_client,
                call=flight.call,
                emit=flight.emit,
                policy=self.sampling_policy,
                box=self.elicitations,
            )
        except Exception as exc:  # a bug of ours: logged, and the server reads more than the
            # SDK's bare "Invalid request parameters"
            logger.exception("MCP server %r: answering its sampling request failed", self.name)
            return refusal(f"the client failed to answer the sampling request: {type(exc).__name__}")

    def pending_elicitations(self) -> list[ElicitationRequest]:
        """The server's questions waiting for the user's answer, oldest first."""
        return self.elicitations.pending()

    def respond(self, request_id: str, action: Action, content: Mapping[str, Any] | None = None) -> None:
        """Answer a pending elicitation: `accept` with content matching its schema, `decline`,
        or `cancel`; `ElicitationError` for an unknown id or content the schema refuses."""
        self.elicitations.respond(request_id, action, content)

    async def _on_elicitation(self, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        emit = self._in_flight[-1].emit if self._in_flight else None
        return await self.elicitations.ask(params, emit)

    def _handlers(self) -> SessionHandlers:
        return SessionHandlers(
            tools_changed=self._tools_changed,
            resources_changed=self._resources_changed,
            resource_updated=self._resource_updated,
            prompts_changed=self._prompts_changed,
            log=self._on_log,
            roots=(lambda: self._roots) if self.config.roots or self._roots else None,
            sampling=self._on_sampling if self.config.sampling != "deny" else None,
            elicitation=self._on_elicitation if self.config.elicitation == "ask" else None,
            authorize=self.authorize,
        )

    async def _declares(self, capability: str) -> bool:
        """Whether the server declared `capability` ("resources", "prompts", ...) in its handshake."""
        session = await self._live_session()
        caps = session.capabilities
        return caps is not None and getattr(caps, capability, None) is not None

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
    def stale(self) -> bool:
        """The server changed its tools or resources since they were listed (`list_changed`,
        `resources/updated`): the next `get_tools` lists them again (see `ToolSet.stale`)."""
        return self._stale

    @property
    def protocol_version(self) -> str | None:
        """The MCP revision agreed with the server (`protocol:`), once connected."""
        return self._session.protocol_version if self._session is not None else None

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
            session = MCPSession(self.config, handlers=self._handlers())
            await session.open()
            if self._closed:  # close() ran while we were connecting
                await session.close()
                raise MCPServerError(self.name, f"MCP server {self.name!r}: the provider is closed")
            self._session = session
            await self._resubscribe(session)
            return session

    async def _resubscribe(self, session: MCPSession) -> None:
        """The subscriptions on a new session (the first, or after a restart): a server that
        offers none, or refuses one, is logged, not fatal (its tools still work)."""
        if not self._subscriptions:
            return
        if not _subscribable(session):
            logger.warning(
                "MCP server %r does not offer resource subscriptions; not subscribed to %s",
                *(self.name, ", ".join(self._subscriptions)),
            )
            return
        for uri in self._subscriptions:
            try:
                await session.subscribe(uri)
            except MCPServerError as exc:
                logger.warning("MCP server %r: subscribing to %r failed: %s", self.name, uri, exc)

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
        """Call the server's tool `tool` (its own name) and return the observation text.

        The call carries a progress token: the server's progress reports become `tool.progress`
        events of the running call and keep the call alive (`call_timeout` is then a bound on
        silence, `max_call_duration` on the whole call). A tool that runs as an MCP task (see
        `MCPServerConfig.tasks`) reports each status as an `mcp.task` event; the tool list is read
        first if it never was, since it says which tools those are."""
        if self._tools is None:
            await self.get_tools()

        emit = tool_event_emitter()  # progress arrives in the session's reader task
        config = self.config
        flight = Flight(current_tool_call(), emit, self.name, config.max_log_events, config.progress_interval)

        async def progress(done: float, total: float | None, message: str | None) -> None:
            flight.progress(done, total, message)  # coalesced (`_bounds`)

        def task_status(task: Task) -> None:
            logger.info("MCP server %r: task %s of tool %r: %s", self.name, task.task_id, tool, task.status)
            if emit is not None:
                emit(
                    ev.MCPTask,
                    server=self.name,
                    task_id=task.task_id,
                    status=task.status,
                    message=task.status_message,
                    poll_interval_ms=task.poll_interval,
                )

        as_task = task_status if tool in self._task_tools else None
        self._in_flight.append(flight)
        self._idle_logs = LogGate(config.max_log_events)
        try:
            with self.elicitations.calling():  # its server's questions may be this run's
                result: CallToolResult = await self._with_restart(
                    f"the call to {tool!r}",
                    lambda s: s.call_tool(tool, dict(arguments or {}), report=progress, task=as_task),
                    retry=self.config.is_idempotent(tool),
                )
        finally:
            self._in_flight.remove(flight)
            flight.close()
        return render_mcp_result(result, server=self.name, tool=tool)

    def _wrap(self, listed: Sequence[MCPTool]) -> list[Tool]:
        config = self.config
        # The executor's timeout is only a backstop around ours: a call, a restart and a retry.
        backstop = 2 * config.max_call_duration + config.connect_timeout + 15.0
        tools: dict[str, Tool] = {}
        origin: dict[str, str] = {}
        session = self._session
        server_runs_tasks = session is not None and session.runs_tool_tasks
        task_tools: set[str] = set()
        for spec in listed:
            if not config.exposes(spec.name):
                continue
            as_task = call_as_task(config.tasks, task_support(spec), server_runs_tasks)
            if as_task is None:
                # Offered, it would fail every call ("requires task augmentation"): say so once.
                why = "tasks: never" if config.tasks == "never" else "the server does not offer tool tasks"
                if config.tasks != "never" and session is not None and is_modern(session.protocol_version):
                    why = (  # a revision removed them: say how to reach them, never silently
                        f"at protocol {session.protocol_version} tasks are an extension this client does "
                        "not speak (`protocol: legacy` reaches a server's 2025-11-25 tasks)"
                    )
                logger.warning(
                    "MCP server %r: tool %r requires task-augmented execution (MCP tasks) and %s; "
                    "it is not offered to the model",
                    *(self.name, spec.name, why),
                )
                continue
            if as_task:
                task_tools.add(spec.name)
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
        self._task_tools = task_tools
        return list(tools.values())

    def _caller(self, tool: str) -> Callable[..., Awaitable[str]]:
        async def call(**arguments: Any) -> str:
            return await self.call(tool, arguments)

        call.__name__ = mcp_tool_name("", tool)
        return call

    def __repr__(self) -> str:
        state = "closed" if self._closed else "connected" if self.connected else "not connected"
        if self.connected and self.protocol_version is not None:
            state += f", protocol={self.protocol_version}"
        return (
            f"MCPToolProvider(name={self.name!r}, transport={self.config.transport!r}, "
            f"target={self.config.describe()!r}, {state})"
        )


def _subscribable(session: MCPSession) -> bool:
    """Whether the server declared `resources.subscribe` in its handshake."""
    resources = getattr(session.capabilities, "resources", None)
    return bool(getattr(resources, "subscribe", False))


def mcp_servers_from_config(data: Any) -> list[MCPToolProvider]:
    """Providers for a `mcp_servers:` section (not connected: a ToolSet initialises them)."""
    return [MCPToolProvider(config) for config in parse_mcp_servers(data)]
