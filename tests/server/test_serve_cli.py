"""`jianmu-like serve`: refuses an unguarded public bind; serves an agent file over real HTTP."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from jianmu_like.checkpoint._target import open_checkpointer
from jianmu_like.cli._common import EXIT_ADDRESS
from jianmu_like.cli._main import main
from jianmu_like.cli._serve import agent_factory
from jianmu_like.server import create_app
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, reply, wait_until
from tests.server.sse_live import free_port, live_server, read_events, sse_events

PRESET = Path(__file__).resolve().parents[2] / "presets" / "react.yaml"


def test_a_non_loopback_bind_without_a_token_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("JIANMU_SERVER_TOKEN", raising=False)
    assert main(["serve", str(PRESET), "--host", "0.0.0.0"]) == 2
    error = capsys.readouterr().err
    assert "refusing to serve on 0.0.0.0" in error and "--token" in error and "JIANMU_SERVER_TOKEN" in error


def _exited(proc: subprocess.Popen[str]) -> str | None:
    return None if proc.poll() is None else f"the server exited: {proc.communicate()[1]}"


def _environment(base_url: str) -> dict[str, str]:
    skip = ("JIANMU", "OPENAI_", "FORCE_COLOR", "TTY_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
    env.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="x", PYTHONIOENCODING="utf-8", NO_COLOR="1")
    return env


def test_serve_answers_over_real_http_and_checkpoints_the_run(tmp_path: Path) -> None:
    script = [call("calculator", expression="2 + 3"), reply("2 + 3 = 5.")]
    port = free_port()
    store = tmp_path / "runs.db"
    with ScriptedOpenAIServer(script) as srv:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jianmu_like",
                "serve",
                str(PRESET),
                "--port",
                str(port),
                "--checkpoint",
                str(store),
            ],
            cwd=tmp_path,
            env=_environment(srv.base_url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=PATIENCE) as http:

                def healthy() -> bool:
                    try:
                        return http.get("/healthz").status_code == 200
                    except httpx.TransportError:
                        return False

                wait_until(healthy, "the server to come up", abort=lambda: _exited(proc))
                run = http.post("/api/runs", json={"input": "What is 2 + 3?"}).json()
                events = read_events(http, run["run_id"])
        finally:
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=PATIENCE)
    tool = next(d for _, c, d in events if c == "step" and d["type"] == "iteration" and d["status"] == "done")
    assert tool["tool_name"] == "calculator" and tool["observation"] == "5"
    assert (
        "".join(d["content"] for _, c, d in events if c == "answer" and d["status"] == "delta")
        == "2 + 3 = 5."
    )
    assert events[-1][2]["answer"] == "2 + 3 = 5."
    assert f"http://127.0.0.1:{port}/" in out, err
    assert f"model: scripted-model at {srv.base_url}\n" in out, err
    saved = open_checkpointer(store, readonly=True)
    try:
        assert run["thread_id"] in saved.threads()
    finally:
        saved.close()


async def test_the_agent_file_factory_serves_conversations_of_one_template(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = [call("calculator", expression="6 * 7"), reply("42."), reply("Still 42.")]
    with ScriptedOpenAIServer(script) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        factory, cleanups, where = agent_factory(str(PRESET))
        assert where == "conversations kept in memory"
        app = create_app(factory, on_shutdown=cleanups)
        with live_server(app) as url:
            async with httpx.AsyncClient(base_url=url, timeout=PATIENCE) as http:
                first = (await http.post("/api/runs", json={"input": "6 * 7?"})).json()
                second = await _follow(http, first["run_id"])
                assert second["answer"] == "42."
                again = {"input": "And now?", "thread_id": first["thread_id"]}
                follow_up = (await http.post("/api/runs", json=again)).json()
                assert (await _follow(http, follow_up["run_id"]))["answer"] == "Still 42."
    # The follow-up carried the conversation so far.
    assert [m["role"] for m in srv.requests[-1]["messages"]][1:] == [
        "user", "assistant", "tool", "assistant", "user",
    ]  # fmt: skip


async def _follow(http: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    """The `done` payload of a run, read from its event stream."""
    async with http.stream("GET", f"/api/runs/{run_id}/events") as response:
        lines = [line async for line in response.aiter_lines()]
    return next(data for _, channel, data in sse_events(iter(lines)) if channel == "done")


async def test_a_checkpointed_conversation_continues_after_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = str(tmp_path / "runs.db")
    with ScriptedOpenAIServer(["Hello.", "Hello again."]) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        for question, answer in [("Hi", "Hello."), ("Hi again", "Hello again.")]:  # two servers
            factory, cleanups, _ = agent_factory(str(PRESET), checkpoint=store)
            with live_server(create_app(factory, on_shutdown=cleanups)) as url:
                async with httpx.AsyncClient(base_url=url, timeout=PATIENCE) as http:
                    run = await http.post("/api/runs", json={"input": question, "thread_id": "chat"})
                    assert (await _follow(http, run.json()["run_id"]))["answer"] == answer
    users = [m["content"] for m in srv.requests[-1]["messages"] if m["role"] == "user"]
    assert users == ["Hi", "Hi again"]


def test_serve_takes_allowed_hosts_and_the_body_limit_from_flags_and_configuration(tmp_path: Path) -> None:
    from tests.server.edge_agent import request

    port = free_port()
    (tmp_path / "jianmu.yaml").write_text(
        "server:\n  allowed_hosts: [config.example]\n  max_body_bytes: 5000\n"
    )
    with ScriptedOpenAIServer([]) as srv:
        command = [sys.executable, "-m", "jianmu_like", "serve", str(PRESET), "--port", str(port)]
        proc = subprocess.Popen(
            [*command, "--allowed-host", "flag.example", "--max-body-bytes", "300"],
            cwd=tmp_path,
            env=_environment(srv.base_url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:

            def healthy() -> bool:
                try:
                    return bool(request(port, "GET", "/healthz").status == 200)
                except OSError:
                    return False

            wait_until(healthy, "the server to come up", abort=lambda: _exited(proc))
            for host, status in [("config.example", 200), ("flag.example", 200), ("attacker.example", 421)]:
                assert request(port, "GET", "/healthz", host=f"{host}:{port}").status == status, host
            json_type = {"Content-Type": "application/json"}
            big = request(port, "POST", "/api/runs", b'{"input": "%s"}' % (b"x" * 400), headers=json_type)
            assert big.status == 413 and "over the limit of 300 bytes" in big.json()["error"]
        finally:
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=PATIENCE)


def test_serve_refuses_a_bad_allowed_host(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", str(PRESET), "--allowed-host", "http://agents.example"])
    assert exited.value.code == 2
    assert "'http://agents.example' is not a host name or host:port" in capsys.readouterr().err


def test_serve_refuses_a_recordings_folder_that_is_not_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", str(PRESET), "--recordings", str(tmp_path / "gone")]) == 2
    assert f"--recordings {tmp_path / 'gone'}: not a directory" in capsys.readouterr().err


def test_a_busy_port_is_said_before_any_banner_with_its_own_exit_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code = main(["serve", str(PRESET), "--port", str(port)])
    out, err = capsys.readouterr()
    assert code == EXIT_ADDRESS == 6
    assert out == ""  # no "serving ... on" first
    assert err.strip() == (
        f"error: cannot serve on 127.0.0.1:{port}: the port is in use (another server listens "
        "there): stop it, or pass another --port"
    )


def test_serve_names_its_model_and_warns_with_the_cause_when_it_cannot_answer(tmp_path: Path) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        dead = closed.getsockname()[1]
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "jianmu_like", "serve", str(PRESET), "--port", str(port)],
        cwd=tmp_path,
        env=_environment(f"http://127.0.0.1:{dead}/v1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=PATIENCE) as http:

            def healthy() -> bool:
                try:
                    return http.get("/healthz").status_code == 200
                except httpx.TransportError:
                    return False

            wait_until(
                healthy, "the server to come up (a warning, not a refusal)", abort=lambda: _exited(proc)
            )
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=PATIENCE)
    assert f"model: the model the server serves at http://127.0.0.1:{dead}/v1\n" in out
    assert (
        f"warning: cannot reach the model server at http://127.0.0.1:{dead}/v1: nothing listens on "
        f"127.0.0.1:{dead} (connection refused)"
    ) in err
    assert out.index("serving ") < out.index("model: ")


async def test_the_console_names_the_model_and_says_why_an_unreachable_one_failed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        dead = closed.getsockname()[1]
    base_url = f"http://127.0.0.1:{dead}/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.delenv("JIANMU_MODEL", raising=False)
    factory, cleanups, _ = agent_factory(str(PRESET))
    with live_server(create_app(factory, on_shutdown=cleanups)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=PATIENCE) as http:
            agent = (await http.get("/api/agent")).json()
            assert agent["models"] == [f"the model the server serves at {base_url}"]
            run = (await http.post("/api/runs", json={"input": "hi"})).json()
            done = await _follow(http, run["run_id"])
    # The cause and what to do, the URL once; not "no model is configured".
    assert done["error"] == (
        f"cannot reach the model server at {base_url}: nothing listens on 127.0.0.1:{dead} "
        "(connection refused): is the model server running, and on this port? (set "
        "OPENAI_BASE_URL or provider.base_url)"
    )


async def test_the_console_words_a_failed_model_call_as_the_cli_does(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        dead = closed.getsockname()[1]
    base_url = f"http://127.0.0.1:{dead}/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("JIANMU_MODEL", "m")
    monkeypatch.setenv("JIANMU__RESILIENCE__MAX_RETRIES", "0")
    factory, cleanups, _ = agent_factory(str(PRESET))
    with live_server(create_app(factory, on_shutdown=cleanups)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=PATIENCE) as http:
            run = (await http.post("/api/runs", json={"input": "hi"})).json()
            done = await _follow(http, run["run_id"])
    assert done["error"] == (
        f"cannot reach the model server at {base_url}: nothing listens on 127.0.0.1:{dead} "
        "(connection refused): is the model server running, and on this port? (set "
        "OPENAI_BASE_URL or provider.base_url)"
    )
