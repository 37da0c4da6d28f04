"""The calculator agent against llama.cpp's real HTTP server, with the embedded model's weights.

xllamacpp's `Server` listens on 127.0.0.1 (`testing.llama_server`), the GGUF's Jinja chat
template rendering the prompts, as a user's `llama-server` would: its `/props` says the
template has no tool support, and it ignores `tools` (answering 200 with prose). Each tool
protocol runs end to end over HTTP; `json` and `auto` must answer and call the calculator as
the embedded path does (bench/real_server.py measures ten questions). At temperature 0 the
model is deterministic, so answers are asserted. Skipped, saying why, without xllamacpp or the
pulled weights. Two questions at most per protocol: CI has two cores.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jianmu_like import ModelClient, human, load_agent
from jianmu_like._base.config import get_config
from jianmu_like.models._server_probe import PROBES
from jianmu_like.testing import PATIENCE
from jianmu_like.testing._llama_server import LlamaHTTPServer, unavailable

PRESET = Path(__file__).resolve().parents[2] / "presets" / "react.yaml"
REASON = unavailable()
pytestmark = [pytest.mark.local, pytest.mark.skipif(REASON is not None, reason=REASON or "")]


@pytest.fixture(scope="module")
def server() -> Iterator[LlamaHTTPServer]:
    with LlamaHTTPServer(alias="smollm2-135m") as running:
        yield running


@pytest.fixture(autouse=True)
def patient_calls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """Built-in defaults (no configuration file), and calls a loaded 2-core machine can finish."""
    empty = tmp_path / "jianmu.yaml"
    empty.write_text("{}\n")
    monkeypatch.setenv("JIANMU_CONFIG", str(empty))
    monkeypatch.setenv("JIANMU__LLM__TIMEOUT", f"{2 * PATIENCE:g}")
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "JIANMU_MODEL"):
        monkeypatch.delenv(name, raising=False)
    get_config(reload=True)
    yield
    monkeypatch.undo()
    get_config(reload=True)


def _client(server: LlamaHTTPServer, protocol: str) -> ModelClient:
    return ModelClient.resolve(base_url=server.base_url, api_key="none", tool_protocol=protocol)  # type: ignore[arg-type]


async def _ask(client: ModelClient, question: str) -> tuple[str, str | None, list[str], set[str]]:
    """The run's status, answer (or why it stopped), the tools it called and the protocols used."""
    agent = load_agent(PRESET, model_client=client)
    protocols: set[str] = set()
    agent.telemetry.subscribe(
        lambda e: protocols.add(str(e.data["tool_protocol"])) if e.data.get("tool_protocol") else None
    )
    result = await agent.run(input_data={"task": question, "messages": [human(question)]})
    calls = [c.name for m in result.state.messages for c in (m.tool_calls or ())]
    answer = result.final_answer if result.status == "success" else f"{result.termination}"
    return result.status, answer, calls, protocols


async def test_the_probe_reads_llama_cpp_props(server: LlamaHTTPServer) -> None:
    PROBES.forget(server.base_url)
    async with ModelClient.resolve(base_url=server.base_url, api_key="none") as client:
        caps = await client.capabilities()
        assert (caps.kind, caps.supports_tools, caps.grammar, caps.json_schema) == (
            "llama.cpp",
            False,
            True,
            True,
        )
        assert caps.context_window == server.n_ctx
        assert caps.served_model == "smollm2-135m"
        assert await client.served_model() == "smollm2-135m"  # no model configured: the served one


@pytest.mark.parametrize("protocol", ["json", "auto"])
async def test_json_and_auto_answer_with_the_calculator(server: LlamaHTTPServer, protocol: str) -> None:
    async with ModelClient.resolve(
        base_url=server.base_url, api_key="none", tool_protocol=protocol
    ) as client:
        for question, expected in (("What is 25 * 4 + 10?", "110"), ("What is 17 * 23?", "391")):
            status, answer, calls, protocols = await _ask(client, question)
            assert status == "success", answer
            assert "calculator" in calls, (question, calls)
            assert expected in (answer or ""), (question, answer)
            assert protocols == {"json"}, protocols  # auto: straight to json, /props said no tools


async def test_text_protocol_runs_under_its_grammar(server: LlamaHTTPServer) -> None:
    async with _client(server, "text") as client:
        status, answer, calls, protocols = await _ask(client, "What is 25 * 4 + 10?")
    assert protocols == {"text"}
    assert status == "success", answer
    assert calls == ["calculator"]
    assert "110" in (answer or "")


async def test_native_protocol_is_ignored_by_this_server(server: LlamaHTTPServer) -> None:
    """Native calling reaches the server and gets prose back (what made `auto` switch): no tool
    is called, and the run ends bounded by the default max_tokens: with the model's answer, or,
    when it rambled past the limit twice, as `truncated` (never a cut answer taken as success)."""
    async with ModelClient.resolve(
        base_url=server.base_url, api_key="none", tool_protocol="native"
    ) as client:
        status, answer, calls, _ = await _ask(client, "What is 25 * 4 + 10?")
    assert calls == []
    assert status == "success" or "'reason': 'truncated'" in (answer or ""), answer
    assert answer


async def test_a_cut_off_answer_is_continued_once_then_ends_truncated(
    server: LlamaHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JIANMU__LLM__MAX_TOKENS", "4")
    get_config(reload=True)
    async with ModelClient.resolve(
        base_url=server.base_url, api_key="none", tool_protocol="native"
    ) as client:
        agent = load_agent(PRESET, model_client=client)
        question = "Tell me a long story about a calculator."
        result = await agent.run(input_data={"task": question, "messages": [human(question)]})
    assert result.status == "failure"
    assert result.termination["reason"] == "truncated", result.termination
    assert "cut off at max_tokens=4 again" in result.termination["error"]
    asked = [m.content for m in result.state.messages if m.role == "user"]
    assert sum("cut off by the length limit" in (text or "") for text in asked) == 1
    assert result.state.final_answer  # the partial answer is kept
    assert "cut off at the length limit" in (result.fallback_answer or "")


SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"unit": {"type": "string", "enum": ["c", "f"]}},
    "properties": {
        "city": {"type": "string", "minLength": 1},
        "unit": {"$ref": "#/$defs/unit"},
        "pair": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}], "items": False},
        "kind": {"const": "weather"},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    },
    "required": ["city"],
    "additionalProperties": False,
    "unevaluatedProperties": False,
}
"""An MCP tool's input schema as a server may send it (the MCP provider passes it on unchanged:
tools/mcp/_provider.py `_parameters`)."""


async def test_llama_cpp_takes_json_schema_2020_12_tool_parameters(server: LlamaHTTPServer) -> None:
    """The keywords MCP tool schemas keep (`$schema`, `$defs`/`$ref`, `prefixItems`, `const`,
    `unevaluatedProperties`) reach llama.cpp's server through the real openai client and are
    accepted, with `tool_choice` auto and required (which builds a grammar from them)."""
    import openai

    tool = {
        "type": "function",
        "function": {"name": "weather", "description": "w", "parameters": SCHEMA_2020_12},
    }
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="none", timeout=2 * PATIENCE) as client:
        for choice in ("auto", "required"):
            answer = await client.chat.completions.create(
                model="smollm2-135m",
                messages=[{"role": "user", "content": "weather in Paris?"}],
                tools=[tool],  # type: ignore[list-item]
                tool_choice=choice,  # type: ignore[arg-type]
                max_tokens=8,
            )
            assert answer.choices
