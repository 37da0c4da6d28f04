"""LlamaCppProvider with a fake llama backend (no llama.cpp needed), and the resolve() fallback."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from jianmu_like import Agent, ReActConfig, ReActState, create_react_node, human
from jianmu_like._base.config import ConfigError, JianmuConfig
from jianmu_like.models import ModelClient, ModelError, ModelRequest, weights
from jianmu_like.models import _local_provider as lp
from jianmu_like.models import local_backends as lb
from jianmu_like.models._local_provider import LlamaCppProvider
from jianmu_like.models.local_backends import Generation, GenerationStopped, LocalBackend, SamplingParams
from jianmu_like.testing import wait_until_async
from jianmu_like.testing._scripted import fast_resilience
from jianmu_like.tools._toolset import ToolSet
from jianmu_like.tools.builtin import calculator

SCHEMAS = ToolSet.from_providers([]).with_tools([calculator]).schemas()


class FakeBackend(LocalBackend):
    """Replies from a list; records what it was asked."""

    def __init__(self, replies: Sequence[str], *, block: threading.Event | None = None) -> None:
        super().__init__("/nowhere/fake.gguf")
        self.replies = list(replies)
        self.block = block
        self.calls: list[dict[str, Any]] = []
        self.closed = False

    @property
    def loaded(self) -> bool:
        return False

    def load(self) -> None:
        pass

    def generate(
        self,
        turns: Sequence[dict[str, str]],
        *,
        schema: dict[str, Any] | None = None,
        grammar: str | None = None,
        params: SamplingParams,
        should_stop: Callable[[], bool] | None = None,
    ) -> Generation:
        self.calls.append({"turns": list(turns), "schema": schema, "params": params})
        if self.block is not None:
            while not (should_stop and should_stop()):
                self.block.wait(0.01)
            raise GenerationStopped
        return Generation(self.replies.pop(0), prompt_tokens=100, completion_tokens=12, finish_reason="stop")

    def close(self) -> None:
        self.closed = True


def provider(*replies: str, **kwargs: Any) -> tuple[LlamaCppProvider, FakeBackend]:
    backend = FakeBackend(replies, **kwargs)
    return LlamaCppProvider("/models/tiny.gguf", backend=backend), backend


async def test_tool_call_answer_usage_and_base_url() -> None:
    prov, backend = provider('{"tool": "calculator", "arguments": {"expression": "6*7"}}', '{"answer": "42"}')
    assert prov.base_url == "local://tiny.gguf"
    request = ModelRequest(messages=[human("6*7?")], tools=SCHEMAS, temperature=0.1, max_tokens=64)
    first = await prov.chat(request, model="local/tiny")
    assert first.finish_reason == "tool_calls" and first.model == "local/tiny"
    assert first.message.tool_calls and first.message.tool_calls[0].id == "call_1"
    assert first.usage.model_dump() == {
        "prompt_tokens": 100,
        "completion_tokens": 12,
        "total_tokens": 112,
        "calls": 1,
    }
    assert backend.calls[0]["params"] == SamplingParams(temperature=0.1, max_tokens=64)
    assert "oneOf" in backend.calls[0]["schema"]
    second = await prov.chat(ModelRequest(messages=[human("again")], tools=SCHEMAS), model="m")
    assert second.message.content == "42" and second.finish_reason == "stop"
    assert backend.calls[1]["params"].max_tokens == 256 and backend.calls[1]["params"].temperature == 0.0


async def test_forced_tool_choice_restricts_the_grammar() -> None:
    prov, backend = provider('{"tool": "calculator", "arguments": {"expression": "1"}}')
    request = ModelRequest(messages=[human("q")], tools=SCHEMAS, tool_choice="required")
    await prov.chat(request, model="m")
    assert backend.calls[0]["schema"]["properties"]["tool"] == {"const": "calculator"}


async def test_without_tools_no_grammar_and_plain_text() -> None:
    prov, backend = provider("  Hello there.  ")
    response = await prov.chat(
        ModelRequest(messages=[human("hi")], extra_params={"min_p": 0.1, "n": 3}), model="m"
    )
    assert response.message.content == "Hello there."
    assert backend.calls[0]["schema"] is None
    assert backend.calls[0]["params"].extra == (("min_p", 0.1),)  # unknown options are dropped


async def test_stream_delivers_the_answer_once() -> None:
    prov, _ = provider('{"answer": "done"}')
    deltas: list[str] = []
    request = ModelRequest(messages=[human("q")], tools=SCHEMAS, stream=True)
    await prov.chat(request, model="m", on_delta=deltas.append)
    assert deltas == ["done"]


async def test_timeout_stops_the_generation() -> None:
    prov, _ = provider(block=threading.Event())
    request = ModelRequest(messages=[human("q")], timeout=0.05)
    with pytest.raises(ModelError, match=r"exceeded the 0\.05s timeout") as info:
        await prov.chat(request, model="m")
    assert not info.value.retryable and info.value.base_url == "local://tiny.gguf"


async def test_cancellation_stops_the_generation() -> None:
    prov, backend = provider(block=threading.Event())
    task = asyncio.create_task(prov.chat(ModelRequest(messages=[human("q")]), model="m"))
    await wait_until_async(lambda: backend.calls, "the generation to start", interval=0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await prov.aclose()  # waits for the lock: the worker has stopped
    assert backend.closed


async def test_closed_provider_and_missing_file_are_model_errors(tmp_path: Path) -> None:
    prov, _ = provider('{"answer": "x"}')
    await prov.aclose()
    with pytest.raises(ModelError, match="closed"):
        await prov.chat(ModelRequest(messages=[human("q")]), model="m")
    missing = LlamaCppProvider(tmp_path / "absent.gguf")
    with pytest.raises(ModelError, match=r"not found.*models pull") as info:
        await missing.chat(ModelRequest(messages=[human("q")]), model="m")
    assert not info.value.retryable


async def test_react_agent_runs_on_the_provider() -> None:
    prov, backend = provider(
        '{"tool": "calculator", "arguments": {"expression": "25 * 4 + 10"}}', '{"answer": "110"}'
    )
    client = ModelClient(prov, model="local/tiny", resilience=fast_resilience())
    root = create_react_node(model_client=client, tools=[calculator], config=ReActConfig(max_iterations=4))
    result = await Agent(root, state_schema=ReActState).run(input_data={"messages": [human("25*4+10?")]})
    assert result.status == "success" and result.final_answer == "110"
    observation = backend.calls[1]["turns"][-1]
    assert observation["role"] == "user" and observation["content"].startswith(
        "Observation (calculator): 110"
    )


@pytest.fixture
def pulled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The default weights 'pulled' (a sparse file of the right size), every backend 'installed'."""
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "JIANMU_MODEL", lp.NO_LOCAL_MODEL_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(lp, "backend_problem", lambda name: None)
    spec = weights.spec_of(None)
    path = weights.models_dir() / spec.filename
    path.parent.mkdir(parents=True)
    with path.open("wb") as fh:
        fh.truncate(spec.size)
    return path


async def test_resolve_falls_back_to_the_pulled_local_model(pulled: Path) -> None:
    client = ModelClient.resolve(config=JianmuConfig())
    assert isinstance(client.provider, LlamaCppProvider)
    assert client.model == f"local/{weights.DEFAULT}" and client.provider.model_path == pulled
    assert not client.provider.backend.loaded  # nothing is loaded before the first call
    named = ModelClient.resolve("local/smollm2-135m", config=JianmuConfig())
    assert named.model == "local/smollm2-135m"


def test_resolve_fallback_opt_out_and_reasons(pulled: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(lp.NO_LOCAL_MODEL_ENV, "1")
    with pytest.raises(ConfigError, match=r"OPENAI_BASE_URL.*models pull.*disabled by JIANMU_NO_LOCAL_MODEL"):
        ModelClient.resolve(config=JianmuConfig())
    monkeypatch.delenv(lp.NO_LOCAL_MODEL_ENV)
    pulled.unlink()
    with pytest.raises(ConfigError, match="weights are not pulled"):
        ModelClient.resolve(config=JianmuConfig())
    monkeypatch.setattr(lp, "backend_problem", lb.backend_problem)  # the real check, on a module
    monkeypatch.setitem(lb._MODULES, "xllamacpp", "xllamacpp_not_installed_here")  # that is absent
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[local\]'.*xllamacpp is not installed"):
        ModelClient.resolve(config=JianmuConfig())


def test_the_configured_backend_is_used_and_checked(pulled: Path) -> None:
    config = JianmuConfig.model_validate({"models": {"local_backend": "llama_cpp_python"}})
    client = ModelClient.resolve(config=config)
    assert isinstance(client.provider, LlamaCppProvider)
    assert isinstance(client.provider.backend, lb.LlamaCppPythonBackend)
    assert isinstance(ModelClient.resolve(config=JianmuConfig()).provider.backend, lb.XllamacppBackend)
    with pytest.raises(ValueError, match="local_backend"):
        JianmuConfig.model_validate({"models": {"local_backend": "ollama"}})


def test_provider_backend_by_name_or_instance() -> None:
    assert LlamaCppProvider("/m/x.gguf").backend.name == "xllamacpp"
    chosen = LlamaCppProvider("/m/x.gguf", backend="llama_cpp_python", n_ctx=512, seed=3)
    assert isinstance(chosen.backend, lb.LlamaCppPythonBackend)
    assert (chosen.backend.n_ctx, chosen.backend.seed) == (512, 3)
    assert "backend='llama_cpp_python'" in repr(chosen)
    with pytest.raises(
        ValueError, match=r"unknown local backend 'ollama'; valid: xllamacpp, llama_cpp_python"
    ):
        LlamaCppProvider("/m/x.gguf", backend="ollama")


def test_a_configured_server_wins_over_the_local_model(pulled: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://server/v1")
    client = ModelClient.resolve(config=JianmuConfig())
    assert client.provider.base_url == "http://server/v1"


class _Sink:
    def __init__(self) -> None:
        self.content: list[str] = []
        self.thoughts: list[str] = []

    def __call__(self, text: str) -> None:
        self.content.append(text)

    def reasoning(self, text: str) -> None:
        self.thoughts.append(text)


async def test_the_embedded_model_keeps_a_think_block_as_reasoning_not_answer() -> None:
    sink = _Sink()
    request = ModelRequest(messages=[human("6*7?")], stream=True)
    response = await provider("<think>six sevens</think>42")[0].chat(request, model="m", on_delta=sink)
    assert response.message.content == "42" and response.message.reasoning_content == "six sevens"
    assert sink.content == ["42"] and sink.thoughts == ["six sevens"]
    assert "six sevens" not in str(response.message.to_openai())  # never sent back


async def test_replies_under_the_tool_grammar_are_not_split() -> None:
    answer: Any = '{"answer": "<think>x</think> is literal"}'
    response = await provider(answer)[0].chat(ModelRequest(messages=[human("q")], tools=SCHEMAS), model="m")
    assert response.message.content == "<think>x</think> is literal"
    assert response.message.reasoning_content is None
