"""Secrets never show: API keys in the configuration, credentials embedded in URLs."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest

from jianmu_like._base.config import ConfigError, JianmuConfig, explain_config, get_config, load_config
from jianmu_like._base.redact import (
    MIN_SECRET_LENGTH,
    redact,
    redact_secrets,
    redact_text,
    redact_url,
    register_secret,
    registered_secrets,
)
from jianmu_like.models import ModelCallFailed, ModelClient, ModelRequest, human
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, reply
from jianmu_like.tools.mcp._config import MCPServerConfig

KEY = "sk-configured-abcdefghijklmnop"
PASSWORD = "hunter2-url-password"


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.chdir(tmp_path)
    for name in ("JIANMU_CONFIG", "OPENAI_API_KEY", "OPENAI_BASE_URL", "JIANMU__PROVIDER__API_KEY"):
        monkeypatch.delenv(name, raising=False)
    get_config(reload=True)
    yield
    monkeypatch.undo()
    get_config(reload=True)


def test_configured_api_key_is_hidden_but_reaches_the_client(tmp_path: Path) -> None:
    (tmp_path / "jianmu.yaml").write_text(
        f"provider:\n  api_key: {KEY}\n  base_url: https://user:{PASSWORD}@llm.example/v1?api_key=q\n"
    )
    config = get_config(reload=True)
    assert config.provider.api_key is not None and config.provider.api_key.get_secret_value() == KEY
    _, sources = explain_config()
    for text in [repr(config), str(config), repr(sources), json.dumps(sources.values, default=str)]:
        assert KEY not in text and PASSWORD not in text
    assert KEY not in json.dumps(config.model_dump(mode="json"))  # a dump is data: only the key is masked
    assert sources.values["provider.base_url"][0] == "https://llm.example/v1?api_key=***"
    assert "https://llm.example/v1?api_key=***" in repr(config)
    client = ModelClient.resolve(env_override=False)
    assert client.provider._client.api_key == KEY  # type: ignore[attr-defined]  # unwrapped for the SDK
    assert PASSWORD not in repr(client) and PASSWORD not in repr(client.provider)


def test_api_key_from_the_environment_is_a_secret_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JIANMU__PROVIDER__API_KEY", KEY)
    config = load_config()
    assert KEY not in repr(config)
    assert config.provider.api_key is not None and config.provider.api_key.get_secret_value() == KEY


def test_a_bad_api_key_value_is_not_echoed_in_the_error(tmp_path: Path) -> None:
    (tmp_path / "jianmu.yaml").write_text(f"provider:\n  api_key: [{KEY}]\n")
    with pytest.raises(ConfigError) as info:
        load_config()
    assert "provider.api_key" in str(info.value) and KEY not in str(info.value)


def test_explicit_config_object_key_is_used() -> None:
    config = JianmuConfig.model_validate({"provider": {"base_url": "http://127.0.0.1:9/v1", "api_key": KEY}})
    client = ModelClient.resolve(config=config, env_override=False)
    assert client.provider._client.api_key == KEY  # type: ignore[attr-defined]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_connection_errors_and_events_show_the_url_without_credentials() -> None:
    url = f"http://user:{PASSWORD}@127.0.0.1:{free_port()}/v1?token={PASSWORD}"
    client = ModelClient.resolve(
        "m", base_url=url, api_key=KEY, config=JianmuConfig.model_validate({"resilience": {"max_retries": 0}})
    )
    seen: list[tuple[str, dict[str, Any]]] = []
    with pytest.raises(ModelCallFailed) as info:
        await client.complete(
            ModelRequest(messages=[human("hi")]),
            on_event=lambda event, /, **data: seen.append((event.type, data)),
        )
    await client.aclose()
    text = " ".join([str(info.value), repr(info.value.attempts), repr(client), json.dumps(seen, default=str)])
    assert "could not connect" in str(info.value)
    assert f"url=http://127.0.0.1:{url.split(':')[3].split('/')[0]}/v1?token=***" in str(info.value)
    assert PASSWORD not in text and KEY not in text


async def test_timeouts_against_a_server_with_credentials_in_its_url_hide_them() -> None:
    async with ScriptedOpenAIServer([reply("late", delay=PATIENCE)]) as srv:
        url = srv.base_url.replace("http://", f"http://user:{PASSWORD}@")
        client = ModelClient.resolve(
            "m",
            base_url=url,
            config=JianmuConfig.model_validate({"resilience": {"max_retries": 0}}),
            timeout=0.2,
        )
        with pytest.raises(ModelCallFailed) as info:
            await client.complete(ModelRequest(messages=[human("hi")]))
        await client.aclose()
    assert "timed out" in str(info.value) and srv.base_url in str(info.value)
    assert PASSWORD not in str(info.value)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://user:key@host/v1", "https://host/v1"),
        ("https://token@host:8443/v1", "https://host:8443/v1"),
        ("https://host/v1?api_key=abc&model=x", "https://host/v1?api_key=***&model=x"),
        (
            "https://host/s?sig=1&Key=2&access_token=3#frag",
            "https://host/s?sig=***&Key=***&access_token=***#frag",
        ),
        ("https://host/s?x-amz-signature=1&page=2", "https://host/s?x-amz-signature=***&page=2"),
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_urls_in_free_text_lose_their_credentials() -> None:
    text = f"connect to https://u:{PASSWORD}@h/v1 failed; retry http://h/x?token={PASSWORD}."
    assert redact_text(text) == "connect to https://h/v1 failed; retry http://h/x?token=***"


def test_mcp_server_url_display_hides_query_tokens() -> None:
    config = MCPServerConfig.model_validate({"url": f"https://u:{PASSWORD}@mcp.example/mcp?token={PASSWORD}"})
    assert config.describe() == "https://mcp.example/mcp?token=***"
    assert PASSWORD not in repr(config)


# -- redaction by value (issue 33.1) ---------------------------------------------------------


def test_a_registered_value_is_masked_raw_url_encoded_and_json_escaped() -> None:
    value = 'v4l/ue+"with&specials'
    assert register_secret(value, source="test")
    text = f"a {value} b {quote(value, safe='')} c {quote_plus(value)} d {json.dumps(value)}"
    assert redact_text(text) == 'a *** b *** c *** d "***"'
    assert redact({"nested": [text]}) == {"nested": ['a *** b *** c *** d "***"']}
    assert redact_secrets(text) == 'a *** b *** c *** d "***"'


@pytest.mark.parametrize(
    "short", ["1", "true", "8080", "EMPTY", "x" * (MIN_SECRET_LENGTH - 1), None, 12345678]
)
def test_short_values_and_non_text_are_not_secrets(short: object) -> None:
    assert not register_secret(short)
    if isinstance(short, str):
        assert redact_secrets(f"port {short} is {short}") == f"port {short} is {short}"


def test_every_declared_secret_registers_when_the_configuration_is_read(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from jianmu_like.server._security import BearerTokenMiddleware
    from jianmu_like.tools.mcp._config import parse_mcp_servers

    monkeypatch.setenv("JIANMU_TEST_HEADER_TOKEN", "hdr-token-from-env-123")
    parse_mcp_servers(
        {
            "a": {"command": "srv", "env": {"DB_PASSWORD": "env-value-abc-123", "PORT": "8080"}},
            "b": {
                "url": "https://mcp.example/mcp",
                "headers": {"Authorization": "Bearer ${JIANMU_TEST_HEADER_TOKEN}"},
            },
        }
    )
    (tmp_path / "jianmu.yaml").write_text("provider:\n  api_key: configured-key-value-xyz\n")
    load_config()
    ModelClient.resolve("m", base_url="http://127.0.0.1:9/v1", api_key="explicit-key-value-xyz")
    BearerTokenMiddleware(lambda *a: None, "server-token-value-xyz")  # type: ignore[arg-type,return-value]
    text = " ".join(
        [
            "env-value-abc-123",
            "hdr-token-from-env-123",
            "configured-key-value-xyz",
            "explicit-key-value-xyz",
            "server-token-value-xyz",
            "port 8080",
        ]
    )
    assert redact_text(text) == "*** *** *** *** *** port 8080"
    sources = registered_secrets()
    assert "mcp_servers.a.env.DB_PASSWORD" in sources and "provider.api_key" in sources
    assert all("value" not in source for source in sources)  # names what declared it, never the value


def test_standard_log_records_of_mcp_modules_are_masked(caplog: pytest.LogCaptureFixture) -> None:
    from jianmu_like.tools.mcp import _session

    register_secret("logged-secret-value", source="test")
    with caplog.at_level(logging.WARNING, logger=_session.logger.name):
        _session.logger.warning("server said %s", "logged-secret-value!")
    assert "server said ***!" in caplog.text and "logged-secret-value" not in caplog.text


def test_data_keeps_secret_looking_names_when_masked_by_value_only() -> None:
    from jianmu_like._base.redact import redact_secrets_in

    register_secret("elicited-secret-value", source="test")
    form = {"message": "token elicited-secret-value expired", "schema": {"password": {"type": "string"}}}
    assert redact_secrets_in(form) == {
        "message": "token *** expired",
        "schema": {"password": {"type": "string"}},
    }
