"""OAuth 2.1 with HTTP MCP servers (`auth:`), against a real server behind the SDK's own
authorization server pieces (tests/mcp/mcp_oauth_server.py): what a missing login says, `mcp
login` through the 127.0.0.1 callback, the 0600 token file, refresh on a later run, logout, and
secrets never in a message. The flows' edges (discovery variants, CIMD, step-up, client
credentials, cross-app access) are the conformance suite's (test_conformance.py)."""

from __future__ import annotations

import asyncio
import os
import re
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml

from jianmu_like.testing import PATIENCE
from jianmu_like.tools.mcp._auth import MCPAuthConfig, MCPLoginRequiredError
from jianmu_like.tools.mcp._config import MCPConfigError, parse_mcp_servers
from jianmu_like.tools.mcp._content import MCPConnectError, MCPServerError
from jianmu_like.tools.mcp._login import login, logout
from jianmu_like.tools.mcp._provider import MCPToolProvider
from jianmu_like.tools.mcp._token_store import FileTokenStore

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


class OAuthServer:
    def __init__(self, token_seconds: int) -> None:
        env = {**os.environ, "OAUTH_TOKEN_SECONDS": str(token_seconds)}
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / "mcp_oauth_server.py")], stdout=subprocess.PIPE, text=True, env=env
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("PORT "):
            self.stop()
            raise RuntimeError(f"the OAuth test server did not start: {line!r}")
        self.url = f"http://127.0.0.1:{int(line.split()[1])}/mcp"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(PATIENCE)
        if self.process.stdout is not None:
            self.process.stdout.close()


@pytest.fixture(scope="module")
def server() -> Iterator[OAuthServer]:
    # Access tokens live 2 s: long enough for a login and a call, short enough to see a refresh.
    running = OAuthServer(token_seconds=2)
    yield running
    running.stop()


@pytest.fixture
def token_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "config" / "jianmu_like" / "mcp-tokens.json"
    monkeypatch.setenv("JIANMU_MCP_TOKENS", str(path))
    return path


async def browser(url: str) -> str:
    """A person who clicks "allow": the test authorization server redirects at once."""
    async with httpx2.AsyncClient(timeout=PATIENCE) as client:
        response = await client.get(url, follow_redirects=False)
    assert response.status_code in (302, 303, 307), response.text
    return str(response.headers["location"])


# -- configuration ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("auth", "words"),
    [
        ({"client_secret": "s3cret"}, "client_secret: unknown key"),
        ({"grant": "client_credentials", "client_id": "a"}, "needs `client_id` and `client_secret_env`"),
        ({"scope": "read"}, "`scope` does not apply to grant 'authorization_code'"),
        (
            {"client_id": "a", "client_secret_env": "not a name"},
            "must be the name of an environment variable",
        ),
        ({"client_metadata_url": "http://example.com/c.json"}, "must be an https URL with a path"),
        ({"grant": "identity_assertion", "client_id": "a"}, "needs client_secret_env, issuer, id_token_env"),
        ({"id_token_env": "T"}, "only apply to grant 'identity_assertion'"),
    ],
)
def test_bad_auth_sections_are_refused_naming_the_key(auth: dict[str, Any], words: str) -> None:
    with pytest.raises(MCPConfigError) as caught:
        parse_mcp_servers({"hosted": {"url": "https://mcp.example.com/mcp", "auth": auth}})
    assert words in str(caught.value)
    assert "s3cret" not in str(caught.value)


def test_auth_is_for_http_servers_and_not_beside_an_authorization_header() -> None:
    with pytest.raises(MCPConfigError, match="`auth` only apply to transport 'http'"):
        parse_mcp_servers({"local": {"command": "x", "auth": {}}})
    with pytest.raises(MCPConfigError, match="not both"):
        parse_mcp_servers(
            {"hosted": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer x"}, "auth": {}}}
        )
    (config,) = parse_mcp_servers({"hosted": {"url": "https://h/mcp", "auth": {}}})
    assert config.auth == MCPAuthConfig()


# -- a server that needs OAuth ---------------------------------------------------------------


async def test_a_401_says_the_status_the_server_and_what_to_do(server: OAuthServer) -> None:
    provider = MCPToolProvider(name="hosted", url=server.url)
    with pytest.raises(MCPConnectError) as caught:
        await provider.get_tools()
    message = str(caught.value)
    assert "MCP server 'hosted'" in message and "HTTP 401 Unauthorized" in message
    assert "add `auth: {}`" in message and "jianmu-like mcp login AGENT_FILE hosted" in message
    assert "-32603" not in message

    with_header = MCPToolProvider(
        name="hosted", url=server.url, headers={"Authorization": "Bearer stale-token-123"}
    )
    with pytest.raises(MCPConnectError) as caught:
        await with_header.get_tools()
    message = str(caught.value)
    assert "HTTP 401 Unauthorized: it refused the token of the entry's Authorization header" in message
    assert "stale-token-123" not in message


async def test_a_run_without_a_login_says_how_to_log_in(server: OAuthServer, token_file: Path) -> None:
    provider = MCPToolProvider(name="hosted", url=server.url, auth={})
    with pytest.raises(MCPLoginRequiredError, match=r"run `jianmu-like mcp login AGENT_FILE hosted`"):
        await provider.get_tools()
    # The client registered itself (kept for the login), but holds no token.
    assert not FileTokenStore(server.url).logged_in()


async def test_login_stores_tokens_for_the_user_only_and_later_runs_refresh_them(
    server: OAuthServer, token_file: Path
) -> None:
    (config,) = parse_mcp_servers({"hosted": {"url": server.url, "auth": {}}})
    said: list[str] = []
    done = await login(config, say=said.append, authorize=browser)
    assert "logged in" in done and str(token_file) in done

    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(token_file.parent.stat().st_mode) == 0o700
    store = FileTokenStore(server.url)
    tokens = await store.get_tokens()
    assert tokens is not None and tokens.refresh_token
    first_access = tokens.access_token

    # A later run (a new provider, no one to log in): the stored token has expired by now.
    expires_at = store.expires_at()
    assert expires_at is not None
    deadline = time.monotonic() + PATIENCE
    while time.time() <= expires_at + 0.05:  # bounded: the token lives 2 s
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    async with MCPToolProvider(config) as provider:
        assert (await provider.call("whoami", {})).startswith("client=")
        assert "refresh_token=1" in await provider.call("grants", {})
    refreshed = await store.get_tokens()
    assert refreshed is not None and refreshed.access_token != first_access

    # Nothing secret in what a person or a log sees.
    shown = " ".join([done, *said, repr(store), repr(config)])
    for secret in (first_access, refreshed.access_token, refreshed.refresh_token or "-"):
        assert secret not in shown

    assert "tokens forgotten" in logout(config)
    assert "no stored tokens" in logout(config)
    with pytest.raises(MCPLoginRequiredError):
        await MCPToolProvider(config).get_tools()


def test_the_mcp_login_command_waits_for_the_browser_on_127_0_0_1(
    server: OAuthServer, tmp_path: Path, token_file: Path
) -> None:
    """`jianmu-like mcp login FILE SERVER` end to end: the URL printed, a browser (here httpx)
    follows it to the authorization server and back to the command's callback."""
    with socketserver_port() as port:
        agent = {"name": "a", "mcp_servers": {"hosted": {"url": server.url, "auth": {"callback_port": port}}}}
    agent_file = tmp_path / "agent.yaml"
    agent_file.write_text(yaml.safe_dump(agent))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JIANMU_MCP_TOKENS": str(token_file)}
    command = [sys.executable, "-m", "jianmu_like", "mcp", "login", str(agent_file), "hosted", "--no-browser"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert process.stderr is not None
        url = None
        deadline = time.monotonic() + PATIENCE
        while url is None and time.monotonic() < deadline:
            line = process.stderr.readline()
            assert line, "the command ended before printing the URL"
            found = re.search(r"(http://127\.0\.0\.1:\d+/authorize\?\S+)", line)
            url = found.group(1) if found else None
        assert url is not None
        # Another page calling the callback (a forged code) is not this login's redirect.
        forged = httpx2.get(f"http://127.0.0.1:{port}/callback?code=evil&state=other", timeout=PATIENCE)
        assert forged.status_code == 404
        page = httpx2.get(url, follow_redirects=True, timeout=PATIENCE)
        assert page.status_code == 200 and "Authorization received" in page.text
        out, err = process.communicate(timeout=PATIENCE)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(PATIENCE)
    assert process.returncode == 0, err
    assert "MCP server 'hosted'" in out and "logged in" in out
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    # `validate` says a run can reach it now.
    shown = subprocess.run(
        [sys.executable, "-m", "jianmu_like", "validate", str(agent_file)],
        capture_output=True, text=True, env=env, timeout=PATIENCE, check=True,
    ).stdout  # fmt: skip
    assert f"mcp server hosted: reaches {server.url} (OAuth: logged in)" in shown


class socketserver_port:
    """A free port on 127.0.0.1 (closed again on exit, for the command to bind)."""

    def __enter__(self) -> int:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        return int(self.sock.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        self.sock.close()


async def test_client_credentials_secret_comes_from_the_environment(
    server: OAuthServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MISSING_SECRET", raising=False)
    provider = MCPToolProvider(
        name="machine",
        url=server.url,
        auth={
            "grant": "client_credentials",
            "client_id": "m",
            "client_secret_env": "MISSING_SECRET",
            "store": "memory",
        },
    )
    with pytest.raises(MCPConnectError, match="environment variable MISSING_SECRET is not set"):
        await provider.get_tools()


async def test_tokens_revoked_during_a_run_end_in_how_to_log_in(
    server: OAuthServer, token_file: Path
) -> None:
    """The server stops taking the token (and its refresh token) between two calls: the SDK's
    provider tries to refresh, then to authorize again, and with no one to log in the call fails
    saying which command to run."""
    (config,) = parse_mcp_servers({"hosted": {"url": server.url, "auth": {}}})
    await login(config, say=lambda _text: None, authorize=browser)
    async with MCPToolProvider(config) as provider:
        assert (await provider.call("revoke_all", {})) == "revoked"
        with pytest.raises(MCPServerError) as caught:
            await provider.call("whoami", {})
    assert "run `jianmu-like mcp login AGENT_FILE hosted`" in str(caught.value)


def test_a_403_names_the_missing_scope_and_a_refused_token_says_so() -> None:
    from jianmu_like.tools.mcp._auth import HTTPRefusals

    url = "https://mcp.example.com/mcp"
    refusals = HTTPRefusals(url)
    challenge = 'Bearer error="insufficient_scope", scope="files.write", resource_metadata="https://x/y"'
    response = httpx2.Response(
        403, headers={"WWW-Authenticate": challenge}, request=httpx2.Request("POST", url)
    )
    asyncio.run(refusals(response))
    message = refusals.explain("files", url, MCPAuthConfig())
    assert message is not None
    assert "MCP server 'files'" in message and "HTTP 403 Forbidden" in message
    assert "scope 'files.write'" in message and "jianmu-like mcp login AGENT_FILE files" in message

    # Another URL's answer (a metadata document, the token endpoint) is not the server's.
    other = httpx2.Response(401, request=httpx2.Request("POST", "https://auth.example.com/token"))
    asyncio.run(refusals(other))
    assert "403" in (refusals.explain("files", url, None) or "")
    # A success clears it.
    asyncio.run(refusals(httpx2.Response(200, request=httpx2.Request("POST", url))))
    assert refusals.explain("files", url, None) is None


async def test_a_login_this_run_cannot_do_is_not_logged_as_an_sdk_error(
    server: OAuthServer, token_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(MCPLoginRequiredError):
        await MCPToolProvider(name="hosted", url=server.url, auth={}).get_tools()
    assert not [r for r in caplog.records if r.name.startswith("mcp.client.auth")]


async def test_every_token_and_secret_is_registered_for_redaction_by_value(
    server: OAuthServer, token_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tokens the client holds and the client secret the server gave it are registered for
    redaction by value as they pass (`_base.redact.register_secret`)."""
    from jianmu_like.tools.mcp import _auth

    registered: list[tuple[str, str]] = []
    real = _auth.register_secret

    def recording(value: object, *, source: str = "configuration") -> bool:
        registered.append((str(value), source))
        return real(value, source=source)

    monkeypatch.setattr(_auth, "register_secret", recording)
    (config,) = parse_mcp_servers({"hosted": {"url": server.url, "auth": {}}})
    await login(config, say=lambda _text: None, authorize=browser)
    store = FileTokenStore(server.url)
    tokens, client = await store.get_tokens(), await store.get_client_info()
    assert tokens is not None and client is not None and client.client_secret
    values = {value for value, _source in registered}
    assert {tokens.access_token, tokens.refresh_token, client.client_secret} <= values
    assert {source for _value, source in registered} == {"mcp_servers.hosted.auth tokens"}


async def test_two_agents_sharing_a_login_follow_each_other_s_refresh(
    server: OAuthServer, token_file: Path
) -> None:
    """Refresh tokens rotate: when one provider refreshes, the refresh token the other holds is
    spent. The other reads the store again (it changed) instead of failing into a new login."""
    (config,) = parse_mcp_servers({"hosted": {"url": server.url, "auth": {}}})
    await login(config, say=lambda _text: None, authorize=browser)
    store = FileTokenStore(server.url)
    async with MCPToolProvider(config) as first, MCPToolProvider(config) as second:
        assert (await first.call("whoami", {})).startswith("client=")
        assert (await second.call("whoami", {})).startswith("client=")
        expires_at = store.expires_at()
        assert expires_at is not None
        deadline = time.monotonic() + PATIENCE
        while time.time() <= expires_at + 0.05:  # bounded: the token lives 2 s
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        before = grants(await first.call("grants", {}))  # refreshes, rotating
        assert (await second.call("whoami", {})).startswith("client=")  # takes first's tokens
        after = grants(await second.call("grants", {}))
        assert after == before  # no second refresh, no new authorization


def grants(text: str) -> dict[str, int]:
    return {k: int(v) for k, v in (part.split("=") for part in text.split())}


async def test_a_tool_that_echoes_the_token_shows_the_model_and_the_events_a_mask(
    server: OAuthServer, token_file: Path
) -> None:
    from jianmu_like import Agent, create_react_node, human
    from jianmu_like.telemetry.events import Event
    from jianmu_like.testing import ScriptedOpenAIServer, call, reply

    (config,) = parse_mcp_servers({"hosted": {"url": server.url, "auth": {}}})
    await login(config, say=lambda _text: None, authorize=browser)
    tokens = await FileTokenStore(server.url).get_tokens()
    assert tokens is not None

    def model(request: dict[str, Any]) -> Any:
        if not [m for m in request["messages"] if m["role"] == "tool"]:
            return call("echo_token")
        return reply("done")

    async with MCPToolProvider(config) as provider:
        with ScriptedOpenAIServer(model) as srv:
            agent = Agent(create_react_node(model_client=srv.client(), tool_providers=[provider]))
            events: list[Event] = []
            agent.telemetry.subscribe(events.append)
            result = await agent.run({"messages": [human("what is my token?")]})
            [observation] = [m["content"] for m in srv.requests[-1]["messages"] if m["role"] == "tool"]
    assert result.status == "success"
    current = (await FileTokenStore(server.url).get_tokens()) or tokens
    assert observation.startswith("your token is ") and current.access_token not in observation
    assert current.access_token not in repr([e.data for e in events])
