"""Both embedded backends on the real default model (SmolLM2-135M): one interface, same behaviour.

Each backend's tests run where its binding is installed and the default weights are pulled,
and skip saying which is missing otherwise (llama-cpp-python is compiled from source, so it
is usually absent: `pip install -e '.[llama-cpp]'`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from jianmu_like import human
from jianmu_like.models import ModelError, weights
from jianmu_like.models._text_protocol import reply_schema, to_chat_messages
from jianmu_like.models.local_backends import (
    BACKENDS,
    GenerationStopped,
    LocalBackend,
    SamplingParams,
    backend_problem,
    create_backend,
)
from jianmu_like.tools._toolset import ToolSet
from jianmu_like.tools.builtin import calculator

pytestmark = pytest.mark.local
WEIGHTS = weights.local_model_path()
TOOLS = ToolSet.from_providers([]).with_tools([calculator]).schemas()
GREEDY = SamplingParams(temperature=0.0, max_tokens=48)


def _skip_reason(name: str) -> str | None:
    problem = backend_problem(name, import_it=True)
    if problem is not None:
        return problem
    if WEIGHTS is None:
        return f"the {weights.DEFAULT} weights are not pulled (jianmu-like models pull)"
    return None


@pytest.fixture(
    scope="module",
    params=[
        pytest.param(
            name, marks=pytest.mark.skipif(bool(_skip_reason(name)), reason=_skip_reason(name) or "")
        )
        for name in BACKENDS
    ],
)
def backend(request: pytest.FixtureRequest) -> Iterator[LocalBackend]:
    assert WEIGHTS is not None
    loaded = create_backend(request.param, WEIGHTS)
    loaded.load()
    yield loaded
    loaded.close()


def test_plain_chat_reports_text_usage_and_finish_reason(backend: LocalBackend) -> None:
    turns = [{"role": "user", "content": "Name three colours."}]
    first = backend.generate(turns, params=GREEDY)
    assert first.text.strip()
    assert first.prompt_tokens > 5 and 0 < first.completion_tokens <= GREEDY.max_tokens
    assert first.finish_reason in ("stop", "length")
    again = backend.generate(turns, params=GREEDY)
    assert again.text == first.text  # greedy decoding is deterministic
    short = backend.generate(turns, params=SamplingParams(max_tokens=3))
    assert short.completion_tokens == 3 and short.finish_reason == "length"


def test_schema_constrained_tool_call_in_json_dumps_layout(backend: LocalBackend) -> None:
    turns = to_chat_messages([human("What is 25 * 4 + 10?")], TOOLS)
    generation = backend.generate(
        turns, schema=reply_schema(TOOLS, "required"), params=SamplingParams(max_tokens=64)
    )
    reply = json.loads(generation.text)
    assert reply["tool"] == "calculator" and isinstance(reply["arguments"]["expression"], str)
    assert generation.text == json.dumps(reply)  # exactly json.dumps's spacing, one line
    assert generation.finish_reason == "stop"


def test_gbnf_grammar_constrains_the_reply(backend: LocalBackend) -> None:
    turns = [{"role": "user", "content": "Is the sky green? Answer yes or no."}]
    generation = backend.generate(turns, grammar='root ::= "yes" | "no"', params=GREEDY)
    assert generation.text in ("yes", "no")
    with pytest.raises(ValueError, match="not both"):
        backend.generate(turns, schema={"type": "string"}, grammar='root ::= "x"', params=GREEDY)


def test_should_stop_abandons_the_generation(backend: LocalBackend) -> None:
    polls = 0

    def stop_after_five() -> bool:
        nonlocal polls
        polls += 1
        return polls > 5

    turns = [{"role": "user", "content": "Tell me a long story about a dragon."}]
    with pytest.raises(GenerationStopped):
        backend.generate(turns, params=SamplingParams(max_tokens=200), should_stop=stop_after_five)
    assert polls == 6  # polled once per token: generating on after the stop would poll again
    after = backend.generate(turns, params=SamplingParams(max_tokens=4))  # still usable
    assert after.completion_tokens == 4


def test_context_overflow_and_bad_grammar_are_model_errors(backend: LocalBackend) -> None:
    too_long = [{"role": "user", "content": "word " * 5000}]
    with pytest.raises(ModelError) as info:
        backend.generate(too_long, params=GREEDY)
    assert not info.value.retryable
    with pytest.raises(ModelError):
        backend.generate([{"role": "user", "content": "hi"}], grammar="root ::= (", params=GREEDY)


def test_close_frees_and_generate_reloads(backend: LocalBackend) -> None:
    backend.close()
    assert not backend.loaded
    assert backend.generate([{"role": "user", "content": "hi"}], params=SamplingParams(max_tokens=2)).text
    assert backend.loaded


@pytest.mark.parametrize("name", BACKENDS)
def test_missing_model_file_is_a_model_error(name: str, tmp_path: Path) -> None:
    missing = create_backend(name, tmp_path / "absent.gguf")
    with pytest.raises(ModelError, match=r"not found.*models pull"):
        missing.load()
    assert not missing.loaded
