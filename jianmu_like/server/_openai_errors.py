"""OpenAI's error contract on `/v1/`: the shape, the status codes and whether to retry.

OpenAI's clients decide from the status and two headers what to do with an error, so those say
what the server means:

- the body is `{"error": {"message", "type", "param", "code"}}` whatever refused the request
  (a route, the security middlewares, Starlette's 404/405);
- an invalid request is 400 (`invalid_request_error`, `param` naming the field), never 422:
  the SDKs raise `BadRequestError` for 400 and a different class for 422, so `except
  openai.BadRequestError` would miss it. Every `/v1/` 422 becomes a 400 here, whoever raised it;
- `x-should-retry: false` on a response whose retry would start the agent again or change
  nothing (a run waiting for approval, a failed run, an upstream rate limit: see
  `server._idempotency`): the SDKs retry 408/409/429/5xx twice by default and honour this header
  (`openai._base_client._should_retry`) before the status;
- an upstream rate limit (the agent's own model answered 429) is a 429 `rate_limit_exceeded`
  with the upstream's `Retry-After` when it sent one.

Only `/v1/` changes shape: `/api/` keeps its own `{"error": "<what and why>"}`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from starlette.datastructures import MutableHeaders
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as ASGIMessage

from ..errors import JianmuError

_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict",
    429: "rate_limit_error",
}
_CODES = {
    400: "invalid_request",
    401: "invalid_api_key",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "request_too_large",
    415: "unsupported_media_type",
    421: "misdirected_request",
    500: "internal_error",
}


class OpenAIError(JianmuError):
    """An error answered in the OpenAI shape. `retry` is sent as `x-should-retry` (False: the
    SDKs do not retry it whatever the status); `headers` go with it (`Retry-After`)."""

    def __init__(
        self,
        status: int,
        message: str,
        kind: str,
        code: str | None = None,
        *,
        param: str | None = None,
        retry: bool | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = 400 if status == 422 else status  # OpenAI's invalid request: see the module
        self.kind = kind
        self.code = code
        self.param = param
        self.retry = retry
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        return {"error": {"message": str(self), "type": self.kind, "param": self.param, "code": self.code}}

    def response_headers(self) -> dict[str, str]:
        headers = dict(self.headers)
        if self.retry is not None:
            headers["x-should-retry"] = "true" if self.retry else "false"
        return headers

    def response(self) -> Response:
        return JSONResponse(self.body(), status_code=self.status, headers=self.response_headers())


def invalid(message: str, code: str, param: str | None = None) -> OpenAIError:
    """A 400 `invalid_request_error` (OpenAI's answer to every bad request)."""
    return OpenAIError(400, message, "invalid_request_error", code, param=param)


def retry_after_header(seconds: float | None) -> dict[str, str]:
    """`Retry-After` in whole seconds (rounded up; at least 1), or nothing when unknown."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return {}
    return {"Retry-After": str(max(1, math.ceil(seconds)))}


class OpenAIErrorShape:
    """Answers every error of a `/v1/` request in the OpenAI shape, whatever refused it (the
    security middlewares, Starlette's 404/405, a route): OpenAI clients show only
    `error.message`, so the server's `{"error": "<what and why>", "detail": [...]}` becomes
    `{"error": {"message": "<what and why>", "type": ..., "param": <the first field named in
    detail>, "code": ...}}`, and a 422 becomes a 400 (see the module)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        held: list[ASGIMessage] = []

        async def reshape(message: ASGIMessage) -> None:
            if message["type"] == "http.response.start" and message["status"] >= 400:
                held.append(message)
                return
            if not held:
                await send(message)
                return
            held.append(message)
            if message.get("more_body"):
                return
            start, *parts = held
            status = 400 if start["status"] == 422 else int(start["status"])
            body = b"".join(part.get("body", b"") for part in parts)
            headers = MutableHeaders(raw=list(start["headers"]))
            body = _shaped(status, body)
            headers["content-length"] = str(len(body))
            await send({**start, "status": status, "headers": headers.raw})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, reshape)


def _shaped(status: int, body: bytes) -> bytes:
    """`body` in the OpenAI shape (already shaped bodies are kept; anything else is wrapped)."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        text = body.decode("utf-8", "replace").strip() or f"HTTP {status}"
        data = {"error": text}
    error = data.get("error")
    if isinstance(error, dict):
        return body
    detail = data.get("detail")
    param = None
    if isinstance(detail, list) and detail and isinstance(detail[0], dict):
        field = detail[0].get("field")
        param = str(field) if field not in (None, "body") else None
    kind = _TYPES.get(status, "invalid_request_error" if status < 500 else "server_error")
    shaped = {
        **data,
        "error": {"message": str(error), "type": kind, "param": param, "code": _CODES.get(status)},
    }
    return json.dumps(shaped, ensure_ascii=False).encode()


def refuse_legacy_functions(body: BaseModel) -> None:
    """The legacy function-calling fields (`functions`, `function_call`, an assistant message's
    `function_call`) are refused with a 400 naming the field, never silently dropped: the agent
    would answer as if the conversation had no such call."""
    extra = body.model_extra or {}
    for name in ("functions", "function_call"):
        if name in extra:
            raise invalid(
                f"{name!r} (the legacy function calling) is not accepted: use `tools` and `tool_choice`",
                "unsupported_parameter",
                name,
            )
    for index, message in enumerate(getattr(body, "messages", ())):
        if (message.model_extra or {}).get("function_call") is not None:
            raise invalid(
                f"messages[{index}]: an assistant message's 'function_call' (the legacy function "
                "calling) is not accepted: send tool calls as `tool_calls`",
                "unsupported_message",
                f"messages[{index}].function_call",
            )
