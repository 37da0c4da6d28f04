"""A `/v1/` request's key survives SIGKILL of `jianmu-like serve` with a SQLite store: the
retry after the restart starts no run and repeats no side effect."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import openai
import pytest

from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, wait_until
from tests.server.guarded_agent import environment, responder, write_agent
from tests.server.sse_live import free_port

CLI = [sys.executable, "-m", "jianmu_like"]


@contextmanager
def serving(
    folder: Path, store: Path, model: ScriptedOpenAIServer
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    port = free_port()
    proc = subprocess.Popen(
        [*CLI, "serve", "agent.yaml", "--port", str(port), "--checkpoint", str(store)],
        cwd=folder,
        env=environment(model.base_url),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:

        def up() -> bool:
            try:
                return httpx.get(f"{url}/healthz", timeout=PATIENCE).status_code == 200
            except httpx.TransportError:
                return False

        wait_until(
            up, "the server to come up", abort=lambda: None if proc.poll() is None else proc.communicate()[1]
        )
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=PATIENCE)


def test_a_key_whose_run_waits_for_approval_survives_sigkill(tmp_path: Path) -> None:
    agent = write_agent(tmp_path, module=f"effects_{uuid.uuid4().hex[:6]}")
    store, key = tmp_path / "runs.db", uuid.uuid4().hex
    messages: list[dict[str, str]] = [{"role": "user", "content": "/tmp/precious"}]
    with ScriptedOpenAIServer(responder) as model:
        with serving(tmp_path, store, model) as (url, proc):
            api = openai.OpenAI(base_url=f"{url}/v1", api_key="none", timeout=PATIENCE)  # retries on
            with pytest.raises(openai.ConflictError) as first:
                api.chat.completions.create(
                    model=agent.stem, messages=messages, extra_headers={"Idempotency-Key": key}
                )
            assert first.value.code == "approval_required"
            proc.kill()  # SIGKILL: no shutdown, nothing flushed
            proc.wait(timeout=PATIENCE)
        with serving(tmp_path, store, model) as (url, _proc):
            api = openai.OpenAI(base_url=f"{url}/v1", api_key="none", timeout=PATIENCE)
            with pytest.raises(openai.ConflictError) as again:
                api.chat.completions.create(
                    model=agent.stem, messages=messages, extra_headers={"Idempotency-Key": key}
                )
            assert again.value.code == "approval_required" and "jianmu-like approvals" in again.value.message
            assert again.value.response.headers["x-should-retry"] == "false"
            assert httpx.get(f"{url}/api/runs", timeout=PATIENCE).json()["runs"] == []
    assert len(model.requests) == 1  # one model call: the agent ran once
    assert not (tmp_path / "effects.log").exists()  # and the guarded call never ran
