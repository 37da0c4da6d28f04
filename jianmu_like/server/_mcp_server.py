"""`jianmu-like mcp serve AGENT_FILE`: an agent offered to any MCP client as one tool.

Desktop assistants and IDEs speak MCP; serving the agent as an MCP server lets them call it like
any other tool. It is the same server the HTTP API is, seen through another protocol: every call
is a run of the `RunRegistry` (one way runs happen: its event log, its approvals, its
cancellation), and the run's channels become MCP messages:

- the agent's iterations (a model reply starting, a tool call starting or ending) are
  `notifications/progress`, when the caller sent a `progressToken` (the SDK only sends them then);
- an approval the run waits for is an elicitation to the calling client (approve or deny, with a
  reason told to the model); a client that declines, cancels, cannot elicit or does not answer in
  time denies the call, and the reason says which; a question one of the agent's own MCP servers
  asks a person is forwarded as it came;
- over MCP 2026-07-28, which has no server-initiated requests, the same questions are
  `input_required` rounds: the call returns them with a `requestState` and the run waits,
  suspended, until the client sends the call again with the answers (see `_Round`);
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
import functools
import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .._base.redact import redact_secrets_in, redact_text
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
_LATE = 600.0
"""Seconds an unanswered round is remembered after it timed out, so that a late retry is told
what became of the run rather than that its `requestState` is unknown."""


_CANNOT_ELICIT = "denied: the MCP client cannot be asked (it declared no elicitation capability)"


@dataclass
class _Round:
    """One `input_required` round of a 2026-07-28 call, held by the server between the answer it
    returned and the client's retry.

    The run waits suspended meanwhile (its approval or question is undecided; no model or tool
    call is open). The client only holds an opaque id, which the SDK's `RequestStateBoundary`
    also seals (AES-GCM under a key of this process) and binds to the tool and its arguments, so
    it can neither be forged nor moved to another call; it is good for one retry. Left
    unanswered for the question timeout, every question of the round is denied, saying so, and
    the run goes on without the client."""

    record: RunRecord
    position: int
    """The index in the run's log to follow on from when the client retries."""
    requests: dict[str, types.InputRequest] = field(default_factory=dict)
    answers: dict[str, Callable[[dict[str, Any] | None, str], None]] = field(default_factory=dict)
    """For each key of `requests`: how its answer (the accepted content, or None and why) is
    applied to the run."""
    expired: bool = False
    timer: asyncio.TimerHandle | None = None


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
        self._rounds: dict[str, _Round] = {}
        self._state_security = RequestStateSecurity.ephemeral(ttl=question_timeout + _LATE)

    def server(self) -> Server[Any]:
        """The SDK's low-level server answering `tools/list` and `tools/call`; the SDK's boundary
        seals the `requestState` of the 2026-07-28 rounds and verifies what comes back."""
        server: Server[Any] = Server(
            self.name,
            title=self.title,
            description=self.description,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource,
        )
        server.middleware.append(RequestStateBoundary(self._state_security, default_audience=self.name))
        return server

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
    ) -> types.CallToolResult | types.InputRequiredResult:
        if params.name != self.name:
            raise MCPError(
                types.INVALID_PARAMS, f"unknown tool {params.name!r} (this server offers {self.name!r})"
            )
        if params.request_state is not None:  # a 2026-07-28 retry (the boundary verified it)
            record, start = self._answered(params.request_state, params.input_responses or {})
            return await self._drive(ctx, record, start)
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
        return await self._drive(ctx, record, 0)

    async def _drive(
        self, ctx: ServerRequestContext[Any], record: RunRecord, start: int
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Follow the run from log index `start` to its result, or to a round of questions."""
        try:
            asked = await self._follow(ctx, record, start)
        except BaseException:  # cancelled (notifications/cancelled, a closed connection): stop the run
            with anyio.CancelScope(shield=True):
                await self._stop(record)
            raise
        return asked if asked is not None else self._result(record)

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

    async def _follow(
        self, ctx: ServerRequestContext[Any], record: RunRecord, start: int = 0
    ) -> types.InputRequiredResult | None:
        """Relay the run's messages until its `done`: progress, approvals, questions; over
        2026-07-28 the first approval or question ends the call with an `input_required` round."""
        count, position = 0, start
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        async for message in record.follow(start):
            position += 1
            note = _progress_note(message)
            if note is not None:
                count += 1
                await ctx.session.report_progress(count, None, note)
            elif message.event == "approval":
                status = message.data.get("status")
                if modern:
                    asked = self._open_round(ctx, record, position, message)
                    if asked is not None:
                        return asked
                elif status == "pending":
                    await self._approve(ctx, record)
                elif status == "elicitation":
                    await self._relay_question(ctx, record, dict(message.data.get("elicitation") or {}))
        return None

    def _open_round(
        self, ctx: ServerRequestContext[Any], record: RunRecord, position: int, message: SSEMessage
    ) -> types.InputRequiredResult | None:
        """The undecided approvals (or the question) `message` announces as one round, held
        until the client retries or the question timeout denies them; None: nothing to ask."""
        turn = _Round(record, position)
        status = message.data.get("status")
        if status == "pending":
            for n, item in enumerate(record.pending()):
                if item["decided"]:
                    continue
                key = f"approval-{n}"
                turn.requests[key] = _form(redact_text(_approval_text(item)), APPROVAL_SCHEMA)
                turn.answers[key] = functools.partial(self._decide, record, item)
        elif status == "elicitation":
            request = dict(message.data.get("elicitation") or {})
            if request.get("url"):  # URL mode: nothing to fill in here
                self._respond(record, request, None, "")
            else:
                schema = request.get("requested_schema") or {"type": "object", "properties": {}}
                turn.requests["question"] = _form(str(request.get("message") or ""), schema)
                turn.answers["question"] = functools.partial(self._respond, record, request)
        if not turn.requests:
            return None
        capabilities = ctx.session.client_capabilities  # declared with each request at 2026-07-28
        if capabilities is None or capabilities.elicitation is None:
            for answer in turn.answers.values():
                answer(None, _CANNOT_ELICIT)
            return None
        state = secrets.token_urlsafe(24)
        self._rounds[state] = turn
        turn.timer = asyncio.get_running_loop().call_later(self.question_timeout, self._expire, state)
        return types.InputRequiredResult(input_requests=turn.requests, request_state=state)

    def _expire(self, state: str) -> None:
        """The client did not retry in time: deny what the round asked, and remember the round a
        while longer for a late retry."""
        turn = self._rounds.get(state)
        if turn is None or turn.expired:
            if turn is not None:
                del self._rounds[state]
            return
        turn.expired = True
        why = f"denied: the MCP client gave no answer within {self.question_timeout:g} s"
        for answer in turn.answers.values():
            answer(None, why)
        turn.timer = asyncio.get_running_loop().call_later(_LATE, self._expire, state)

    def _answered(self, state: str, responses: types.InputResponses) -> tuple[RunRecord, int]:
        """Apply a retry's answers to its round (once); the run and where to follow it from."""
        turn = self._rounds.pop(state, None)
        if turn is None:
            raise MCPError(
                types.INVALID_PARAMS,
                "this requestState was answered already or is not one of this server's "
                "(a restarted server forgets its rounds): call the tool again",
            )
        if turn.timer is not None:
            turn.timer.cancel()
        if not turn.expired:  # an expired round was denied already, saying why
            for key, apply in turn.answers.items():
                answer = responses.get(key)
                if not isinstance(answer, types.ElicitResult):
                    apply(None, f"denied: the MCP client sent no answer to {key!r}")
                elif answer.action != "accept":
                    apply(None, f"denied: the MCP client's user answered {answer.action!r}")
                else:
                    apply(dict(answer.content or {}), "")
        return turn.record, turn.position

    async def _approve(self, ctx: ServerRequestContext[Any], record: RunRecord) -> None:
        """Put each pending approval to the caller; every one not approved is denied, saying why."""
        for item in record.pending():
            if item["decided"]:
                continue
            answer, why = await self._ask(ctx, redact_text(_approval_text(item)), APPROVAL_SCHEMA)
            self._decide(record, item, answer, why)

    def _decide(
        self, record: RunRecord, item: dict[str, Any], answer: dict[str, Any] | None, why: str
    ) -> None:
        """Decide an approval by the client's answer (None: denied, `why` says why)."""
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
        content: dict[str, Any] | None = None
        if not request.get("url"):  # URL mode: nothing to fill in here
            schema = request.get("requested_schema") or {"type": "object", "properties": {}}
            content, _why = await self._ask(ctx, str(request.get("message") or ""), schema)
        self._respond(record, request, content, "")

    @staticmethod
    def _respond(
        record: RunRecord, request: dict[str, Any], content: dict[str, Any] | None, _why: str
    ) -> None:
        """Answer the agent's own MCP server: the content accepted, or declined (None)."""
        action: Literal["accept", "decline"] = "accept" if content is not None else "decline"
        with contextlib.suppress(JianmuError):  # answered or timed out meanwhile
            record.agent.respond_elicitation(str(request.get("id")), action, content)

    async def _ask(
        self, ctx: ServerRequestContext[Any], message: str, schema: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, str]:
        """The accepted content of an elicitation, or None and why there is none."""
        capabilities = ctx.session.client_capabilities
        if capabilities is None or capabilities.elicitation is None:
            return None, _CANNOT_ELICIT
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


def _approval_text(item: dict[str, Any]) -> str:
    return (
        f"The agent wants to call the tool {item['tool']!r} with {item['arguments']}"
        + (f" ({item['reason']})" if item.get("reason") else "")
        + ". Approve?"
    )


def _form(message: str, schema: dict[str, Any]) -> types.ElicitRequest:
    """A form elicitation embedded in an `input_required` round."""
    return types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))


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
