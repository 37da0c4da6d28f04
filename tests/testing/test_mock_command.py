"""`jianmu-like mock REPLIES` (testing/_mock.py, testing/_replies_file.py): a replies file served as
the strict OpenAI-compatible server, end to end with subprocesses — the mock prints its base URL,
`jianmu-like run` answers through it offline, Ctrl-C stops it — and every way a file or a port
can be wrong, said clearly."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import openai
import pytest

from jianmu_like._base.sources import SourceError
from jianmu_like.testing import PATIENCE, RepliesFile, exited, wait_until
from jianmu_like.testing._mock import main

REPLIES = """\
model: my-mock
replies:
  - content: Let me compute it.
    reasoning_content: 25 times 4 is 100, plus 10.
    tool_calls:
      - name: calculator
        arguments: {expression: "25 * 4 + 10"}
  - "The answer is 110."
"""


def _env(home: Path, **extra: str) -> dict[str, str]:
    """A user with no configuration of their own and no embedded model to fall back to."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "JIANMU_"))}
    env.update(HOME=str(home), JIANMU_NO_LOCAL_MODEL="1", JIANMU_CHECK_EVENTS="1", **extra)
    return env


@contextmanager
def mock_process(*args: str, env: dict[str, str], cwd: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """The mock running as a child; yields it and the base URL it printed first."""
    process = subprocess.Popen(
        [sys.executable, *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    first: list[str] = []
    reader = threading.Thread(target=lambda: first.append(process.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    try:
        wait_until(lambda: first, "the mock to print its base URL", abort=exited(process))
        yield process, first[0].strip()
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=PATIENCE)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def test_a_user_runs_an_agent_offline_against_the_mock(tmp_path: Path) -> None:
    (tmp_path / "replies.yaml").write_text(REPLIES, encoding="utf-8")
    env = _env(tmp_path)
    with mock_process("-m", "jianmu_like", "mock", "replies.yaml", env=env, cwd=tmp_path) as (mock, url):
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        run = subprocess.run(
            [sys.executable, "-m", "jianmu_like", "run", "react", "What is 25 * 4 + 10?"],
            cwd=tmp_path,
            env={**env, "OPENAI_BASE_URL": url},
            capture_output=True,
            text=True,
            timeout=PATIENCE,
        )
        assert run.returncode == 0, run.stderr + run.stdout
        assert "The answer is 110." in run.stdout and "calculator" in run.stdout
        mock.send_signal(signal.SIGINT)
        assert mock.wait(timeout=PATIENCE) == 0
        err = mock.stderr.read()  # type: ignore[union-attr]
    assert "as model 'my-mock'" in err and f"OPENAI_BASE_URL={url}" in err
    assert "served 2 request(s)" in err


def test_python_m_serves_json_on_the_port_asked_and_repeats(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    replies = {"model": "json-mock", "repeat": True, "replies": ["pong"]}
    (tmp_path / "r.json").write_text(json.dumps(replies), encoding="utf-8")
    args = ("-m", "jianmu_like.testing", "r.json", "--port", str(port))
    with mock_process(*args, env=_env(tmp_path), cwd=tmp_path) as (mock, url):
        assert url == f"http://127.0.0.1:{port}/v1"
        models = httpx.get(f"{url}/models", timeout=PATIENCE).json()
        assert [m["id"] for m in models["data"]] == ["json-mock"]
        client = openai.OpenAI(base_url=url, api_key="none", timeout=PATIENCE, max_retries=0)
        for _ in range(3):  # repeat: the one reply again and again
            answer = client.chat.completions.create(
                model="json-mock", messages=[{"role": "user", "content": "ping"}]
            )
            assert answer.choices[0].message.content == "pong"
        with pytest.raises(openai.BadRequestError) as refused:  # the strict kit, as OpenAI refuses it
            client.chat.completions.create(model="json-mock", messages=[])
        assert "messages" in str(refused.value)
        client.close()
        mock.send_signal(signal.SIGTERM)
        assert mock.wait(timeout=PATIENCE) == 0


def test_a_misspelt_key_is_named_with_its_line_and_nothing_is_served(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "replies.yaml"
    file.write_text("replies:\n  - contnet: hi\n  - tool_calls:\n      - nme: calculator\n", encoding="utf-8")
    assert main([str(file)]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # no base URL: nothing is served
    assert f"{file}:2: replies[0].contnet: unknown key (did you mean 'content'?)" in err
    assert f"{file}:4: replies[1].tool_calls[0].nme: unknown key (did you mean 'name'?)" in err


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("replies: []\n", "replies: "),
        ("just words\n", "expected a mapping with `replies`, or a list of replies"),
        ("replies:\n  - 3\n", "replies[0]: "),
        ("replies:\n  - hi\nreplies:\n  - again\n", "duplicate key"),
        ("model: ''\nreplies: [hi]\n", "model: "),
    ],
)
def test_files_that_cannot_be_served_are_refused(tmp_path: Path, text: str, problem: str) -> None:
    file = tmp_path / "replies.yaml"
    file.write_text(text, encoding="utf-8")
    with pytest.raises(SourceError) as refused:
        RepliesFile.load(file)
    assert problem in str(refused.value)


def test_a_bare_list_is_the_replies_and_bad_json_or_a_missing_file_is_said(tmp_path: Path) -> None:
    (tmp_path / "list.yaml").write_text("- hi\n- content: there\n", encoding="utf-8")
    loaded = RepliesFile.load(tmp_path / "list.yaml")
    assert [r.content for r in loaded.replies] == ["hi", "there"] and loaded.model == "mock-model"
    (tmp_path / "bad.json").write_text("{replies: ", encoding="utf-8")
    with pytest.raises(SourceError, match="not a JSON document"):
        RepliesFile.load(tmp_path / "bad.json")
    with pytest.raises(SourceError, match="cannot read"):
        RepliesFile.load(tmp_path / "missing.json")


def test_a_port_in_use_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "r.yaml").write_text("[hi]\n", encoding="utf-8")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main([str(tmp_path / "r.yaml"), "--port", str(port)]) == 2
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("port", "said"), [("70000", "a port is 0 to 65535, not 70000"), ("http", "not a port")]
)
def test_a_port_that_is_no_port_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], port: str, said: str
) -> None:
    (tmp_path / "r.yaml").write_text("[hi]\n", encoding="utf-8")
    with pytest.raises(SystemExit) as usage:
        main([str(tmp_path / "r.yaml"), "--port", port])
    assert usage.value.code == 2 and said in capsys.readouterr().err
