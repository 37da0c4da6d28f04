"""`jianmu-like mcp serve AGENT_FILE`: an agent offered to any MCP client as one tool.

Desktop assistants and IDEs speak MCP; serving the agent as an MCP server lets them call it like
any other tool. It is the same server the HTTP API is, seen through another protocol: every call
is a run of the `RunRegistry` (one way runs happen: its event log, its approvals, its
cancellation), and the run's channels become MCP messages:

- the agent's iterations (a model reply starting, a tool call starting or ending) are
  `notifications/progress`, when the caller sent a `progressToken` (the SDK only sends them then);
- an approval the run waits for is an elicitation to the calling client (approve or deny, with a
  reason told to the model; over MCP 2026-07-28, which has no server-initiated requests, it is
  denied saying so, until approvals become `input_required` rounds); a client that declines,
  cancels, cannot elicit or does not answer in time denies the call, and the reason says which;
  a question one of the agent's own MCP servers
  asks a person is forwarded as it came;
- `notifications/cancelled` cancels the run (the SDK cancels the handler; the run's tree is halted,
  an approval it waits for is denied);
- the final answer is the tool result's text, each artifact an embedded resource, readable again
  (`resources/read` of its `jianmu://runs/{run_id}/artifacts/{n}` URI) while the server holds the
  run; a run that fails is a tool error (`isError`) saying why;
- the agent file's declared `inputs:` are arguments of the tool besides `question` (strings, each
  required: its templates read them).

Over streamable HTTP the server keeps the API's rules: loopback unless a token guards `/mcp`
(`check_bind`), a `Host` the server does not answer to is refused (421) and so is a state-changing
request from a page of another origin (403).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .._redact import redact_secrets_in, redact_text
from ..errors import JianmuError
from ._artifacts import _body, artifacts
from ._errors import error_response
from ._run_record import NotFound, RunConflict, RunRecord, SSEMessage
from ._runs import RunRegistry
from ._security import BearerTokenMiddleware, HostAllowList, HostRule, SameOriginJson

MCP_PATH = "/mcp"
"""Where the streamable HTTP endpoint answers."""
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {"type": "boolean", "title": "Run this tool call?", "default": False},
        "reason": {"type": "string", "title": "Reason (told to the agent's model)"},
    },
    "required": ["approve"],
}
"""The form an approval is put to the calling client as."""
_WIND_DOWN = 10.0
"""Seconds a cancelled call waits for its run to stop (its tree halts at the next await)."""


class MCPServeError(JianmuError):
    """The agent file cannot be served over MCP as asked."""


def tool_name(name: str) -> str:
    """The agent's name as an MCP tool name (letters, digits, `_`, `-`, `.`; 1 to 128)."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "_", name.strip()).strip("_")[:128]
    return cleaned or "agent"


class AgentTool:
    """One agent file's runs, offered as the MCP tool `name`."""

    def __init__(
        self,
        registry: RunRegistry,
        *,
        name: str,
        description: str,
        question_timeout: float = 300.0,
        inputs: Sequence[str] = (),
    ) -> None:
        self.registry = registry
        self.inputs = [key for key in inputs if key != "question"]
        """The agent file's declared inputs: the tool's arguments besides `question`."""
        self.name = tool_name(name)
        self.title = name
        self.description = description or f"Ask the agent {name!r} a question; it answers in text."
        self.question_timeout = question_timeout
        """Seconds the calling client has to answer an approval or a question."""

    def server(self) -> Server[Any]:
        """The SDK's low-level server answering `tools/list` and `tools/call`."""
        return Server(
            self.name,
            title=self.title,
            description=self.description,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource,
        )

    def tool(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema={
                "type": "object",
                "properties": {
                    "question": {"type": "string", "description": "what to ask the agent"},
                    **{
                        key: {"type": "string", "description": f"the agent's input `{key}`"}
                        for key in self.inputs
                    },
                },
                "required": ["question", *self.inputs],
                "additionalProperties": False,
            },
        )

    async def _list_tools(
        self, _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[self.tool()])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name != self.name:
            raise MCPError(
                types.INVALID_PARAMS, f"unknown tool {params.name!r} (this server offers {self.name!r})"
            )
        arguments = dict(params.arguments or {})
        question = arguments.pop("question", None)
        if not isinstance(question, str) or not question.strip():
            return _error("`question` (a non-empty string) is required")
        inputs = {key: arguments.pop(key, None) for key in self.inputs}
        wrong = [key for key, value in inputs.items() if not isinstance(value, str)]
        if wrong:
            return _error(f"{', '.join(f'`{key}`' for key in wrong)} (a string each) required")
        if arguments:
            takes = ", ".join(f"`{key}`" for key in ["question", *self.inputs])
            return _error(f"unknown arguments {sorted(arguments)}: this tool takes {takes}")
        try:
            record = self.registry.start(question, inputs=inputs or None)
        except RunConflict as exc:
            return _error(str(exc))
        try:
            await self._follow(ctx, record)
        except BaseException:  # cancelled (notifications/cancelled, a closed connection): stop the run
            with anyio.CancelScope(shield=True):
                await self._stop(record)
            raise
        return self._result(record)

    async def _list_resources(
        self, _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        """The artifacts of the runs the server holds (the registry's retention bounds them)."""
        listed: list[types.Resource] = []
        for record in list(self.registry.runs.values()):
            for n, artifact in enumerate(artifacts(record)):
                name = str(artifact.get("name") or f"artifact-{n}")
                media = str(artifact.get("mime_type") or "application/octet-stream")
                made = f"made by tool {artifact.get('tool')!r} in run {record.run_id}"
                uri = _artifact_uri(record, n)
                listed.append(types.Resource(uri=uri, name=name, description=made, mime_type=media))
        return types.ListResourcesResult(resources=listed)

    async def _list_templates(
        self, _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[])  # URIs come with results

    async def _read_resource(
        self, _ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        found = re.fullmatch(r"jianmu://runs/([^/]+)/artifacts/(\d+)", uri)
        if found is None:
            raise MCPError(types.INVALID_PARAMS, f"no resource {uri!r}: this server has run artifacts only")
        try:
            record = self.registry.get(found[1])
        except NotFound as exc:
            raise MCPError(types.INVALID_PARAMS, str(exc)) from None
        made, n = artifacts(record), int(found[2])
        contents = _contents(record, n, made[n]) if n < len(made) else None
        if contents is None:
            raise MCPError(types.INVALID_PARAMS, f"run {record.run_id!r} has no artifact {n} (any more)")
        return types.ReadResourceResult(contents=[contents])

    async def _follow(self, ctx: ServerRequestContext[Any], record: RunRecord) -> None:
        """Relay the run's messages until its `done`: progress, approvals, questions."""
        count = 0
        async for message in record.follow():
            note = _progress_note(message)
            if note is not None:
                count += 1
                await ctx.session.report_progress(count, None, note)
            elif message.event == "approval":
                status = message.data.get("status")
                if status == "pending":
                    await self._approve(ctx, record)
                elif status == "elicitation":
                    await self._relay_question(ctx, record, dict(message.data.get("elicitation") or {}))

    async def _approve(self, ctx: ServerRequestContext[Any], record: RunRecord) -> None:
        """Put each pending approval to the caller; every one not approved is denied, saying why."""
        for item in record.pending():
            if item["decided"]:
                continue
            text = (
                f"The agent wants to call the tool {item['tool']!r} with {item['arguments']}"
                + (f" ({item['reason']})" if item.get("reason") else "")
                + ". Approve?"
            )
            answer, why = await self._ask(ctx, redact_text(text), APPROVAL_SCHEMA)
            approved = answer is not None and bool(answer.get("approve"))
            if answer is not None:
                reason = str(
                    answer.get("reason") or ("approved" if approved else "denied by the MCP client's user")
                )
            else:
                reason = why
            with contextlib.suppress(RunConflict):  # decided meanwhile (an operator): theirs stands
                self.registry.decide(item["id"], approved, reason, record.thread_id)

    async def _relay_question(
        self, ctx: ServerRequestContext[Any], record: RunRecord, request: dict[str, Any]
    ) -> None:
        """A question an MCP server of the agent asks a person goes to the calling client."""
        request_id = str(request.get("id"))
        action: Literal["accept", "decline"]
        if request.get("url"):  # URL mode: nothing to fill in here
            content, action = None, "decline"
        else:
            schema = request.get("requested_schema") or {"type": "object", "properties": {}}
            content, _why = await self._ask(ctx, str(request.get("message") or ""), schema)
            action = "accept" if content is not None else "decline"
        with contextlib.suppress(JianmuError):  # answered or timed out meanwhile
            record.agent.respond_elicitation(request_id, action, content)

    async def _ask(
        self, ctx: ServerRequestContext[Any], message: str, schema: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, str]:
        """The accepted content of an elicitation, or None and why there is none."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            # 2026-07-28 has no server-initiated requests; approvals as `input_required` rounds
            # are not implemented here yet, so the call is denied rather than left waiting.
            return None, (
                f"denied: over MCP {ctx.protocol_version} this server cannot ask the client mid-call "
                "(a client of 2025-11-25 can approve)"
            )
        capabilities = ctx.session.client_capabilities
        if capabilities is None or capabilities.elicitation is None:
            return None, "denied: the MCP client cannot be asked (it declared no elicitation capability)"
        try:
            with anyio.fail_after(self.question_timeout):
                result = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
        except TimeoutError:
            return None, f"denied: the MCP client gave no answer within {self.question_timeout:g} s"
        except MCPError as exc:
            return None, f"denied: the MCP client refused the question ({exc.error.message})"
        if result.action != "accept":
            return None, f"denied: the MCP client's user answered {result.action!r}"
        return dict(result.content or {}), ""

    async def _stop(self, record: RunRecord) -> None:
        """The caller cancelled: halt a running run, deny what a suspended one waits for, and wait
        (bounded) for it to end."""
        if record.status == "running":
            record.cancel()
        elif record.status == "suspended":
            for approval_id in record.waiting():
                with contextlib.suppress(JianmuError):
                    self.registry.decide(
                        approval_id, False, "the MCP client cancelled the call", record.thread_id
                    )
            record.cancel()
        task = record.task
        if task is not None:
            with anyio.move_on_after(_WIND_DOWN), contextlib.suppress(Exception):
                await asyncio.shield(_finished(record))

    def _result(self, record: RunRecord) -> types.CallToolResult:
        result = record.result
        if record.status != "success" or result is None:
            why = record.error or f"the run ended {record.status}"
            return _error(f"the agent's run {record.run_id} failed: {why}")
        content: list[types.ContentBlock] = [types.TextContent(type="text", text=result.final_answer or "")]
        for n, artifact in enumerate(artifacts(record)):
            resource = _embedded(record, n, artifact)
            if resource is not None:
                content.append(resource)
        return types.CallToolResult(content=content)


async def _finished(record: RunRecord) -> None:
    async for _ in record.follow(len(record.log)):
        pass


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=redact_text(text))], is_error=True
    )


def _progress_note(message: SSEMessage) -> str | None:
    """What a `step` message says as a progress note (per iteration: thinking, a tool call)."""
    if message.event != "step":
        return None
    data = message.data
    n, kind, status, tool = data.get("iteration"), data.get("type"), data.get("status"), data.get("tool_name")
    if kind == "thinking" and status == "start":
        return f"iteration {n}: thinking"
    if kind == "iteration" and status == "start":
        return f"iteration {n}: calling {tool}"
    if kind == "iteration" and status == "done":
        outcome = "denied" if data.get("denied") else "failed" if data.get("error") else "done"
        return f"iteration {n}: {tool} {outcome}"
    return None


def _artifact_uri(record: RunRecord, n: int) -> str:
    return f"jianmu://runs/{record.run_id}/artifacts/{n}"


def _embedded(record: RunRecord, n: int, artifact: dict[str, Any]) -> types.EmbeddedResource | None:
    """An artifact as an embedded resource; one whose file is gone by now is left out (the run's
    log names it)."""
    resource = _contents(record, n, artifact)
    if resource is None:
        return None
    meta = redact_secrets_in(
        {"name": str(artifact.get("name") or f"artifact-{n}"), "tool": artifact.get("tool")}
    )
    return types.EmbeddedResource(type="resource", resource=resource, meta=meta)


def _contents(
    record: RunRecord, n: int, artifact: dict[str, Any]
) -> types.TextResourceContents | types.BlobResourceContents | None:
    """An artifact's contents: text for text, base64 for the rest; None when its file is gone."""
    name = str(artifact.get("name") or f"artifact-{n}")
    try:
        body = _body(artifact, f"artifact {n} ({name}) of run {record.run_id!r}")
    except NotFound:
        return None
    uri = _artifact_uri(record, n)
    media = str(artifact.get("mime_type") or "application/octet-stream")
    textual = media.startswith("text/") or media in ("application/json", "application/xml")
    resource: types.TextResourceContents | types.BlobResourceContents
    if textual and artifact.get("encoding") != "base64":
        text = redact_text(body.decode("utf-8", errors="replace"))
        resource = types.TextResourceContents(uri=uri, mime_type=media, text=text)
    else:
        blob = base64.b64encode(body).decode("ascii")
        resource = types.BlobResourceContents(uri=uri, mime_type=media, blob=blob)
    return resource


async def serve_stdio(tool: AgentTool) -> None:
    """Serve `tool` over stdin/stdout until the client closes them; runs end with the server."""
    from mcp.server.stdio import stdio_server

    server = tool.server()
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await tool.registry.aclose()


class _SameOrigin(SameOriginJson):
    """The same-origin rule of the API without its JSON-only rule (the SDK checks its own
    content types; a `DELETE` ending a session has no body)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in ("GET", "HEAD", "OPTIONS"):
            from starlette.datastructures import Headers

            problem = self.foreign(Headers(scope=scope), scope)
            if problem is not None:
                await error_response(403, problem)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def http_app(
    tool: AgentTool,
    *,
    token: str | None,
    allowed_hosts: Sequence[str] = (),
    on_shutdown: Sequence[Callable[[], Awaitable[None]]] = (),
) -> Starlette:
    """Streamable HTTP at `/mcp` behind the server's token, `Host` and origin rules."""
    server = tool.server()
    manager = StreamableHTTPSessionManager(app=server)
    endpoint: ASGIApp = StreamableHTTPASGIApp(manager)
    rule = HostRule(allowed_hosts)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        try:
            async with manager.run():
                yield
        finally:
            await tool.registry.aclose()
            for close in on_shutdown:
                await close()

    middleware = [Middleware(HostAllowList, rule=rule), Middleware(_SameOrigin, rule=rule)]
    if token:
        middleware.append(Middleware(BearerTokenMiddleware, token=token, protected=(MCP_PATH,)))
    return Starlette(routes=[Route(MCP_PATH, endpoint=endpoint)], middleware=middleware, lifespan=lifespan)
