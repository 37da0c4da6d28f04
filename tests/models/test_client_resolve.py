"""ModelClient.resolve(): explicit arguments > environment > configuration."""

from __future__ import annotations

from typing import Any

import pytest

from jianmu_like._base.config import (
    ConfigError,
    JianmuConfig,
    LLMConfig,
    ModelsConfig,
    ProviderConfig,
    ResilienceConfig,
)
from jianmu_like.models import ModelClient


def config(**provider: Any) -> JianmuConfig:
    return JianmuConfig(
        provider=ProviderConfig(**provider),
        models=ModelsConfig(default="cfg-model"),
        llm=LLMConfig(timeout=33.0),
        resilience=ResilienceConfig(max_retries=5),
    )


def api_key(client: ModelClient) -> str:
    return str(client.provider._client.api_key)  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "JIANMU_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JIANMU_NO_LOCAL_MODEL", "1")  # no embedded-model fallback (tested elsewhere)


async def test_config_is_the_last_resort() -> None:
    client = ModelClient.resolve(config=config(base_url="http://cfg/v1", api_key="cfg-key"))
    assert client.provider.base_url == "http://cfg/v1"
    assert client.model == "cfg-model"
    assert api_key(client) == "cfg-key"
    assert client.provider.timeout == 33.0  # type: ignore[attr-defined]
    assert client.resilience.max_retries == 5
    await client.aclose()


async def test_environment_beats_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    monkeypatch.setenv("JIANMU_MODEL", "env-model")
    client = ModelClient.resolve(config=config(base_url="http://cfg/v1", api_key="cfg-key"))
    assert (client.provider.base_url, client.model, api_key(client)) == (
        "http://env/v1",
        "env-model",
        "env-key",
    )
    await client.aclose()


async def test_explicit_arguments_beat_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    monkeypatch.setenv("JIANMU_MODEL", "env-model")
    policy = ResilienceConfig(max_retries=0)
    client = ModelClient.resolve(
        "arg-model",
        base_url="http://arg/v1",
        api_key="arg-key",
        config=config(base_url="http://cfg/v1"),
        resilience=policy,
        timeout=4.0,
    )
    assert (client.provider.base_url, client.model, api_key(client)) == (
        "http://arg/v1",
        "arg-model",
        "arg-key",
    )
    assert client.resilience is policy
    assert client.provider.timeout == 4.0  # type: ignore[attr-defined]
    await client.aclose()


async def test_env_override_false_ignores_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env/v1")
    monkeypatch.setenv("JIANMU_MODEL", "env-model")
    client = ModelClient.resolve(config=config(base_url="http://cfg/v1"), env_override=False)
    assert (client.provider.base_url, client.model) == ("http://cfg/v1", "cfg-model")
    await client.aclose()


async def test_missing_api_key_uses_a_placeholder() -> None:
    client = ModelClient.resolve(config=config(base_url="http://localhost:8000/v1"))
    assert api_key(client) == "not-needed"
    await client.aclose()


def test_missing_base_url_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="OPENAI_BASE_URL"):
        ModelClient.resolve(config=config())
    monkeypatch.setenv("OPENAI_BASE_URL", "")  # empty counts as unset
    with pytest.raises(ConfigError, match="base_url"):
        ModelClient.resolve(config=config(), api_key="k")


async def test_api_key_not_in_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-do-not-print-me-42"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    client = ModelClient.resolve(config=config(base_url="http://cfg/v1"))
    assert secret not in repr(client)
    assert secret not in repr(client.provider)
    assert "http://cfg/v1" in repr(client)
    await client.aclose()
