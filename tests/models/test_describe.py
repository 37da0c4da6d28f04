"""Which model answers is always said; the embedded model says why it was chosen and how to use a
real server (issue 34, item 3)."""

from __future__ import annotations

import pytest

from jianmu_like.models._client import ModelClient
from jianmu_like.models._describe import describe, describe_all
from jianmu_like.models._local_provider import LlamaCppProvider
from jianmu_like.testing import ScriptedOpenAIServer


def _embedded() -> ModelClient:
    return ModelClient(LlamaCppProvider("/m/smollm2-135m.gguf"), model="local/smollm2-135m")


def test_the_embedded_model_chosen_with_only_an_api_key_says_so_and_how_to_use_a_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    text = describe(_embedded())
    assert text.startswith("local/smollm2-135m (embedded model, xllamacpp backend, in this process): ")
    assert "OPENAI_API_KEY is set but no base URL, so the small embedded model answers" in text
    assert "OPENAI_BASE_URL=https://api.openai.com/v1" in text and "sk-test" not in text


def test_the_embedded_model_without_any_setting_says_how_to_use_a_real_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert describe(_embedded()).endswith(
        "no model server is configured, so the small embedded model answers; for a real one set "
        "OPENAI_BASE_URL=http://HOST:PORT/v1 (and JIANMU_MODEL if the server serves several)"
    )


def test_a_server_model_is_named_with_its_url_once_per_client() -> None:
    with ScriptedOpenAIServer(["unused"]) as srv:
        client = srv.client()
        named = ModelClient(client.provider, model="qwen3")
        assert describe_all([client, client, named]) == [
            f"{client.model} at {srv.base_url}",
            f"qwen3 at {srv.base_url}",
        ]
