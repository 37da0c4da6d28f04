"""The one shape of every error the server answers: JSON `{"error": "<what and why>", ...}`.

Routes, Starlette's own 404/405, unexpected exceptions and the ASGI middlewares that refuse a
request before routing (security) all answer through `error_response`, so a client reads one
shape whatever refused it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response


def error_response(
    status: int, message: str, *, headers: Mapping[str, str] | None = None, **extra: Any
) -> JSONResponse:
    """`{"error": message, **extra}` with `status`."""
    return JSONResponse({"error": message, **extra}, status_code=status, headers=headers)


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's HTTPException (an unknown path: 404; a method a route lacks: 405, with
    `Allow`) as JSON naming the request."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    detail = exc.detail if isinstance(exc, HTTPException) else "error"
    headers = exc.headers if isinstance(exc, HTTPException) else None
    message = f"{detail.lower()}: {request.method} {request.url.path}"
    if status == 405 and headers and "Allow" in headers:
        message += f" (allowed: {headers['Allow']})"
    return error_response(status, message, headers=headers)


async def internal_error(_request: Request, _exc: Exception) -> Response:
    """An unexpected exception: a JSON 500 that leaks nothing (uvicorn logs the traceback)."""
    return error_response(500, "internal server error (the server's log has the traceback)")
