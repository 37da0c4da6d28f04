"""A failed run's first line says the real cause and what to do, for a tree as for a ReAct agent,
and the cause is printed once across standard output and standard error (issue 34, items 2 and
4): the common URL mistakes (nothing listening, https to an http server, the `/v1` left out)
are named, against the real scripted server."""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest

from jianmu_like.cli._common import EXIT_FAILED
from jianmu_like.testing import ScriptedOpenAIServer, reply
from tests.cli.running import in_process

Cli = Callable[..., tuple[int, str]]


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Callable[[str], Cli]:
    """`cli(base_url)(*args)`: the CLI in this process, no model named, no retries."""
    for name in ("JIANMU_MODEL", "JIANMU_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JIANMU__RESILIENCE__MAX_RETRIES", "0")
    return lambda base_url: in_process(base_url, monkeypatch, capsys)


def _refused_port() -> int:
    """A port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


def test_a_failed_tree_agent_says_which_agent_failed_why_and_what_to_do(cli: Callable[[str], Cli]) -> None:
    cut_off = reply("1. count the days\n2. multiply", finish_reason="length")
    with ScriptedOpenAIServer([cut_off, cut_off]) as srv:
        code, output = cli(srv.base_url)("run", "research", "How many seconds in a leap year?", "--no-live")
    assert code == EXIT_FAILED
    assert output.splitlines()[0] == f"▶ run started · model: the model the server serves at {srv.base_url}"
    assert _error_lines(output) == [
        "error: [plan] truncated: the final answer was cut off at max_tokens=1024 again after being "
        "asked to continue; the partial answer is kept (raise llm.max_tokens, or set answers.on_truncated)"
    ]
    assert output.count("cut off at max_tokens") == 1
    assert "the agent failed (error)" not in output


def test_a_model_call_that_cannot_connect_says_nothing_listens_there_once(
    cli: Callable[[str], Cli], monkeypatch: pytest.MonkeyPatch
) -> None:
    port = _refused_port()
    monkeypatch.setenv("JIANMU_MODEL", "m")
    code, output = cli(f"http://127.0.0.1:{port}/v1")("run", "react", "hi", "--no-live")
    assert code == EXIT_FAILED
    assert _error_lines(output) == [
        f"error: cannot reach the model server at http://127.0.0.1:{port}/v1: nothing listens on "
        f"127.0.0.1:{port} (connection refused): is the model server running, and on this port? "
        "(set OPENAI_BASE_URL or provider.base_url)"
    ]
    assert output.count("nothing listens") == 1
    assert output.count(f"127.0.0.1:{port}/v1") == 2  # the model named (`model: ...`), the error


def test_an_unreachable_server_without_a_model_named_is_not_called_a_missing_model(
    cli: Callable[[str], Cli],
) -> None:
    port = _refused_port()
    code, output = cli(f"http://127.0.0.1:{port}/v1")("run", "react", "hi", "--no-live")
    assert code == EXIT_FAILED
    first = _error_lines(output)
    assert first == [
        f"error: cannot reach the model server at http://127.0.0.1:{port}/v1: nothing listens on "
        f"127.0.0.1:{port} (connection refused): is the model server running, and on this port? "
        "(set OPENAI_BASE_URL or provider.base_url)"
    ]
    assert "no model is configured" not in output and output.count(f"127.0.0.1:{port}/v1") == 2


def test_a_base_url_without_v1_is_told_to_add_it(cli: Callable[[str], Cli]) -> None:
    with ScriptedOpenAIServer(["never asked"]) as srv:
        root = srv.base_url.removesuffix("/v1")
        code, output = cli(root)("run", "react", "hi", "--no-live")
        assert srv.requests == []
    assert code == EXIT_FAILED
    assert _error_lines(output) == [
        f"error: {root} has no /models, but {srv.base_url}/models answers: did you mean "
        f"OPENAI_BASE_URL={srv.base_url} (the /v1 left out)?"
    ]


def test_a_named_model_on_a_base_url_without_v1_gets_the_same_hint(
    cli: Callable[[str], Cli], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JIANMU_MODEL", "scripted-model")
    with ScriptedOpenAIServer(["never asked"]) as srv:
        code, output = cli(srv.base_url.removesuffix("/v1"))("run", "react", "hi", "--no-live")
    assert code == EXIT_FAILED
    (line,) = _error_lines(output)
    assert line.startswith(
        "error: model call failed after 1 attempt(s) on scripted-model; last error: HTTP 404"
    )
    assert f"is the /v1 missing? try OPENAI_BASE_URL={srv.base_url}" in line


def test_https_to_a_plain_http_server_says_try_http(cli: Callable[[str], Cli]) -> None:
    with ScriptedOpenAIServer(["never asked"]) as srv:
        tls = srv.base_url.replace("http://", "https://")
        code, output = cli(tls)("run", "react", "hi", "--no-live")
    assert code == EXIT_FAILED
    port = srv.base_url.split(":")[2].split("/")[0]
    assert _error_lines(output) == [
        f"error: cannot reach the model server at {tls}: the server at 127.0.0.1:{port} does not speak "
        f"TLS (https): try {srv.base_url} (set OPENAI_BASE_URL or provider.base_url)"
    ]


def test_the_hints_and_the_model_line_never_show_a_secret_of_the_url(cli: Callable[[str], Cli]) -> None:
    port = _refused_port()
    code, output = cli(f"http://user:hunter2@127.0.0.1:{port}/v1")("run", "react", "hi", "--no-live")
    assert code == EXIT_FAILED
    assert "hunter2" not in output
    assert "model: the model the server serves at http://127.0.0.1" in output
    assert _error_lines(output)[0].startswith("error: cannot reach the model server at http://")
    with ScriptedOpenAIServer(["never asked"]) as srv:
        secret = srv.base_url.replace("http://", "https://user:hunter2@")
        code, output = cli(secret.removesuffix("/v1"))("run", "react", "hi", "--no-live")
    assert code == EXIT_FAILED and "hunter2" not in output
    assert "does not speak TLS (https): try http://" in output
