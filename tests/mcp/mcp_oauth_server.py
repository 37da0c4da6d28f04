"""An MCP server behind OAuth 2.1, built from the MCP SDK's own server-side auth pieces.

    python mcp_oauth_server.py     # 127.0.0.1, a free port; prints "PORT <n>"

The SDK's `MCPServer` with `AuthSettings` serves the protected-resource metadata, the
authorization-server metadata, dynamic client registration, /authorize and /token, and refuses
requests without a valid bearer token (401 with `WWW-Authenticate`). The provider below is the
authorization server's memory: it approves every authorization at once (the test is the
person who clicks "allow"), checks PKCE through the SDK's token handler, issues access tokens
that live `OAUTH_TOKEN_SECONDS` (env, default 3600) and refresh tokens that rotate.

Tools: `whoami` (the caller's client id and scopes), `grants` (how many tokens each grant issued),
`revoke_all` (every token refused from now on), `echo_token` (a tool that leaks the caller's token).
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from typing import Any

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

TOKEN_SECONDS = int(os.environ.get("OAUTH_TOKEN_SECONDS", "3600"))
SCOPES = ["mcp", "offline_access"]


class MemoryAuthorizationServer:
    """Clients, codes and tokens in memory; every authorization is approved."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.grants: dict[str, int] = {"authorization_code": 0, "refresh_token": 0}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = AuthorizationCode(
            code=secrets.token_urlsafe(24),
            scopes=params.scopes or ["mcp"],
            expires_at=time.time() + 300,
            client_id=client.client_id or "",
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        self.codes[code.code] = code
        return construct_redirect_uri(str(params.redirect_uri), code=code.code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access = secrets.token_urlsafe(24)
        refresh = secrets.token_urlsafe(24)
        expires = int(time.time()) + TOKEN_SECONDS
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=TOKEN_SECONDS,
            refresh_token=refresh,
            scope=" ".join(scopes),
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        self.grants["authorization_code"] += 1
        return self._issue(client.client_id or "", authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)  # rotated
        self.grants["refresh_token"] += 1
        return self._issue(client.client_id or "", scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: Any) -> None:
        self.access.pop(getattr(token, "token", ""), None)
        self.refresh.pop(getattr(token, "token", ""), None)


def main() -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    provider = MemoryAuthorizationServer()
    server = MCPServer(
        "jianmu-oauth-test",
        log_level="WARNING",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            validate_token_resource=True,
            required_scopes=["mcp"],
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=SCOPES, default_scopes=["mcp"]
            ),
        ),
    )

    @server.tool()
    def whoami() -> str:
        """The caller's client id and scopes."""
        from mcp.server.auth.middleware.auth_context import get_access_token

        token = get_access_token()
        return f"client={token.client_id if token else None} scopes={token.scopes if token else None}"

    @server.tool()
    def echo_token() -> str:
        """A careless tool: it says the bearer token it was called with."""
        from mcp.server.auth.middleware.auth_context import get_access_token

        token = get_access_token()
        return f"your token is {token.token if token else None}"

    @server.tool()
    def revoke_all() -> str:
        """Forget every token issued (the next request's token is refused)."""
        provider.access.clear()
        provider.refresh.clear()
        return "revoked"

    @server.tool()
    def grants() -> str:
        """How many tokens each grant issued."""
        return " ".join(f"{k}={v}" for k, v in sorted(provider.grants.items()))

    print(f"PORT {port}", flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
