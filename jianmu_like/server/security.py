"""Safe by default: loopback binds only, unless a bearer token guards every API route.

An agent server runs tools on the host, so whoever reaches its API can act there. On loopback
only local users can; on any other address a token is required, checked with a constant-time
comparison on every `/api/` request.
"""

from __future__ import annotations

import ipaddress
import json
import secrets

from starlette.types import ASGIApp, Receive, Scope, Send

TOKEN_ENV = "JIANMU_SERVER_TOKEN"


class InsecureBindError(ValueError):
    """Binding to a non-loopback address without a token."""


def is_loopback(host: str) -> bool:
    """Whether `host` is a loopback address or `localhost`."""
    if host.strip().lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve on a non-loopback address without a token."""
    if not is_loopback(host) and not token:
        raise InsecureBindError(
            f"refusing to serve on {host}: it is not a loopback address, so anyone who can reach it "
            f"could run the agent and its tools; set a token with --token or the {TOKEN_ENV} "
            "environment variable (clients send `Authorization: Bearer <token>`), or bind to 127.0.0.1"
        )


class BearerTokenMiddleware:
    """Answers 401 to `/api/` requests without `Authorization: Bearer <token>`."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and str(scope.get("path", "")).startswith("/api/"):
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not secrets.compare_digest(given, self.expected):
                reason = "missing" if not given else "wrong"
                body = json.dumps(
                    {"error": f"unauthorized: {reason} bearer token (send `Authorization: Bearer <token>`)"}
                ).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
