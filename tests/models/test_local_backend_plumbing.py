"""The local backends' plumbing, without any binding: names, import failures, stream parsing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jianmu_like.models import ModelError
from jianmu_like.models import local_backends as lb
from jianmu_like.models.local_backends._base import import_failure
from jianmu_like.models.local_backends._xllamacpp_backend import JSON_LAYOUT, _Reply, schema_to_grammar


def test_names_and_unknown_backend() -> None:
    assert lb.BACKENDS == ("xllamacpp", "llama_cpp_python") and lb.DEFAULT_BACKEND == "xllamacpp"
    assert isinstance(lb.create_backend("xllamacpp", "/m/x.gguf"), lb.XllamacppBackend)
    with pytest.raises(
        ValueError, match=r"unknown local backend 'llama'; valid: xllamacpp, llama_cpp_python"
    ):
        lb.create_backend("llama", "/m/x.gguf")
    with pytest.raises(ValueError, match="valid: xllamacpp"):
        lb.backend_problem("vllm")


def test_backend_problem_names_the_package_and_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(lb._MODULES, "llama_cpp_python", "no_such_module_here")
    assert lb.backend_problem("llama_cpp_python") == (
        "llama-cpp-python is not installed (pip install -e '.[llama-cpp]')"
    )
    monkeypatch.setitem(lb._MODULES, "xllamacpp", "json")  # installed and importable
    assert lb.backend_problem("xllamacpp", import_it=True) is None


def test_a_missing_system_library_names_the_apt_package() -> None:
    exc = ImportError("libgomp.so.1: cannot open shared object file: No such file or directory")
    error = import_failure(exc, module="xllamacpp", install="pip install x")
    assert isinstance(error, ModelError) and not error.retryable
    assert "system library libgomp.so.1 is missing" in error.message
    assert "apt-get install libgomp1" in error.message
    stdcxx = import_failure(OSError("libstdc++.so.6: cannot open"), module="xllamacpp", install="")
    assert "apt-get install libstdc++6" in stdcxx.message


def test_a_missing_module_says_how_to_install_it() -> None:
    exc = ModuleNotFoundError("No module named 'xllamacpp'", name="xllamacpp")
    error = import_failure(exc, module="xllamacpp", install="pip install -e '.[local]'")
    assert error.message.startswith("xllamacpp is not installed: pip install -e '.[local]'")
    other = import_failure(ImportError("undefined symbol: foo"), module="xllamacpp", install="")
    assert other.message == "xllamacpp cannot be imported: undefined symbol: foo"


def test_missing_model_file_is_checked_before_importing_anything(tmp_path: Path) -> None:
    for name in lb.BACKENDS:
        with pytest.raises(ModelError, match=r"absent\.gguf \(run `jianmu-like models pull`\)"):
            lb.create_backend(name, tmp_path / "absent.gguf").load()


def test_schema_to_grammar_pins_the_json_dumps_layout() -> None:
    grammar = schema_to_grammar({"type": "object", "properties": {"a": {"type": "string"}}})
    header, _, schema = grammar.partition("start: %json ")
    assert header == "%llguidance {}\n"
    assert (
        json.loads(schema)["x-guidance"]
        == JSON_LAYOUT
        == {
            "whitespace_flexible": False,
            "item_separator": ", ",
            "key_separator": ": ",
        }
    )


def _chunk(content: str | None = None, finish: str | None = None) -> dict[str, object]:
    delta = {} if content is None else {"content": content}
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_reply_accumulates_a_stream_with_usage() -> None:
    reply = _Reply(None)
    for chunk in (_chunk(), _chunk('{"answer"'), _chunk(': "4"}'), _chunk(finish="stop")):
        assert reply.on_chunk(chunk) is False
    assert reply.on_chunk({"choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 7}}) is False
    assert "".join(reply.parts) == '{"answer": "4"}' and reply.finish_reason == "stop"
    assert reply.usage == {"prompt_tokens": 30, "completion_tokens": 7}
    assert reply.error is None and not reply.stopped


def test_reply_stops_when_asked_and_keeps_errors() -> None:
    asked = iter([False, True])
    reply = _Reply(lambda: next(asked))
    assert reply.on_chunk(_chunk("a")) is False
    assert reply.on_chunk(_chunk("b")) is True and reply.stopped
    failed = _Reply(None)
    assert failed.on_chunk({"error": {"code": 400, "message": "request exceeds the context"}}) is True
    assert failed.error == "request exceeds the context"
