"""The ASGI app: the route tables (`server._api`, the protocols') over one `ServerContext`,
behind the security middlewares, with the error handlers and the shutdown.

`create_app` only assembles: every endpoint is a module-level function of its own module, and
what they share lives on the app (`app.state.server`, see `server._context`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response

from .._base.config import get_config
from ..checkpoint._recordings import UnknownRecordingError
from ..checkpoint._threads import UnknownThreadError
from ._a2a import A2ACard, a2a_routes
from ._agui import agui_routes
from ._api import ROUTES, server_version
from ._console import console_routes
from ._context import Cleanup, ServerContext
from ._debug import Debugging, debug_routes
from ._elicitations import elicitation_routes
from ._errors import error_response, http_error, internal_error
from ._idempotency import WINDOW, IdempotencyKeys
from ._interruptions import interruption_routes
from ._openai_compat import ChatCompletionRequest, openai_routes
from ._openai_errors import OpenAIErrorShape
from ._recordings import MAX_BYTES as MAX_RECORDING_BYTES
from ._recordings import Recordings, recording_routes
from ._responses import responses_routes
from ._routes import ApiRoute, BadRequest, read_body, starlette_routes
from ._run_record import NotFound, Retention, RunConflict
from ._runs import AgentFactory, RunRegistry
from ._security import (
    BearerTokenMiddleware,
    BodyLimit,
    HostAllowList,
    HostRule,
    JsonCORSMiddleware,
    SameOriginJson,
    check_token,
)


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
    recordings: str | Path | None = None,
    max_recording_bytes: int = MAX_RECORDING_BYTES,
    allow_modules: Sequence[str] = (),
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

    `recordings` is a folder of recordings the console opens (`server._recordings`: each
    replayed as a run of its own; files of at most `max_recording_bytes`; a recording's
    `module:function` agent only from `allow_modules` or `agents.allowed_modules`); None: none.
    """
    check_token(token)
    settings = get_config().server
    rule = HostRule(settings.allowed_hosts if allowed_hosts is None else allowed_hosts)
    if max_body_bytes is None:
        max_body_bytes = settings.max_body_bytes
    if max_body_bytes <= 0:
        raise ValueError(f"max_body_bytes must be positive, got {max_body_bytes}")
    debugging = Debugging()
    agent_factory = debugging.factory(agent_factory)  # the server's breakpoints (server._debug)
    registry = RunRegistry(
        agent_factory, max_ticks=max_ticks, retention=Retention(max_runs=max_runs, ttl=run_ttl)
    )
    server = ServerContext(
        agent_factory,
        registry,
        IdempotencyKeys(lambda: server.sample().checkpointer, window=idempotency_window),
        model_name=model_name,
        token=bool(token),
        a2a=a2a,
        on_shutdown=on_shutdown,
        debugging=debugging,
        recordings=Recordings(recordings, max_recording_bytes, allow_modules),
    )
    registry.stored.sample = server.sample  # its store's suspended threads are offered to decide
    server.table = route_table(server)
    app = Starlette(
        routes=starlette_routes(server.table),
        middleware=middlewares(rule, cors_origins, max_body_bytes, token),
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=lifespan,
    )
    app.state.server = server
    app.state.registry = registry
    return app


def route_table(server: ServerContext) -> list[ApiRoute]:
    """Every route of the app, in the OpenAPI document's order: a new route is an entry here
    (or in one of the tables named here)."""
    registry = server.registry
    return [
        *console_routes(),
        *ROUTES,
        *openai_routes(
            registry,
            server.served_model,
            lambda request: read_body(request, ChatCompletionRequest),
            server.idempotency,
        ),
        *responses_routes(registry, server.served_model, server.idempotency),
        *agui_routes(registry, server.served_model),
        *elicitation_routes(registry),
        *interruption_routes(registry),
        *debug_routes(registry, server.debugging, server.sample),
        *recording_routes(registry, server.recordings, server.thread_store),
        *a2a_routes(registry, server.sample, server.a2a, token=server.token, version=server_version()),
    ]


def middlewares(
    rule: HostRule, cors_origins: Sequence[str], max_body_bytes: int, token: str | None
) -> list[Middleware]:
    """Outermost first: the OpenAI error shape of `/v1/` (over every refusal), the Host before
    anything else, then (CORS answering its preflights) the origin and content type of a state
    change, then the body's size, then the token."""
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
    return middleware


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    try:
        yield
    finally:
        server: ServerContext = app.state.server
        await server.aclose()


async def not_found(_request: Request, exc: Exception) -> Response:
    return error_response(404, str(exc))


async def conflict(_request: Request, exc: Exception) -> Response:
    return error_response(409, str(exc), **getattr(exc, "extra", {}))


async def bad_request(_request: Request, exc: Exception) -> Response:
    detail = exc.detail if isinstance(exc, BadRequest) else []
    return error_response(422, str(exc), detail=detail)


EXCEPTION_HANDLERS = {
    NotFound: not_found,
    UnknownThreadError: not_found,
    UnknownRecordingError: not_found,
    RunConflict: conflict,
    BadRequest: bad_request,
    HTTPException: http_error,
    Exception: internal_error,
}
