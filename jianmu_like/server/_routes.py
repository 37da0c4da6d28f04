"""The one table of the server's routes: each route's method, path, handler, and the pydantic
models of its request and response.

Starlette's routes and the OpenAPI document (`_openapi`) are both generated from this table, so
the document cannot forget a route or describe a body the route does not take. A handler gets
the request and its body already validated against the route's request model (a bad body is
`BadRequest`, HTTP 422 naming the fields), and answers a model (sent as JSON with the route's
status) or, for a stream, a file or a page, a Response of the route's media type.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .._base.validation import validation_problems
from ..errors import JianmuError
from ..models._json_text import JSONTextError, loads_bounded

Model = TypeVar("Model", bound=BaseModel)
Handler = Callable[[Request, Any], Awaitable[BaseModel | Response]]
_PATH_PARAM = re.compile(r"{(\w+)}")


class BadRequest(JianmuError):
    """A body or parameter that does not validate: HTTP 422 with the fields named."""

    def __init__(self, message: str, detail: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.detail = detail


@dataclass(frozen=True)
class Param:
    """A query parameter or header a route reads (path parameters come from its path)."""

    name: str
    where: Literal["query", "header"]
    description: str
    schema: tuple[tuple[str, Any], ...] = (("type", "string"),)


@dataclass(frozen=True)
class ApiRoute:
    """One route. `response` is the JSON body of a success (None: `media_type` is not JSON)."""

    method: Literal["GET", "POST"]
    path: str
    handler: Handler
    summary: str
    response: type[BaseModel] | None
    request: type[BaseModel] | None = None
    status: int = 200
    media_type: str = "application/json"
    params: tuple[Param, ...] = ()
    errors: tuple[int, ...] = ()
    """The refusals the route itself may answer (every route may also answer those of the
    middlewares: 401, 403, 413, 415, 421)."""
    tag: str = "runs"
    read_body: bool = True
    """False: the handler reads the body itself (the OpenAI face answers in its own shape)."""
    stream: str | None = None
    """A route that may also answer Server-Sent Events (200, `text/event-stream`): when it does."""

    @property
    def path_params(self) -> list[str]:
        return _PATH_PARAM.findall(self.path)


async def read_body(request: Request, model: type[Model]) -> Model:
    """The request's JSON body as `model` (BadRequest naming the cause when it is not)."""
    raw = await request.body()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(
            f"request body is not valid UTF-8 (at byte {exc.start}): JSON bodies are UTF-8", []
        ) from None
    try:  # the limits of model-written JSON (depth, number size): one rule, models._json_text
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


def starlette_routes(table: list[ApiRoute]) -> list[Route]:
    """The Starlette routes of the table: one per path (so a 405 lists every method the path
    takes), dispatching on the method; a GET answers HEAD too."""
    by_path: dict[str, dict[str, ApiRoute]] = {}
    for route in table:
        methods = by_path.setdefault(route.path, {})
        if route.method in methods:
            raise ValueError(f"the route table has {route.method} {route.path} twice")
        methods[route.method] = route
    return [_route(path, methods) for path, methods in by_path.items()]


def _route(path: str, methods: dict[str, ApiRoute]) -> Route:
    async def endpoint(request: Request) -> Response:
        route = methods["GET" if request.method == "HEAD" else request.method]
        body = None
        if route.request is not None and route.read_body:
            body = await read_body(request, route.request)
        answer = await route.handler(request, body)
        if isinstance(answer, Response):
            return answer
        return JSONResponse(answer.model_dump(mode="json"), status_code=route.status)

    return Route(path, endpoint, methods=list(methods))
