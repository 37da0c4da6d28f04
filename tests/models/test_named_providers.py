"""Models named by provider (`anthropic:claude-sonnet-4-5`): one table, overridable, and each
provider's documented request quirks applied in one place, checked against the scripted server
refusing what the real provider refuses."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from jianmu_like import ModelClient, human, load_agent
from jianmu_like._base.config import ConfigError, JianmuConfig, ModelsConfig, ProviderEntryConfig
from jianmu_like.models import Message, ModelCallFailed, ModelRequest
from jianmu_like.models._named_providers import PROVIDERS
from jianmu_like.testing import ScriptedOpenAIServer

ROOT = Path(__file__).resolve().parents[2]


def api_key(client: ModelClient) -> str:
    return str(client.provider._client.api_key)  # type: ignore[attr-defined]


def sdk_url(client: ModelClient) -> str:
    return str(client.provider._client.base_url)  # type: ignore[attr-defined]


def providers(**entries: dict[str, Any]) -> JianmuConfig:
    return JianmuConfig(
        models=ModelsConfig(providers={k: ProviderEntryConfig(**v) for k, v in entries.items()})
    )


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "JIANMU_MODEL"):
        monkeypatch.delenv(name, raising=False)
    for entry in PROVIDERS.values():
        if entry.api_key_env:
            monkeypatch.delenv(entry.api_key_env, raising=False)
    monkeypatch.setenv("JIANMU_NO_LOCAL_MODEL", "1")


@pytest.mark.parametrize("name", [n for n, e in PROVIDERS.items() if e.base_url is not None])
async def test_every_provider_name_gives_its_url_and_key(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    entry = PROVIDERS[name]
    if entry.api_key_env:
        monkeypatch.setenv(entry.api_key_env, f"sk-{name}-key-0123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://not-this-one/v1")  # the default endpoint is not used
    client = ModelClient.resolve(f"{name}:some-model:tag", config=JianmuConfig())
    assert client.model == "some-model:tag"  # only the first colon splits (ollama's tags keep theirs)
    assert sdk_url(client).rstrip("/") == (entry.base_url or "").rstrip("/")
    assert api_key(client) == (f"sk-{name}-key-0123456789" if entry.api_key_env else "not-needed")
    await client.aclose()


def test_a_missing_key_names_its_variable() -> None:
    with pytest.raises(ConfigError, match=r"anthropic:claude-x needs an API key: .*ANTHROPIC_API_KEY"):
        ModelClient.resolve("anthropic:claude-x", config=JianmuConfig())


def test_an_unknown_provider_suggests_the_closest() -> None:
    with pytest.raises(ConfigError, match=r"unknown provider 'antropic' \(did you mean 'anthropic'\?\)"):
        ModelClient.resolve("antropic:claude-x", config=JianmuConfig())


async def test_with_a_server_an_unknown_prefix_is_part_of_the_model_name() -> None:
    client = ModelClient.resolve("qwen2.5:7b", base_url="http://127.0.0.1:9/v1", config=JianmuConfig())
    assert client.model == "qwen2.5:7b"
    await client.aclose()


async def test_overrides_entry_by_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROXY_KEY", "sk-proxy-0123456789")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-0123456789")
    cfg = providers(
        anthropic={"base_url": "http://proxy.test/v1"},
        mycorp={"base_url": "http://llm.corp.test/v1", "api_key_env": "PROXY_KEY"},
    )
    client = ModelClient.resolve("anthropic:claude-x", config=cfg)
    assert (sdk_url(client), api_key(client)) == ("http://proxy.test/v1/", "sk-ant-0123456789")
    await client.aclose()
    client = ModelClient.resolve("mycorp:big", config=cfg)
    assert (sdk_url(client), api_key(client), client.model) == (
        "http://llm.corp.test/v1/",
        "sk-proxy-0123456789",
        "big",
    )
    await client.aclose()
    # Python: explicit arguments win over the configuration's entry
    client = ModelClient.resolve(
        "anthropic:claude-x", base_url="http://direct.test/v1", api_key_env="PROXY_KEY", config=cfg
    )
    assert (sdk_url(client), api_key(client)) == ("http://direct.test/v1/", "sk-proxy-0123456789")
    await client.aclose()


def test_local_is_the_embedded_model(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def embedded(cls: type[ModelClient], name: str, *_: Any) -> ModelClient:
        asked.append(name)
        raise ConfigError("stop here")

    monkeypatch.setattr(ModelClient, "_embedded", classmethod(embedded))
    for name in ("local:qwen3-0.6b", "local:"):
        with pytest.raises(ConfigError, match="stop here"):
            ModelClient.resolve(name, config=JianmuConfig())
    assert asked == ["local/qwen3-0.6b", ""]


async def test_openai_quirks_rename_max_tokens_and_refuse_top_k(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-0123456789")
    request = ModelRequest(messages=[human("hi")], max_tokens=50)
    async with ScriptedOpenAIServer(["hello", "hello"], reject_fields=("max_tokens", "top_k")) as srv:
        plain = ModelClient.resolve("gpt-x", base_url=srv.base_url, config=JianmuConfig())
        with pytest.raises(ModelCallFailed, match="'max_tokens' is not supported"):
            await plain.complete(request)  # the server refuses it, as OpenAI's reasoning models do
        await plain.aclose()
        client = ModelClient.resolve("openai:gpt-x", config=providers(openai={"base_url": srv.base_url}))
        response = await client.complete(request)
        assert response.message.content == "hello"
        assert srv.requests[-1]["max_completion_tokens"] == 50 and "max_tokens" not in srv.requests[-1]
        sent = len(srv.requests)
        with pytest.raises(ModelCallFailed, match=r"openai refuses the request field 'top_k'"):
            await client.complete(ModelRequest(messages=[human("hi")], top_k=5))
        assert len(srv.requests) == sent  # refused here, not after a round trip
        await client.aclose()


async def test_groq_quirks_drop_message_names_and_refuse_logprobs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROQ_API_KEY", "gsk-0123456789")
    named = Message(role="user", content="hi", name="alice")
    async with ScriptedOpenAIServer(["hello", "hello"], reject_fields=("messages[].name", "logprobs")) as srv:
        plain = ModelClient.resolve("llama", base_url=srv.base_url, config=JianmuConfig())
        with pytest.raises(ModelCallFailed, match=r"'messages\[\]\.name' is not supported"):
            await plain.complete(ModelRequest(messages=[named]))
        await plain.aclose()
        client = ModelClient.resolve("groq:llama", config=providers(groq={"base_url": srv.base_url}))
        response = await client.complete(ModelRequest(messages=[named]))
        assert response.message.content == "hello"
        assert srv.requests[-1]["messages"] == [{"role": "user", "content": "hi"}]
        with pytest.raises(ModelCallFailed, match=r"groq refuses the request field 'logprobs'"):
            await client.complete(ModelRequest(messages=[human("hi")], extra_params={"logprobs": True}))
        await client.aclose()


async def test_a_hosted_url_without_a_name_gets_its_providers_quirks() -> None:
    client = ModelClient.resolve("gpt-x", base_url="https://api.openai.com/v1", config=JianmuConfig())
    assert client.provider.quirks is PROVIDERS["openai"].quirks  # type: ignore[attr-defined]
    await client.aclose()


async def test_anthropic_ignores_json_mode_so_structured_skip_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-0123456789")
    client = ModelClient.resolve("anthropic:claude-x", config=JianmuConfig())
    assert client.supports_json_mode is False
    await client.aclose()


async def test_agent_file_model_by_provider_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_GROQ", "gsk-file-0123456789")
    async with ScriptedOpenAIServer(["from groq"]) as srv:
        path = tmp_path / "agent.yaml"
        path.write_text(
            "kind: react\nmodel:\n  name: 'groq:llama-3'\n"
            f"  base_url: '{srv.base_url}'\n  api_key_env: MY_GROQ\n"
        )
        result = await load_agent(path).run({"messages": [human("hi")]})
        assert result.final_answer == "from groq"
        assert srv.requests[0]["model"] == "llama-3"


def test_the_docs_table_is_the_code_table() -> None:
    page = (ROOT / "docs" / "guides" / "models.md").read_text()
    rows = re.findall(r"^\| `(\w+):` \| (`[^`]*`|embedded) \| (`\w+`|none) \|", page, re.MULTILINE)
    documented = {
        name: (None if url == "embedded" else url.strip("`"), None if key == "none" else key.strip("`"))
        for name, url, key in rows
    }
    assert documented == {name: (e.base_url, e.api_key_env) for name, e in PROVIDERS.items()}


async def test_fallbacks_stay_on_the_models_server(monkeypatch: pytest.MonkeyPatch) -> None:
    from jianmu_like._base.config import ResilienceConfig

    monkeypatch.setenv("GROQ_API_KEY", "gsk-0123456789")
    same = ResilienceConfig(fallback_models=["groq:llama-small", "plain-name"])
    client = ModelClient.resolve("groq:llama-big", resilience=same, config=JianmuConfig())
    assert client.resilience.fallback_models == ["llama-small", "plain-name"]
    await client.aclose()
    other = ResilienceConfig(fallback_models=["openai:gpt-x"])
    with pytest.raises(
        ConfigError, match=r"fallback model 'openai:gpt-x': fallbacks are tried on groq's server"
    ):
        ModelClient.resolve("groq:llama-big", resilience=other, config=JianmuConfig())


async def test_a_provider_name_set_per_agent_reaches_its_server_without_prefix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GROQ_API_KEY", "gsk-0123456789")
    async with ScriptedOpenAIServer(["hi"]) as srv:
        client = ModelClient.resolve("groq:big", config=providers(groq={"base_url": srv.base_url}))
        await client.complete(ModelRequest(messages=[human("x")], model="groq:small"))  # models.react
        assert srv.requests[-1]["model"] == "small"
        with pytest.raises(ModelCallFailed, match="names the provider anthropic, but this client calls"):
            await client.complete(ModelRequest(messages=[human("x")], model="anthropic:claude-x"))
        assert len(srv.requests) == 1
        await client.aclose()


async def test_a_provider_prefixed_fallback_on_the_same_host_is_that_servers_name() -> None:
    from jianmu_like._base.config import ResilienceConfig

    same_host = ResilienceConfig(fallback_models=["ollama:mistral:7b"])
    client = ModelClient.resolve(
        "qwen2.5:7b", base_url="http://localhost:11434/v1", resilience=same_host, config=JianmuConfig()
    )
    assert (client.model, client.resilience.fallback_models) == ("qwen2.5:7b", ["mistral:7b"])
    await client.aclose()


async def test_an_unset_key_variable_of_a_plain_url_falls_back_as_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-default-0123456789")
    client = ModelClient.resolve("m", base_url="http://127.0.0.1:9/v1", api_key_env="UNSET_KEY_VAR")
    assert api_key(client) == "sk-default-0123456789"
    await client.aclose()
