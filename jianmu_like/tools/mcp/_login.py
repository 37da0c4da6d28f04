"""`jianmu-like mcp login` / `logout`: a person authorizes the client once, in a browser.

The login connects to the server the way a run does (an `MCPToolProvider` from the agent file's
`mcp_servers:` entry), with an `Authorize` callback that prints the authorization URL, opens a
browser where one is available, and waits for the authorization server's redirect on
`http://127.0.0.1:PORT/callback` (loopback only, one request, bounded in time). The SDK checks
the `state` and exchanges the code; the tokens land in the configured store (the user's 0600
token file). `logout` forgets a server's tokens and registration.
"""

from __future__ import annotations

import asyncio
import contextlib
import webbrowser
from collections.abc import Callable, Sequence
from urllib.parse import parse_qs, urlparse

from ..._base.redact import redact_url
from ._auth import Authorize, MCPAuthError
from ._config import MCPConfigError, MCPServerConfig
from ._token_store import FileTokenStore

LOGIN_TIMEOUT = 300.0
"""Seconds a login waits for the browser to come back."""

_PAGE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nConnection: close\r\n"
    b"Cache-Control: no-store\r\n\r\n"
    b"<!doctype html><title>jianmu-like</title><p>Authorization received; you can close this "
    b"window and return to the terminal.</p>"
)
_NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


def find_server(servers: Sequence[MCPServerConfig], name: str, *, where: str) -> MCPServerConfig:
    """The server named `name` among an agent file's `servers` (`where` names the file)."""
    for server in servers:
        if server.name == name:
            return server
    known = ", ".join(repr(s.name) for s in servers) or "none"
    raise MCPConfigError(f"{where}: mcp_servers: no server named {name!r} (servers: {known})")


def _query(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(url).query).items() if v}


def loopback_authorize(
    port: int, *, say: Callable[[str], None], open_browser: bool = True, timeout: float = LOGIN_TIMEOUT
) -> Authorize:
    """An `Authorize` that shows the URL to a person and waits for the redirect on 127.0.0.1."""

    async def authorize(url: str) -> str:
        landed: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        state = _query(url).get("state")

        async def on_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                async with asyncio.timeout(10):
                    line = (await reader.readline()).decode("latin-1")
                    while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                        pass
                parts = line.split()
                target = parts[1] if len(parts) >= 2 and parts[0] == "GET" else ""
                # Only the redirect of this login: another page's request to the callback (a
                # forged code, a stale tab) carries another `state` and changes nothing.
                if (
                    target.startswith("/callback?")
                    and _query(target).get("state") == state
                    and not landed.done()
                ):
                    writer.write(_PAGE)
                    landed.set_result(f"http://127.0.0.1:{port}{target}")
                else:
                    writer.write(_NOT_FOUND)  # a favicon, a probe, another login: not ours
                await writer.drain()
            except (TimeoutError, ConnectionError, UnicodeError):
                pass
            finally:
                writer.close()

        try:
            server = await asyncio.start_server(on_request, "127.0.0.1", port)
        except OSError as exc:
            raise MCPAuthError(
                "login", f"cannot listen for the login callback on 127.0.0.1:{port}: {exc.strerror}"
            ) from None
        async with server:
            say(f"Open this URL to authorize (waiting up to {timeout:g} s):\n\n  {url}\n")
            if open_browser:
                with contextlib.suppress(Exception):
                    webbrowser.open(url)
            try:
                async with asyncio.timeout(timeout):
                    return await landed
            except TimeoutError:
                raise MCPAuthError("login", f"no authorization came back within {timeout:g} s") from None

    return authorize


async def login(
    config: MCPServerConfig, *, say: Callable[[str], None], authorize: Authorize | None = None
) -> str:
    """Log in to the server of `config`; what was done, for the person. `authorize` defaults to
    the browser and the loopback callback."""
    from ._provider import MCPToolProvider

    auth = config.auth
    if auth is None:
        raise MCPConfigError(
            f"server {config.name}: auth: not configured; add `auth: {{}}` to its entry to use OAuth"
        )
    if auth.store == "memory":
        raise MCPConfigError(
            f"server {config.name}: auth.store is 'memory': a login would be forgotten when this command ends"
        )
    store = FileTokenStore(config.url or "")
    if auth.needs_person:
        # A fresh authorization, even over tokens that still work (another account, more scopes);
        # the client registration is kept.
        store.forget_tokens()
    provider = MCPToolProvider(config)
    provider.authorize = authorize or loopback_authorize(auth.callback_port, say=say)
    try:
        tools = await provider.get_tools()
    finally:
        await provider.close()
    how = "logged in" if auth.needs_person else "obtained a token with the client's credentials"
    return (
        f"MCP server {config.name!r} ({redact_url(config.url)}): {how}; {len(tools)} tool(s) offered. "
        f"Tokens are stored in {store.path}."
    )


def logout(config: MCPServerConfig) -> str:
    """Forget the stored tokens and registration of the server of `config`."""
    if config.url is None:
        raise MCPConfigError(f"server {config.name}: not an HTTP server; nothing to log out of")
    store = FileTokenStore(config.url)
    found = store.forget()
    where = f"MCP server {config.name!r} ({redact_url(config.url)})"
    return f"{where}: tokens forgotten." if found else f"{where}: no stored tokens."
