"""The OpenAPI 3.1 document of the server, generated from its route table (`_routes`).

Each route's request and response models become `components/schemas` (pydantic's JSON Schema,
which OpenAPI 3.1 takes as is); every route also lists the refusals it answers, in the one
error shape (`ErrorBody`). `/docs` is a page of the console's kind (no CDN, served with the same
CSP) that reads `/openapi.json` and lists the routes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from ._routes import ApiRoute
from ._schemas import ErrorBody

REF = "#/components/schemas/{model}"
MIDDLEWARE_ERRORS = {
    401: "no or a wrong bearer token (a server started with --token; `/api/`, `/v1/`, `/a2a/`, "
    "`/ag-ui` routes)",
    403: "a state change from a page of another origin",
    413: "a body over the server's limit",
    415: "a state change without a JSON body",
    421: "a Host that is not this server's",
}
ROUTE_ERRORS = {
    400: "an invalid request (`/v1/`: OpenAI's status for it; `param` names the field)",
    404: "unknown run, approval, thread or version",
    409: "the request contradicts the run's or thread's state (the message says what to do)",
    422: "a body or parameter that does not validate (the fields are named)",
    429: "the agent's own model is rate limited (`Retry-After` as its server said)",
    500: "an unexpected error (the server's log has the traceback)",
    501: "an optional feature whose extra is not installed (the message names it)",
}


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": REF.format(model=model.__name__)}


def _operation(route: ApiRoute) -> dict[str, Any]:
    parameters: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in route.path_params
    ]
    parameters += [
        {
            "name": p.name,
            "in": p.where,
            "required": False,
            "description": p.description,
            "schema": dict(p.schema),
        }
        for p in route.params
    ]
    content: dict[str, Any] = (
        {"application/json": {"schema": _ref(route.response)}}
        if route.response is not None
        else {route.media_type: {"schema": {"type": "string"}}}
    )
    responses: dict[str, Any] = {str(route.status): {"description": route.summary, "content": content}}
    if route.stream is not None:
        sse = {"text/event-stream": {"schema": {"type": "string"}}}
        responses["200"] = {"description": route.stream, "content": sse}
    error = {"application/json": {"schema": _ref(ErrorBody)}}
    for status in sorted({*route.errors, *MIDDLEWARE_ERRORS, 500}):
        why = ROUTE_ERRORS.get(status) or MIDDLEWARE_ERRORS[status]
        responses[str(status)] = {"description": why, "content": error}
    operation: dict[str, Any] = {
        "operationId": f"{route.method.lower()}_{route.path.strip('/').replace('/', '_') or 'root'}",
        "summary": route.summary,
        "tags": [route.tag],
        "parameters": parameters,
        "responses": responses,
    }
    if route.request is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _ref(route.request)}},
        }
    return operation


def openapi_document(table: Sequence[ApiRoute], *, title: str, version: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the routes in `table`."""
    models: list[type[BaseModel]] = [ErrorBody]
    for route in table:
        for model in (route.request, route.response):
            if model is not None and model not in models:
                models.append(model)
    modes = [(model, "validation" if _is_request(model, table) else "serialization") for model in models]
    _, schemas = models_json_schema(modes, ref_template=REF)  # type: ignore[arg-type]
    paths: dict[str, dict[str, Any]] = {}
    for route in table:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route)
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version},
        "paths": paths,
        "components": {"schemas": schemas.get("$defs", {})},
    }


def _is_request(model: type[BaseModel], table: Sequence[ApiRoute]) -> bool:
    return any(route.request is model for route in table)
