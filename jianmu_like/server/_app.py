"""The ASGI app: runs, their event streams, follow-ups, approvals and the agent's tree over HTTP.

Routes only translate between HTTP and the `RunRegistry`; they use the Agent's public API and
its telemetry (mapped by `channels`), never node internals.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar, get_args

import py_trees
from pydantic import BaseModel, ValidationError
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .._agent import Agent
from .._config import get_config
from .._validation import validation_problems
from ..checkpoint._contract import Checkpointer
from ..checkpoint._threads import UnknownThreadError, thread_history, thread_view
from ..errors import JianmuError
from ..guard._approvals import InvalidEdit
from ..models._json_text import JSONTextError, loads_bounded
from ._artifacts import artifact_response
from ._console import console_routes
from ._errors import error_response, http_error, internal_error
from ._nodes import tree_json
from ._openai_compat import ChatCompletionRequest, OpenAIErrorShape, openai_routes
from ._runs import AgentFactory, NotFound, Retention, RunConflict, RunRegistry, ServedRunStatus, run_messages
from ._schemas import DecisionRequest, InjectRequest, RunRequest, ThreadHistory, ThreadList
from ._security import (
    BearerTokenMiddleware,
    BodyLimit,
    HostAllowList,
    HostRule,
    JsonCORSMiddleware,
    SameOriginJson,
)

Model = TypeVar("Model", bound=BaseModel)
Cleanup = Callable[[], Awaitable[None]]


class BadRequest(JianmuError):
    """A body that does not validate: HTTP 422 with the fields named."""

    def __init__(self, message: str, detail: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.detail = detail


async def _body(request: Request, model: type[Model]) -> Model:
    raw = await request.body()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(
            f"request body is not valid UTF-8 (at byte {exc.start}): JSON bodies are UTF-8", []
        ) from None
    try:  # the limits of model-written JSON (depth, number size): one rule, models.json_text
        data = loads_bounded(text or "null", "request body is")
    except JSONTextError as exc:
        raise BadRequest(str(exc), []) from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = validation_problems(exc, model=model)
        detail = [{"field": problem.key or "body", "message": problem.message} for problem in problems]
        message = "; ".join(f"{d['field']}: {d['message']}" for d in detail)
        raise BadRequest(f"invalid request body: {message}", detail) from None


def _tree_of(agent: Agent) -> py_trees.behaviour.Behaviour:
    template = getattr(agent, "template", None)  # a Conversation borrows its tree per run
    prototype = getattr(template, "prototype", None)
    return prototype if isinstance(prototype, py_trees.behaviour.Behaviour) else agent.root


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
    `/v1/models`; see `openai_compat`) named `model_name` (default: its tree's root name).
    """
    settings = get_config().server
    rule = HostRule(settings.allowed_hosts if allowed_hosts is None else allowed_hosts)
    if max_body_bytes is None:
        max_body_bytes = settings.max_body_bytes
    if max_body_bytes <= 0:
        raise ValueError(f"max_body_bytes must be positive, got {max_body_bytes}")
    retention = Retention(max_runs=max_runs, ttl=run_ttl)
    registry = RunRegistry(agent_factory, max_ticks=max_ticks, retention=retention)
    described: list[Agent] = []

    async def create_run(request: Request) -> Response:
        body = await _body(request, RunRequest)
        record = registry.start(body.input, body.thread_id)
        return JSONResponse({"run_id": record.run_id, "thread_id": record.thread_id}, status_code=201)

    async def runs(request: Request) -> Response:
        return await (create_run(request) if request.method == "POST" else list_runs(request))

    async def list_runs(request: Request) -> Response:
        status = request.query_params.get("status") or None
        allowed = get_args(ServedRunStatus)
        if status is not None and status not in allowed:
            raise BadRequest(
                f"status must be one of {', '.join(allowed)}, got {status!r}",
                [{"field": "status", "message": "unknown status"}],
            )
        return JSONResponse({"runs": registry.listing(status, request.query_params.get("thread_id") or None)})

    async def get_messages(request: Request) -> Response:
        record = registry.get(request.path_params["run_id"])
        return JSONResponse(
            {"run_id": record.run_id, "thread_id": record.thread_id, "messages": run_messages(record)}
        )

    async def get_run(request: Request) -> Response:
        return JSONResponse(registry.get(request.path_params["run_id"]).summary())

    async def run_events(request: Request) -> Response:
        return _stream(request, nodes=False)

    async def run_nodes(request: Request) -> Response:
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

    async def inject(request: Request) -> Response:
        body = await _body(request, InjectRequest)
        record = registry.inject(request.path_params["run_id"], body.content)
        return JSONResponse({"run_id": record.run_id, "queued": len(record.injects)}, status_code=202)

    async def get_artifact(request: Request) -> Response:
        record = registry.get(request.path_params["run_id"])
        download = request.query_params.get("download") not in (None, "", "0", "false")
        return artifact_response(record, request.path_params["n"], download=download)

    async def cancel_run(request: Request) -> Response:
        record = registry.cancel(request.path_params["run_id"])
        return JSONResponse({"run_id": record.run_id, "status": "cancelling"}, status_code=202)

    async def list_approvals(_request: Request) -> Response:
        return JSONResponse({"approvals": registry.approvals()})

    async def decide(request: Request) -> Response:
        body = await _body(request, DecisionRequest)
        approval_id = request.path_params["approval_id"]
        approved = body.decision == "approve"
        try:
            record = registry.decide(
                approval_id, approved, body.reason, body.thread_id, arguments=body.arguments
            )
        except InvalidEdit as exc:
            raise BadRequest(str(exc), [{"field": "arguments", "message": str(exc)}]) from None
        return JSONResponse({"run_id": record.run_id, "status": record.status})

    def sample() -> Agent:
        """One agent of the factory, built once, to describe the tree and find the store."""
        if not described:
            described.append(agent_factory())
        return described[0]

    async def agent_tree(_request: Request) -> Response:
        return JSONResponse({"tree": tree_json(_tree_of(sample()))})

    def thread_store() -> Checkpointer:
        """The checkpoint store the server's agents save into (threads live there)."""
        recorder = sample().recorder
        if recorder is None:
            raise RunConflict(
                "this server keeps no checkpoint store, so no thread versions: serve with "
                "--checkpoint STORE (a conversation is continued in memory while its last run is kept)"
            )
        return recorder.checkpointer

    async def list_threads(_request: Request) -> Response:
        store = thread_store()
        heads = await asyncio.to_thread(store.heads)
        return JSONResponse(ThreadList(threads=heads).model_dump(mode="json"))

    async def get_thread(request: Request) -> Response:
        store, tid = thread_store(), request.path_params["thread_id"]
        view = await asyncio.to_thread(thread_view, store, tid, label="the checkpoint store")
        return JSONResponse(view.model_dump(mode="json"))

    async def get_thread_history(request: Request) -> Response:
        store, tid = thread_store(), request.path_params["thread_id"]
        versions = await asyncio.to_thread(thread_history, store, tid, label="the checkpoint store")
        return JSONResponse(ThreadHistory(thread_id=tid, versions=versions).model_dump(mode="json"))

    def served_model() -> str:
        return model_name if model_name is not None else str(_tree_of(sample()).name)

    async def chat_request(request: Request) -> ChatCompletionRequest:
        return await _body(request, ChatCompletionRequest)

    async def healthz(_request: Request) -> Response:
        active = sum(1 for r in registry.runs.values() if not r.finished)
        return JSONResponse({"status": "ok", "runs": len(registry.runs), "active": active})

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
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
        routes=[
            *console_routes(),
            Route("/healthz", healthz),
            Route("/api/runs", runs, methods=["GET", "POST"]),
            Route("/api/runs/{run_id}", get_run),
            Route("/api/runs/{run_id}/events", run_events),
            Route("/api/runs/{run_id}/nodes", run_nodes),
            Route("/api/runs/{run_id}/inject", inject, methods=["POST"]),
            Route("/api/runs/{run_id}/cancel", cancel_run, methods=["POST"]),
            Route("/api/runs/{run_id}/messages", get_messages),
            Route("/api/runs/{run_id}/artifacts/{n}", get_artifact),
            Route("/api/approvals", list_approvals),
            Route("/api/approvals/{approval_id}", decide, methods=["POST"]),
            Route("/api/agent", agent_tree),
            Route("/api/threads", list_threads),
            Route("/api/threads/{thread_id}", get_thread),
            Route("/api/threads/{thread_id}/history", get_thread_history),
            *openai_routes(registry, served_model, chat_request),
        ],
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
