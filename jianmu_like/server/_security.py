"""Safe by default: loopback binds only, unless a bearer token guards every API route; and no
web page, of another origin or rebinding a name to this machine, can drive the server.

An agent server runs tools on the host, so whoever reaches its API can act there. On loopback
only local users can; on any other address a token is required, checked with a constant-time
comparison on every `/api/` and `/v1/` request.

A browser on the same machine is a way in, too: any page it shows can send "simple" requests
(a `text/plain` or form POST, a `no-cors` fetch) to 127.0.0.1 without a preflight, and a page
whose own name resolves to 127.0.0.1 (DNS rebinding) even reads the answers. So, as pure ASGI
middlewares before any route, in this order: `HostAllowList` answers 421 to a `Host` that is not
one of the server's names; `SameOriginJson` answers 403 to a state-changing request from a
foreign page and 415 to one whose body is not JSON; `BodyLimit` answers 413 to a body over the
limit without reading it whole.
"""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Sequence

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .._base.hostnames import DEFAULT_PORTS, Authority, origin_authority, parse_authority
from .._base.redact import register_secret
from ..errors import JianmuError
from ._errors import error_response

TOKEN_ENV = "JIANMU_SERVER_TOKEN"


class InsecureBindError(ValueError, JianmuError):
    """Binding to a non-loopback address without a token."""


def is_loopback(host: str) -> bool:
    """Whether `host` is a loopback address or `localhost`."""
    if host.strip().lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_token(token: str | None) -> None:
    """Refuse a token no client can send: blank (it would guard nothing, or refuse everyone), or
    with spaces around it (HTTP strips them from the `Authorization` header)."""
    if token and token != token.strip():
        what = "blank" if not token.strip() else "surrounded by whitespace"
        raise InsecureBindError(
            f"refusing a token that is {what} ({len(token)} characters): no client could send it "
            f"(HTTP strips spaces from headers); give --token or {TOKEN_ENV} a token without spaces around it"
        )


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve on a non-loopback address without a token, or with one no client can send."""
    check_token(token)
    if not is_loopback(host) and not token:
        raise InsecureBindError(
            f"refusing to serve on {host}: it is not a loopback address, so anyone who can reach it "
            f"could run the agent and its tools; set a token with --token or the {TOKEN_ENV} "
            "environment variable (clients send `Authorization: Bearer <token>`), or bind to 127.0.0.1"
        )


PROTECTED = ("/api/", "/v1/", "/a2a/", "/ag-ui")
"""The path prefixes a token protects: the API, its OpenAI-compatible face, its A2A endpoint and
its AG-UI endpoint (the A2A agent card stays public: it is where a client learns that a token is
wanted)."""


class BearerTokenMiddleware:
    """Answers 401 to `/api/`, `/v1/` (OpenAI-compatible), `/a2a/` and `/ag-ui` requests without
    `Authorization: Bearer <token>` (the OpenAI SDKs send their API key so)."""

    def __init__(self, app: ASGIApp, token: str, protected: Sequence[str] = PROTECTED) -> None:
        self.app = app
        self.protected = tuple(protected)
        """The path prefixes guarded (`mcp serve` guards its `/mcp`)."""
        self.expected = f"Bearer {token}".encode()
        register_secret(token, source="server token")  # never echoed in an event or a log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and str(scope.get("path", "")).startswith(self.protected):
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not secrets.compare_digest(given, self.expected):
                reason = "missing" if not given else "wrong"
                message = f"unauthorized: {reason} bearer token (send `Authorization: Bearer <token>`)"
                response = error_response(401, message, headers={"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods that change nothing; every other one is state-changing and must come from the server's
own pages (or a client that is no browser) with a JSON body."""


class HostRule:
    """The names this server answers to: the address and port a request arrived at (ASGI's
    `server`: the bound address, or for a wildcard bind the interface's), `localhost`, 127.0.0.1
    and [::1] on that port, plus `allowed_hosts` (`name`: any port, `name:port`: that one).
    The `Host` check and the same-origin check both ask it, so they cannot disagree."""

    def __init__(self, allowed_hosts: Sequence[str] = ()) -> None:
        self.extra: list[Authority] = []
        for entry in allowed_hosts:
            try:
                self.extra.append(parse_authority(entry))
            except ValueError as exc:
                raise ValueError(f"allowed host: {exc}") from None

    def allows(self, found: Authority, scope: Scope) -> bool:
        """Whether `found` (a `Host` or an origin's host and port) names this server."""
        server = scope.get("server")
        port = server[1] if server else None
        names = [*LOOPBACK_NAMES, _address(str(server[0]))] if server else [*LOOPBACK_NAMES]
        own = (Authority(name, port) for name in names)
        return any(allowed.matches(found) for allowed in (*own, *self.extra))


def _address(host: str) -> str:
    """The bound address as `Authority.host` spells it (an IPv6 address compressed)."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host.lower().rstrip(".")


class HostAllowList:
    """Answers 421 to a request whose `Host` is missing or not one of the server's names.

    A DNS-rebinding page reaches 127.0.0.1 under its own name, which its requests carry as
    `Host`; refusing that name before any route (the console and event streams included)
    leaves it nothing to read or drive."""

    def __init__(self, app: ASGIApp, rule: HostRule) -> None:
        self.app = app
        self.rule = rule

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        problem = self.problem(scope)
        if problem is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": problem[:120]})
        else:
            await error_response(421, problem)(scope, receive, send)

    def problem(self, scope: Scope) -> str | None:
        hosts = Headers(scope=scope).getlist("host")
        how = "start the server with --allowed-host NAME or set server.allowed_hosts"
        if len(hosts) != 1:
            return f"refused: a request needs exactly one Host header, got {len(hosts)}"
        try:
            found = parse_authority(hosts[0])
        except ValueError as exc:
            return f"refused: bad Host header: {exc}"
        if found.port is None:
            found = Authority(found.host, DEFAULT_PORTS.get(str(scope.get("scheme")), 80))
        if self.rule.allows(found, scope):
            return None
        return f"refused: this server does not answer to the host {hosts[0]!r} (to serve it, {how})"


class SameOriginJson:
    """Answers a state-changing request (any method but GET, HEAD, OPTIONS) 403 when a browser
    sends it for a page of another origin, and 415 when its body is not `application/json`.

    A request's `Origin` must name this server (a host `HostRule` allows) or be one of the
    CORS origins; `Origin: null` (sandboxed frames, files, redirects) never does. Without an
    `Origin`, `Sec-Fetch-Site: cross-site`/`same-site` still marks a foreign page; a client with
    neither header (curl, the openai SDK) is no browser and passes. JSON only, because the
    bodies a page may send without a preflight are `text/plain`, forms and multipart."""

    def __init__(self, app: ASGIApp, rule: HostRule, cors_origins: Sequence[str] = ()) -> None:
        self.app = app
        self.rule = rule
        self.cors_origins = {o.strip().rstrip("/").lower() for o in cors_origins}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in SAFE_METHODS:
            headers = Headers(scope=scope)
            problem = self.foreign(headers, scope)
            if problem is not None:
                await error_response(403, problem)(scope, receive, send)
                return
            media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if media != "application/json":
                given = f"Content-Type {headers['content-type']!r}" if media else "no Content-Type"
                route = f"{scope['method']} {scope['path']}"
                message = f"{route} takes a JSON body (Content-Type: application/json), got {given}"
                await error_response(415, message)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def foreign(self, headers: Headers, scope: Scope) -> str | None:
        """Why the request comes from a page of another origin, or None."""
        origins = headers.getlist("origin")
        if not origins:
            site = headers.get("sec-fetch-site", "").strip().lower()
            if site in ("cross-site", "same-site"):
                return f"refused: a {site} page may not change state here (Sec-Fetch-Site: {site})"
            return None
        for origin in origins:
            normal = origin.strip().rstrip("/").lower()
            if normal == "null":
                return "refused: a page of no origin (Origin: null) may not change state here"
            if normal in self.cors_origins or "*" in self.cors_origins:
                continue
            try:
                ours = self.rule.allows(origin_authority(origin), scope)
            except ValueError:
                ours = False
            if not ours:
                return (
                    f"refused: a page of the origin {origin!r} may not change state here "
                    "(only this server's own pages and its configured CORS origins may)"
                )
        return None


class BodyTooLarge(JianmuError):
    """Raised by `BodyLimit`'s receive when a streamed body passes the limit."""


class BodyLimit:
    """Answers 413 to a request body over `max_bytes`: at once when `Content-Length` says so
    (nothing is read), else (a chunked body) as soon as the bytes received pass the limit.

    The 413 says `Connection: close`, so the server stops reading what the client still
    sends instead of draining it."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def too_large(self, size: str) -> Response:
        message = (
            f"request body of {size} is over the limit of {self.max_bytes} bytes "
            "(server.max_body_bytes, --max-body-bytes)"
        )
        return error_response(413, message, headers={"Connection": "close"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).getlist("content-length")
        if declared:
            if len(set(declared)) != 1 or not declared[0].strip().isdigit():
                message = f"refused: Content-Length must be one number of bytes, got {', '.join(declared)}"
                await error_response(400, message, headers={"Connection": "close"})(scope, receive, send)
                return
            if int(declared[0]) > self.max_bytes:
                await self.too_large(f"{int(declared[0])} bytes")(scope, receive, send)
                return
        received = 0
        started = False

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge
            return message

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited, tracked)
        except BodyTooLarge:
            if started:  # too late to answer: the connection ends with the error
                raise
            await self.too_large(f"more than {self.max_bytes} bytes")(scope, receive, send)


class JsonCORSMiddleware(CORSMiddleware):
    """Starlette's CORS middleware, whose refused preflight (400) answers in the JSON error
    shape rather than plain text."""

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code < 400:
            return response
        headers = {
            k: v for k, v in response.headers.items() if k.lower() not in ("content-length", "content-type")
        }
        return error_response(response.status_code, bytes(response.body).decode(), headers=headers)
