"""OAuth 2.1 for MCP servers over streamable HTTP, on the MCP SDK's own auth pieces.

An `auth:` section of an `mcp_servers` entry (`MCPAuthConfig`) chooses the grant; the SDK's
`OAuthClientProvider` (an `httpx2.Auth`) then does what the MCP authorization spec asks of a
client: on a 401 it reads `WWW-Authenticate`, discovers the protected-resource metadata (RFC 9728)
and the authorization server's metadata (RFC 8414 / OpenID Connect discovery), uses a client ID
metadata document when the server takes one (`client_metadata_url`), else a pre-registered
client (`client_id`), else registers one (RFC 7591); it runs the authorization-code flow with
PKCE and resource indicators (RFC 8707), chooses scopes from the challenge, asks for more on a
403 `insufficient_scope` (step-up), asks for `offline_access` where offered and refreshes tokens
before they expire (a stored token's expiry is kept, so a later process refreshes it too).
`client_credentials` (machines: a secret, or a `private_key_jwt` key) uses the SDK's
client-credentials providers instead, and `identity_assertion` (enterprise cross-app access,
SEP-990) its identity-assertion provider, fed by an RFC 8693 token exchange at the identity
provider (the one leg the SDK leaves to the deployment). Nothing else re-implements a flow.

The one part a person plays — opening the authorization URL and coming back with a code — is an
`Authorize` callback: `jianmu-like mcp login` opens a browser and waits on a 127.0.0.1 callback
(`_login`); tests and the conformance client fetch the URL themselves. An agent run has none:
a server that needs a person fails with `MCPLoginRequiredError`, which says which command to run.

Secrets stay out of the file (`client_secret_env`, `private_key_env` name environment
variables) and out of every message: errors name HTTP statuses, servers and scopes, never a
token, a code or a secret; and every token, client secret, key and ID token is registered for
redaction by value (`_base.redact.register_secret`) as it passes, so what a server or a tool echoes of
one is masked in every error, event and log too.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qs, urlparse

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..._base.redact import redact_text, redacting_logger, register_secret
from ._content import MCPConnectError
from ._token_store import FileTokenStore, MemoryTokenStore

if TYPE_CHECKING:
    import httpx2
    from mcp.client.auth import TokenStorage

Authorize = Callable[[str], Awaitable[str]]
"""Given the authorization URL, have a person (or a test) authorize and return the URL the
browser was redirected to (the `redirect_uri` with `code`, `state` and maybe `iss` or `error`)."""

DEFAULT_CALLBACK_PORT = 33418
"""The port of the login callback on 127.0.0.1 (`redirect_uri`); registrations record it, so it
stays the same between logins unless `callback_port` says otherwise."""

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class MCPLoginRequiredError(MCPConnectError):
    """The server needs a person to authorize this client and no one can here (an agent run):
    the message says which command logs in."""


class MCPAuthError(MCPConnectError):
    """OAuth with the server failed (refused credentials, a discovery or registration error),
    or the server refused the client's token (HTTP 401 / 403)."""


class _OurSignals(logging.Filter):
    """The SDK logs every failure inside its OAuth flow with a traceback ("OAuth flow error"); a
    login this process cannot do is ours to report (`MCPLoginRequiredError`, with what to run),
    not an error log line before it."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, MCPConnectError)


# Its records are masked by value too (a token response quoted in an error, tracebacks included).
redacting_logger("mcp.client.auth.oauth2").addFilter(_OurSignals())


class MCPAuthConfig(BaseModel):
    """How the client authenticates to one HTTP MCP server (the `auth:` section of its entry).

    Without `client_id` the client registers itself (a client ID metadata document where the
    server takes one and `client_metadata_url` is set, else dynamic client registration).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    grant: Literal["authorization_code", "client_credentials", "identity_assertion"] = "authorization_code"
    """"authorization_code": a person logs in once (`jianmu-like mcp login`), the stored tokens are
    refreshed after; "client_credentials": a machine's own credentials, no person involved;
    "identity_assertion": enterprise cross-app access (SEP-990): the user's ID token from the
    company's identity provider is exchanged there for an identity assertion grant (RFC 8693),
    which the server's authorization server takes for a token (RFC 7523 jwt-bearer)."""
    client_id: str | None = None
    """A client registered beforehand with the authorization server (no dynamic registration)."""
    client_secret_env: str | None = None
    """The environment variable holding the client secret (never the secret itself)."""
    private_key_env: str | None = None
    """`client_credentials` with `private_key_jwt`: the environment variable holding the PEM key
    that signs the client assertion."""
    signing_algorithm: str = "RS256"
    """The JWS algorithm of the `private_key_jwt` assertion (RS256, ES256, ...)."""
    token_endpoint_auth_method: Literal["client_secret_basic", "client_secret_post", "none"] | None = None
    """How a pre-registered client authenticates at the token endpoint (default: basic with a
    secret, none without)."""
    scope: str | None = None
    """`client_credentials` and `identity_assertion`: the scopes to ask for (space-separated). The
    authorization-code grant takes the scopes the server's challenge names (and more on step-up)."""
    issuer: str | None = None
    """`client_credentials` (optional) and `identity_assertion` (required): the authorization server
    the credentials belong to; they are never sent to another."""
    id_token_env: str | None = None
    """`identity_assertion`: the environment variable holding the user's ID token from the
    identity provider (signing in there is the identity provider's business)."""
    idp_token_endpoint: str | None = None
    """`identity_assertion`: the identity provider's token endpoint (the token exchange)."""
    idp_client_id: str | None = None
    """`identity_assertion`: this client's ID at the identity provider."""
    idp_client_secret_env: str | None = None
    """`identity_assertion`: the environment variable holding the client secret at the identity
    provider, if it gave one."""
    client_metadata_url: str | None = None
    """An https URL whose document describes this client (a client ID metadata document), used as
    the client ID by servers that accept one instead of registering."""
    client_name: str = "jianmu_like"
    """How the client names itself when it registers."""
    callback_port: int = Field(DEFAULT_CALLBACK_PORT, ge=1, le=65535)
    """The port of `jianmu-like mcp login`'s callback on 127.0.0.1 (the `redirect_uri`)."""
    store: Literal["file", "memory"] = "file"
    """"file": tokens kept in the user's token file (0600) between runs; "memory": forgotten when
    the process ends."""

    @field_validator("client_secret_env", "private_key_env", "id_token_env", "idp_client_secret_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.match(value):
            raise ValueError(
                "must be the name of an environment variable (letters, digits, '_'), not a value"
            )
        return value

    @field_validator("client_metadata_url")
    @classmethod
    def _metadata_url(cls, value: str | None) -> str | None:
        if value is not None:
            parsed = urlparse(value)
            if parsed.scheme != "https" or parsed.path in ("", "/"):
                raise ValueError("must be an https URL with a path (a client ID metadata document)")
        return value

    @model_validator(mode="after")
    def _check_grant(self) -> MCPAuthConfig:
        if self.client_secret_env and self.private_key_env:
            raise ValueError("give `client_secret_env` or `private_key_env`, not both")
        if (self.client_secret_env or self.private_key_env) and not self.client_id:
            raise ValueError("`client_secret_env` and `private_key_env` need `client_id`")
        idp = ("id_token_env", "idp_token_endpoint", "idp_client_id", "idp_client_secret_env")
        if self.grant != "identity_assertion":
            given = [key for key in idp if getattr(self, key) is not None]
            if given:
                raise ValueError(f"{', '.join(given)} only apply to grant 'identity_assertion'")
        if self.grant == "identity_assertion":
            missing = [
                key
                for key in ("client_id", "client_secret_env", "issuer", "id_token_env", "idp_token_endpoint")
                if getattr(self, key) is None
            ]
            if missing:
                raise ValueError(f"grant 'identity_assertion' needs {', '.join(missing)}")
            if self.private_key_env or self.client_metadata_url:
                raise ValueError(
                    "`private_key_env` and `client_metadata_url` do not apply to grant 'identity_assertion'"
                )
            if self.token_endpoint_auth_method == "none":
                raise ValueError(
                    "grant 'identity_assertion' needs a client secret: token_endpoint_auth_method 'none'"
                )
            if self.idp_token_endpoint is not None and not self.idp_token_endpoint.startswith(
                ("https://", "http://")
            ):
                raise ValueError("`idp_token_endpoint` must be an http(s) URL")
        elif self.grant == "client_credentials":
            if not self.client_id or not (self.client_secret_env or self.private_key_env):
                raise ValueError(
                    "grant 'client_credentials' needs `client_id` and "
                    "`client_secret_env` or `private_key_env`"
                )
            if self.client_metadata_url:
                raise ValueError("`client_metadata_url` only applies to grant 'authorization_code'")
            if self.private_key_env and self.token_endpoint_auth_method:
                raise ValueError(
                    "`token_endpoint_auth_method` does not apply with `private_key_env` (private_key_jwt)"
                )
            if self.token_endpoint_auth_method == "none":
                raise ValueError(
                    "grant 'client_credentials' needs a secret or a key: token_endpoint_auth_method 'none'"
                )
        else:
            if self.private_key_env:
                raise ValueError(
                    "`private_key_env` (private_key_jwt) only applies to grant 'client_credentials'"
                )
            if self.scope is not None:
                raise ValueError(
                    "`scope` does not apply to grant 'authorization_code': the "
                    "server's challenge names the scopes (and step-up adds more)"
                )
            if self.issuer is not None:
                raise ValueError("`issuer` does not apply to grant 'authorization_code' (it is discovered)")
        return self

    @property
    def needs_person(self) -> bool:
        """The authorization-code grant: a person logs in (once, then refresh tokens)."""
        return self.grant == "authorization_code"

    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.callback_port}/callback"


def _secret(server: str, auth: MCPAuthConfig, variable: str | None, key: str) -> str | None:
    if variable is None:
        return None
    value = os.environ.get(variable)
    if not value:
        raise MCPAuthError(
            server, f"MCP server {server!r}: auth.{key}: environment variable {variable} is not set"
        )
    _register(value, f"mcp_servers.{server}.auth.{key}")
    return value


def _register(value: str | None, source: str) -> None:
    """Mask `value` by value wherever the framework shows text (`_base.redact.register_secret`)."""
    if value:
        register_secret(value, source=source)


class _RegisteringStore:
    """A `TokenStorage` that registers every token it hands over or keeps as a secret."""

    def __init__(self, inner: TokenStorage, source: str) -> None:
        self.inner, self.source = inner, source

    def _seen(self, tokens: Any) -> Any:
        if tokens is not None:
            _register(tokens.access_token, self.source)
            _register(tokens.refresh_token, self.source)
        return tokens

    async def get_tokens(self) -> Any:
        return self._seen(await self.inner.get_tokens())

    async def set_tokens(self, tokens: Any) -> None:
        await self.inner.set_tokens(self._seen(tokens))

    async def get_client_info(self) -> Any:
        info = await self.inner.get_client_info()
        _register(getattr(info, "client_secret", None), self.source)
        return info

    async def set_client_info(self, client_info: Any) -> None:
        _register(getattr(client_info, "client_secret", None), self.source)
        await self.inner.set_client_info(client_info)

    def expires_at(self) -> float | None:
        expires_at = getattr(self.inner, "expires_at", None)
        return expires_at() if callable(expires_at) else None

    def version(self) -> object:
        version = getattr(self.inner, "version", None)
        return version() if callable(version) else None


def token_store(url: str, auth: MCPAuthConfig) -> TokenStorage:
    """The store `auth.store` names for the server at `url`."""
    return FileTokenStore(url) if auth.store == "file" else MemoryTokenStore()


def login_required_message(server: str, target: str) -> str:
    return (
        f"MCP server {server!r} ({target}) needs you to log in (OAuth authorization code): run "
        f"`jianmu-like mcp login AGENT_FILE {server}` once; its tokens are then stored and refreshed"
    )


def _parse_redirect(server: str, landed: str) -> Any:
    from mcp.shared.auth import AuthorizationCodeResult

    query = {k: v[0] for k, v in parse_qs(urlparse(landed).query).items() if v}
    if "error" in query:
        detail = query.get("error_description") or ""
        why = f"{query['error']}{': ' + detail if detail else ''}"
        raise MCPAuthError(
            server, f"MCP server {server!r}: the authorization server refused the login: {why}"
        )
    code = query.get("code")
    if not code:
        raise MCPAuthError(server, f"MCP server {server!r}: the authorization redirect carried no code")
    return AuthorizationCodeResult(code=code, state=query.get("state"), iss=query.get("iss"))


def build_oauth(
    server: str,
    url: str,
    target: str,
    auth: MCPAuthConfig,
    *,
    authorize: Authorize | None,
    storage: TokenStorage | None = None,
) -> httpx2.Auth:
    """The SDK's OAuth provider for the server at `url`, as `auth` configures it.

    `authorize` plays the person's part of the authorization-code flow; without it a server that
    asks for one fails with `MCPLoginRequiredError`. `target` names the server in messages.
    """
    storage = _RegisteringStore(
        storage if storage is not None else token_store(url, auth), f"mcp_servers.{server}.auth tokens"
    )
    secret = _secret(server, auth, auth.client_secret_env, "client_secret_env")
    if auth.grant == "client_credentials":
        return _client_credentials(server, url, auth, storage, secret)
    if auth.grant == "identity_assertion":
        return _identity_assertion(server, url, auth, storage, secret)

    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata
    from pydantic import AnyUrl

    redirect = auth.redirect_uri()
    metadata = OAuthClientMetadata(
        client_name=auth.client_name,
        redirect_uris=[AnyUrl(redirect)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
    )
    landed: list[str] = []

    async def redirect_handler(authorization_url: str) -> None:
        if authorize is None:
            raise MCPLoginRequiredError(server, login_required_message(server, target))
        landed.append(await authorize(authorization_url))

    async def callback_handler() -> Any:
        return _parse_redirect(server, landed.pop())

    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        client_metadata_url=auth.client_metadata_url,
    )
    if auth.client_id is not None:
        method = auth.token_endpoint_auth_method or ("client_secret_basic" if secret else "none")
        # Pre-registered: known before any discovery, so the provider never registers.
        provider.context.client_info = OAuthClientInformationFull(
            client_id=auth.client_id,
            client_secret=secret,
            redirect_uris=[AnyUrl(redirect)],
            token_endpoint_auth_method=method,
            grant_types=["authorization_code", "refresh_token"],
        )
    _on_load(provider, storage)
    return provider


def _on_load(provider: Any, storage: TokenStorage) -> None:
    """What the provider's use of the store leaves out. It loads the store once (`_initialize`):
    a pre-registered client (from the configuration) must win over what the store holds, and a
    stored token's expiry be known, so an expired one is refreshed before it is presented. And
    another provider (another agent, another process) may have refreshed meanwhile, rotating the
    refresh token this one holds: when the store changed, it is read again before a request."""
    configured = provider.context.client_info
    initialize = provider._initialize
    version = getattr(storage, "version", None)
    loaded: list[object] = [None]

    async def _initialize() -> None:
        await initialize()
        if configured is not None:
            provider.context.client_info = configured
        expires_at = getattr(storage, "expires_at", None)
        if callable(expires_at) and provider.context.current_tokens is not None:
            provider.context.token_expiry_time = expires_at()
        if callable(version):
            loaded[0] = version()

    provider._initialize = _initialize
    if callable(version):
        flow = provider._auth_flow

        def _auth_flow(request: Any) -> Any:
            if provider._initialized and version() != loaded[0]:
                provider._initialized = False  # read the store again, under the flow's lock
            return flow(request)

        provider._auth_flow = _auth_flow


def _client_credentials(
    server: str, url: str, auth: MCPAuthConfig, storage: TokenStorage, secret: str | None
) -> httpx2.Auth:
    import warnings

    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )
    from mcp.shared.exceptions import MCPDeprecationWarning

    assert auth.client_id is not None  # the config's validator requires it
    with warnings.catch_warnings():
        # Omitting `issuer` is the SDK's documented (if deprecated) way of trusting discovery.
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        if auth.private_key_env:
            key = _secret(server, auth, auth.private_key_env, "private_key_env")
            assert key is not None
            signer = SignedJWTParameters(
                issuer=auth.client_id,
                subject=auth.client_id,
                signing_algorithm=auth.signing_algorithm,
                signing_key=key,
            )
            return PrivateKeyJWTOAuthProvider(
                server_url=url,
                storage=storage,
                client_id=auth.client_id,
                assertion_provider=signer.create_assertion_provider(),
                scope=auth.scope,
                issuer=auth.issuer,
            )
        assert secret is not None
        method = auth.token_endpoint_auth_method or "client_secret_basic"
        assert method != "none"
        return ClientCredentialsOAuthProvider(
            server_url=url,
            storage=storage,
            client_id=auth.client_id,
            client_secret=secret,
            token_endpoint_auth_method=method,
            scope=auth.scope,
            issuer=auth.issuer,
        )


TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"


def _identity_assertion(
    server: str, url: str, auth: MCPAuthConfig, storage: TokenStorage, secret: str | None
) -> httpx2.Auth:
    """SEP-990: the SDK's provider presents the identity assertion grant (leg 2); leg 1, getting
    one from the identity provider by RFC 8693 token exchange, is ours (the SDK leaves it to the
    deployment)."""
    import httpx2
    from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

    assert auth.client_id and auth.issuer and auth.idp_token_endpoint and secret
    endpoint = auth.idp_token_endpoint

    async def exchange(audience: str, resource: str) -> str:
        id_token = _secret(server, auth, auth.id_token_env, "id_token_env")
        idp_secret = _secret(server, auth, auth.idp_client_secret_env, "idp_client_secret_env")
        form = {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG,
            "audience": audience,
            "resource": resource,
            "subject_token": id_token or "",
            "subject_token_type": ID_TOKEN,
        }
        if auth.idp_client_id:
            form["client_id"] = auth.idp_client_id
        if idp_secret:
            form["client_secret"] = idp_secret
        if auth.scope:
            form["scope"] = auth.scope
        async with httpx2.AsyncClient(timeout=30) as client:
            try:
                response = await client.post(endpoint, data=form)
            except httpx2.HTTPError as exc:
                raise MCPAuthError(
                    server,
                    f"MCP server {server!r}: the identity provider could not be reached: "
                    f"{type(exc).__name__}",
                ) from None
        body: Any = None
        with contextlib.suppress(ValueError):
            body = response.json()
        granted = body.get("access_token") if isinstance(body, dict) else None
        if response.status_code != 200 or not isinstance(granted, str):
            error = body.get("error") if isinstance(body, dict) else None
            raise MCPAuthError(
                server,
                f"MCP server {server!r}: the identity provider refused the token exchange "
                f"(HTTP {response.status_code}{', ' + str(error) if error else ''})",
            )
        _register(granted, f"mcp_servers.{server}.auth identity assertion")
        return granted

    return IdentityAssertionOAuthProvider(
        server_url=url,
        storage=storage,
        client_id=auth.client_id,
        client_secret=secret,
        issuer=auth.issuer,
        assertion_provider=exchange,
        scope=auth.scope,
        token_endpoint_auth_method=(
            auth.token_endpoint_auth_method if auth.token_endpoint_auth_method != "none" else None
        )
        or "client_secret_basic",
    )


class HTTPRefusals:
    """The last 401 / 403 the MCP endpoint answered, kept for the error that follows it.

    The SDK's transport turns a refused POST into a JSON-RPC internal error (-32603), which says
    nothing about why; this response hook keeps the status and the challenge's `error` and
    `scope` (never a token) so the session can say what to do."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self.status: int | None = None
        self.error: str | None = None
        self.scope: str | None = None

    async def __call__(self, response: httpx2.Response) -> None:
        if str(response.request.url).split("?", 1)[0].rstrip("/") != self.url:
            return
        if response.status_code in (401, 403):
            from mcp.client.auth.utils import extract_field_from_www_auth

            self.status = response.status_code
            self.error = extract_field_from_www_auth(response, "error")
            self.scope = extract_field_from_www_auth(response, "scope")
        elif response.status_code < 400:
            self.status = None

    def explain(
        self, server: str, target: str, auth: MCPAuthConfig | None, *, header: bool = False
    ) -> str | None:
        """What a person should do about the last refusal (None when there was none); `header`:
        the entry sends its own Authorization header."""
        if self.status is None:
            return None
        where = f"MCP server {server!r} ({target})"
        scope = f" (scope {redact_text(self.scope)!r})" if self.scope else ""
        if self.status == 403:
            if self.error == "insufficient_scope":
                return (
                    f"{where} answered HTTP 403 Forbidden: the token lacks a scope it needs{scope}; "
                    f"log in again (`jianmu-like mcp login AGENT_FILE {server}`) with an account "
                    "that may grant it"
                )
            return f"{where} answered HTTP 403 Forbidden: this client's token may not use it{scope}"
        if auth is None and header:
            return (
                f"{where} answered HTTP 401 Unauthorized: it refused the token of the entry's "
                "Authorization header (expired or wrong?)"
            )
        if auth is None:
            return (
                f"{where} answered HTTP 401 Unauthorized: it requires OAuth; add `auth: {{}}` to its "
                f"`mcp_servers` entry and run `jianmu-like mcp login AGENT_FILE {server}`"
                " (or give `headers` with a token it accepts)"
            )
        if auth.grant == "client_credentials":
            return f"{where} answered HTTP 401 Unauthorized: it refused this client's credentials{scope}"
        return (
            f"{where} answered HTTP 401 Unauthorized{scope}: log in again with "
            f"`jianmu-like mcp login AGENT_FILE {server}`"
        )


def describe_auth_failure(server: str, target: str, exc: BaseException) -> str | None:
    """A message for an OAuth failure raised inside the transport (None: not one)."""
    if isinstance(exc, MCPConnectError):
        return str(exc)
    try:
        from mcp.client.auth import OAuthFlowError
    except ImportError:  # pragma: no cover - the SDK always has it
        return None
    if isinstance(exc, OAuthFlowError):
        return f"MCP server {server!r} ({target}): OAuth failed: {redact_text(str(exc))}"
    return None
