"""The ASGI app: runs, their event streams, follow-ups, approvals and the agent's tree over HTTP.

Routes only translate between HTTP and the `RunRegistry`; they use the Agent's public API and
its telemetry (mapped by `channels`), never node internals.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from typing import Any, get_args

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response

from .._config import get_config
from .._redact import redact
from .._run.protocol import AgentLike
from ..checkpoint._contract import Checkpointer
from ..checkpoint._threads import (
    ThreadView,
    UnknownThreadError,
    VersionView,
    thread_history,
    thread_view,
    version_view,
)
from ..guard._approvals import InvalidEdit
from ..models._describe import clients_in, describe_all
from ._a2a import A2ACard, a2a_routes
from ._agui import agui_routes
from ._artifacts import artifact_response
from ._console import console_routes
from ._debug import Debugging, debug_routes
from ._elicitations import elicitation_routes
from ._errors import error_response, http_error, internal_error
from ._idempotency import WINDOW, IdempotencyKeys
from ._markdown import shown_messages
from ._nodes import node_entries, tree_json
from ._openai_compat import ChatCompletionRequest, openai_routes
from ._openai_errors import OpenAIErrorShape
from ._openapi import openapi_document
from ._responses import responses_routes
from ._routes import ApiRoute, BadRequest, Param, read_body, starlette_routes
from ._run_record import NotFound, Retention, RunConflict, run_messages
from ._runs import AgentFactory, RunRegistry
from ._schemas import (
    MAX_SEQ,
    AgentTree,
    ApprovalList,
    CancelAccepted,
    CheckpointState,
    DecisionRequest,
    DecisionResult,
    Health,
    InjectQueued,
    InjectRequest,
    NodeState,
    OpenAPIDocument,
    RunCreated,
    RunList,
    RunMessages,
    RunRequest,
    RunSummary,
    ServedRunStatus,
    ThreadHistory,
    ThreadList,
)
from ._security import (
    BearerTokenMiddleware,
    BodyLimit,
    HostAllowList,
    HostRule,
    JsonCORSMiddleware,
    SameOriginJson,
    check_token,
)

Cleanup = Callable[[], Awaitable[None]]
STATUSES: tuple[str, ...] = get_args(ServedRunStatus)
LAST_EVENT_ID = (
    Param("Last-Event-ID", "header", "resume after this event id (the SSE `id:`)"),
    Param("last_event_id", "query", "the same, for clients that cannot send headers"),
)


def _version() -> str:
    try:
        return version("jianmu_like")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0"


def create_app(
    agent_factory: AgentFactory,
    *,
    token: str | None = None,
    max_ticks: int = 100_000,
    cors_origins: Sequence[str] = (),
    on_shutdown: Sequence[Cleanup] = (),
    max_runs: int | None = 1000,
    run_ttl: float | None = 3600.0,
    allowed_hosts: Sequence[str] | None = None,
    max_body_bytes: int | None = None,
    model_name: str | None = None,
    idempotency_window: float = WINDOW,
    a2a: A2ACard | None = None,
) -> Starlette:
    """The ASGI app serving agents made by `agent_factory` (one per conversation: an `Agent`,
    or a `Conversation` of an `AgentTemplate` for cheap ones).

    `token` requires `Authorization: Bearer <token>` on every `/api/` route; `cors_origins`
    allows cross-origin browsers (none by default); `on_shutdown` coroutines run after the
    runs are cancelled and their agents closed (close a template or a checkpoint store there).
    Finished runs are evicted `run_ttl` seconds after they finish and beyond `max_runs` (None:
    no limit), a conversation with its last run; running and suspended runs never are.

    Before any route, a `Host` that is not the server's (its bound address, `localhost`,
    127.0.0.1, [::1] on its port, or one of `allowed_hosts`) is refused (421); a state-changing
    request from a page of another origin (403) or without a JSON body (415), and a body over
    `max_body_bytes` (413), too. Both default to the `server` section of the configuration.
    A bad `allowed_hosts` entry is a ValueError naming it.

    The agent is also a model of an OpenAI-compatible API (`/v1/chat/completions`,
    `/v1/models`; see `openai_compat`) named `model_name` (default: its tree's root name). An
    `Idempotency-Key` (or an SDK's retry) names one run for `idempotency_window` seconds, kept in
    the agents' checkpoint store when they have one (see `server._idempotency`).

    It is an A2A agent too (`server._a2a`, with the `a2a` extra): its card at
    `/.well-known/agent-card.json` (what `a2a` says, else the agent's name and tools), JSON-RPC
    at `/a2a/`.
    """
    check_token(token)
    settings = get_config().server
    rule = HostRule(settings.allowed_hosts if allowed_hosts is None else allowed_hosts)
    if max_body_bytes is None:
        max_body_bytes = settings.max_body_bytes
    if max_body_bytes <= 0:
        raise ValueError(f"max_body_bytes must be positive, got {max_body_bytes}")
    retention = Retention(max_runs=max_runs, ttl=run_ttl)
    agent_factory = (debugging := Debugging()).factory(agent_factory)  # the server's breakpoints
    registry = RunRegistry(agent_factory, max_ticks=max_ticks, retention=retention)
    described: list[AgentLike] = []
    idempotency = IdempotencyKeys(lambda: sample().checkpointer, window=idempotency_window)

    async def create_run(_request: Request, body: RunRequest) -> RunCreated:
        record = registry.start(body.input, body.thread_id, from_checkpoint=body.from_checkpoint)
        return RunCreated(run_id=record.run_id, thread_id=record.thread_id)

    async def list_runs(request: Request, _body: None) -> RunList:
        status = request.query_params.get("status") or None
        if status is not None and status not in STATUSES:
            raise BadRequest(
                f"status must be one of {', '.join(STATUSES)}, got {status!r}",
                [{"field": "status", "message": "unknown status"}],
            )
        listed = registry.listing(status, request.query_params.get("thread_id") or None)
        return RunList.model_validate({"runs": listed})

    async def get_messages(request: Request, _body: None) -> RunMessages:
        record = registry.get(request.path_params["run_id"])
        return RunMessages(run_id=record.run_id, thread_id=record.thread_id, messages=run_messages(record))

    async def get_run(request: Request, _body: None) -> RunSummary:
        return RunSummary.model_validate(registry.get(request.path_params["run_id"]).summary())

    async def run_events(request: Request, _body: None) -> Response:
        return _stream(request, nodes=False)

    async def run_nodes(request: Request, _body: None) -> Response:
        return _stream(request, nodes=True)

    def _stream(request: Request, *, nodes: bool) -> Response:
        record = registry.get(request.path_params["run_id"])
        last = request.headers.get("last-event-id") or request.query_params.get("last_event_id") or "0"
        try:
            after = int(last)
        except ValueError:
            raise BadRequest(
                f"Last-Event-ID must be an event id (an integer), got {last!r}",
                [{"field": "Last-Event-ID", "message": "not an integer"}],
            ) from None

        async def stream() -> AsyncIterator[ServerSentEvent]:
            async for message in record.follow(after, nodes=nodes):
                yield ServerSentEvent(
                    data=json.dumps(message.data, ensure_ascii=False, default=str),
                    event=message.event,
                    id=str(message.id),
                )

        return EventSourceResponse(stream(), ping=15, headers={"Cache-Control": "no-store"})

    async def inject(request: Request, body: InjectRequest) -> InjectQueued:
        record = registry.inject(request.path_params["run_id"], body.content)
        return InjectQueued(run_id=record.run_id, queued=len(record.injects))

    async def get_artifact(request: Request, _body: None) -> Response:
        record = registry.get(request.path_params["run_id"])
        download = request.query_params.get("download") not in (None, "", "0", "false")
        return artifact_response(record, request.path_params["n"], download=download)

    async def cancel_run(request: Request, _body: None) -> CancelAccepted:
        record = registry.cancel(request.path_params["run_id"])
        return CancelAccepted(run_id=record.run_id, status="cancelling")

    async def list_approvals(_request: Request, _body: None) -> ApprovalList:
        return ApprovalList.model_validate({"approvals": registry.approvals()})

    async def decide(request: Request, body: DecisionRequest) -> DecisionResult:
        approval_id = request.path_params["approval_id"]
        approved = body.decision == "approve"
        try:
            record = registry.decide(
                approval_id, approved, body.reason, body.thread_id, arguments=body.arguments
            )
        except InvalidEdit as exc:
            raise BadRequest(str(exc), [{"field": "arguments", "message": str(exc)}]) from None
        return DecisionResult(run_id=record.run_id, status=record.status)

    def sample() -> AgentLike:
        """One agent of the factory, built once, to describe the tree and find the store."""
        if not described:
            described.append(agent_factory())
        return described[0]

    async def agent_tree(_request: Request, _body: None) -> AgentTree:
        agent = sample()
        tree = tree_json(agent.tree)
        models = describe_all(clients_in(agent.tree))
        return AgentTree.model_validate(
            {"tree": tree, "checkpoints": agent.checkpointer is not None, "models": models}
        )

    def thread_store() -> Checkpointer:
        """The checkpoint store the server's agents save into (threads live there)."""
        store = sample().checkpointer
        if store is None:
            raise RunConflict(
                "this server keeps no checkpoint store, so no thread versions: serve with "
                "--checkpoint STORE (a conversation is continued in memory while its last run is kept)"
            )
        return store

    async def list_threads(_request: Request, _body: None) -> ThreadList:
        store = thread_store()
        heads = await asyncio.to_thread(store.heads)
        return ThreadList(threads=heads)

    async def get_thread(request: Request, _body: None) -> ThreadView:
        store, tid, keys = thread_store(), request.path_params["thread_id"], sample().keys

        def read() -> ThreadView:
            view = thread_view(store, tid, label="the checkpoint store", keys=keys)
            return view.model_copy(update={"messages": shown_messages(view.messages)})

        return await asyncio.to_thread(read)

    async def get_thread_history(request: Request, _body: None) -> ThreadHistory:
        store, tid = thread_store(), request.path_params["thread_id"]
        versions = await asyncio.to_thread(thread_history, store, tid, label="the checkpoint store")
        return ThreadHistory(thread_id=tid, versions=versions)

    async def get_checkpoint(request: Request, _body: None) -> CheckpointState:
        store, tid, raw = thread_store(), request.path_params["thread_id"], request.path_params["seq"]
        if not (raw.isascii() and raw.isdigit()) or int(raw) > MAX_SEQ:
            raise BadRequest(
                f"a version is a number (a `seq` of GET /api/threads/{tid}/history), got {raw[:40]!r}",
                [{"field": "seq", "message": "not a version number"}],
            )
        agent = sample()

        def read() -> tuple[VersionView, list[dict[str, Any]]]:
            view = version_view(store, tid, int(raw), label="the checkpoint store", keys=agent.keys)
            return view, shown_messages(view.messages)

        view, messages = await asyncio.to_thread(read)
        ids = {path: node_id for node_id, path, _node in node_entries(agent.tree)}
        return CheckpointState(
            version=view.version,
            messages=messages,
            nodes=[
                NodeState(id=ids.get(path), path=path, status=status) for path, status in view.tree.items()
            ],
            pending_approvals=redact(view.pending_approvals),
        )

    def served_model() -> str:
        return model_name if model_name is not None else str(sample().tree.name)

    async def healthz(_request: Request, _body: None) -> Health:
        active = sum(1 for r in registry.runs.values() if not r.finished)
        return Health(status="ok", runs=len(registry.runs), active=active)

    async def openapi(_request: Request, _body: None) -> OpenAPIDocument:
        return OpenAPIDocument.model_validate(document())

    @cache
    def document() -> dict[str, Any]:
        return openapi_document(table, title="jianmu-like", version=_version())

    table: list[ApiRoute] = [
        *console_routes(),
        ApiRoute("GET", "/openapi.json", openapi, "this API as OpenAPI 3.1", OpenAPIDocument, tag="meta"),
        ApiRoute("GET", "/healthz", healthz, "liveness: the runs kept and active", Health, tag="meta"),
        ApiRoute(
            "GET", "/api/runs", list_runs, "the runs kept, oldest first", RunList, errors=(422,),
            params=(
                Param("status", "query", "only runs of this status", (("enum", list(STATUSES)),)),
                Param("thread_id", "query", "only runs of this conversation"),
            ),
        ),
        ApiRoute(
            "POST", "/api/runs", create_run, "start a run (continue a thread, or fork one of its versions)",
            RunCreated, RunRequest, status=201, errors=(404, 409, 422),
        ),
        ApiRoute("GET", "/api/runs/{run_id}", get_run, "a run's status, answer", RunSummary, errors=(404,)),
        ApiRoute(
            "GET", "/api/runs/{run_id}/events", run_events, "the run's events (Server-Sent Events: "
            "step, answer, compact, phase, inject, approval, artifact, done)", None,
            media_type="text/event-stream", params=LAST_EVENT_ID, errors=(404, 422),
        ),
        ApiRoute(
            "GET", "/api/runs/{run_id}/nodes", run_nodes, "the tree's node statuses as they change "
            "(Server-Sent Events `node`)", None, media_type="text/event-stream", params=LAST_EVENT_ID,
            errors=(404, 422),
        ),
        ApiRoute(
            "POST", "/api/runs/{run_id}/inject", inject, "a follow-up for the run's next iteration",
            InjectQueued, InjectRequest, status=202, errors=(404, 409, 422),
        ),
        ApiRoute(
            "POST", "/api/runs/{run_id}/cancel", cancel_run, "cancel a running run (any JSON body, e.g. {})",
            CancelAccepted, status=202, errors=(404, 409),
        ),
        ApiRoute(
            "GET", "/api/runs/{run_id}/messages", get_messages, "the conversation at the run's end",
            RunMessages, errors=(404, 409),
        ),
        ApiRoute(
            "GET", "/api/runs/{run_id}/artifacts/{n}", get_artifact, "a document a tool made "
            "(its own Content-Type, sandboxed)", None, media_type="application/octet-stream",
            params=(Param("download", "query", "1: as an attachment"),), errors=(404,),
        ),
        ApiRoute("GET", "/api/approvals", list_approvals, "pending approvals", ApprovalList, tag="approvals"),
        ApiRoute(
            "POST", "/api/approvals/{approval_id}", decide, "approve (optionally with corrected "
            "arguments) or deny (with a reason) a pending tool call", DecisionResult, DecisionRequest,
            errors=(404, 409, 422), tag="approvals",
        ),
        ApiRoute("GET", "/api/agent", agent_tree, "the served agent's tree", AgentTree, tag="meta"),
        ApiRoute(
            "GET", "/api/threads", list_threads, "the conversations of the checkpoint store",
            ThreadList, errors=(409,), tag="threads",
        ),
        ApiRoute(
            "GET", "/api/threads/{thread_id}", get_thread, "a conversation: its newest version and messages",
            ThreadView, errors=(404, 409), tag="threads",
        ),
        ApiRoute(
            "GET", "/api/threads/{thread_id}/history", get_thread_history, "a conversation's versions, "
            "newest first", ThreadHistory, errors=(404, 409), tag="threads",
        ),
        ApiRoute(
            "GET", "/api/threads/{thread_id}/checkpoints/{seq}", get_checkpoint, "one version: its "
            "messages, the tree's statuses and pending approvals", CheckpointState, errors=(404, 409, 422),
            tag="threads",
        ),
        *openai_routes(
            registry,
            served_model,
            lambda request: read_body(request, ChatCompletionRequest),
            idempotency,
        ),
        *responses_routes(registry, served_model, idempotency),
        *agui_routes(registry, served_model),
        *elicitation_routes(registry),
        *debug_routes(registry, debugging, sample),
        *a2a_routes(registry, sample, a2a, token=bool(token), version=_version()),
    ]  # fmt: skip

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await idempotency.aclose()
            await registry.aclose()
            for agent in described:
                await agent.aclose()
            for cleanup in on_shutdown:
                await cleanup()

    async def not_found(_request: Request, exc: Exception) -> Response:
        return error_response(404, str(exc))

    async def conflict(_request: Request, exc: Exception) -> Response:
        return error_response(409, str(exc), **getattr(exc, "extra", {}))

    async def bad_request(_request: Request, exc: Exception) -> Response:
        detail = exc.detail if isinstance(exc, BadRequest) else []
        return error_response(422, str(exc), detail=detail)

    # Outermost first: the OpenAI error shape of `/v1/` (over every refusal), the Host before
    # anything else, then (CORS answering its preflights) the origin and content type of a
    # state change, then the body's size, then the token.
    middleware: list[Middleware] = [Middleware(OpenAIErrorShape), Middleware(HostAllowList, rule=rule)]
    if cors_origins:
        middleware.append(
            Middleware(
                JsonCORSMiddleware,
                allow_origins=list(cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
            )
        )
    middleware.append(Middleware(SameOriginJson, rule=rule, cors_origins=cors_origins))
    middleware.append(Middleware(BodyLimit, max_bytes=max_body_bytes))
    if token:
        middleware.append(Middleware(BearerTokenMiddleware, token=token))
    app = Starlette(
        routes=starlette_routes(table),
        middleware=middleware,
        exception_handlers={
            NotFound: not_found,
            UnknownThreadError: not_found,
            RunConflict: conflict,
            BadRequest: bad_request,
            HTTPException: http_error,
            Exception: internal_error,
        },
        lifespan=lifespan,
    )
    app.state.registry = registry
    return app
