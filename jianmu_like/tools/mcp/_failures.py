"""Why a connection to an MCP server failed or ended, in words that name the server and what
to do (the errors of `MCPSession`)."""

from __future__ import annotations

import asyncio

from ._auth import HTTPRefusals, describe_auth_failure
from ._config import MCPServerConfig


def leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (inner or list(exc.exceptions))[0]
    return exc


def sends_authorization(config: MCPServerConfig) -> bool:
    return any(key.lower() == "authorization" for key in config.headers)


def connection_closed(exc: BaseException) -> bool:
    import anyio
    from mcp import MCPError
    from mcp.types import CONNECTION_CLOSED

    if isinstance(exc, MCPError):
        return exc.code == CONNECTION_CLOSED
    return isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | ConnectionError)


def start_failure(
    config: MCPServerConfig, exc: BaseException, refusals: HTTPRefusals, returncode: int | None
) -> str:
    """Why the connection to the server could not be opened, for the `MCPConnectError`."""
    cause = leaf(exc)
    where = f"MCP server {config.name!r} ({config.describe()})"
    if config.transport == "http":
        explained = describe_auth_failure(config.name, config.describe(), cause)
        explained = explained or refusals.explain(
            config.name, config.describe(), config.auth, header=sends_authorization(config)
        )
        if explained is not None:
            return explained
    if connection_closed(cause):
        status = returncode
        exited = f" (exit status {status})" if status is not None else ""
        return f"{where} closed the connection before completing the MCP handshake{exited}"
    code = getattr(cause, "code", None)
    if isinstance(code, int):  # an MCPError: it answered, but not with a handshake
        return f"{where} refused the MCP handshake: {cause} (error {code})"
    verb = "could not be started" if config.transport == "stdio" else "could not be reached"
    return f"{where} {verb}: {type(cause).__name__}: {cause}"
