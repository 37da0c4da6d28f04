"""The server's threads over real HTTP: `POST /api/runs {"thread_id": T}` continues T saved by an
earlier server (through `Agent.run`, the public path), and `GET /api/threads`,
`/api/threads/{id}`, `/api/threads/{id}/history` read the checkpoint store (JSON errors)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from sse_live import live_server, sse_events

from jianmu_like.cli._serve import agent_factory
from jianmu_like.server import create_app
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer

PRESET = Path(__file__).resolve().parents[2] / "presets" / "react.yaml"


async def _done(http: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    async with http.stream("GET", f"/api/runs/{run_id}/events") as response:
        lines = [line async for line in response.aiter_lines()]
    return next(data for _, channel, data in sse_events(iter(lines)) if channel == "done")


async def test_threads_routes_read_the_store(store_target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with ScriptedOpenAIServer(["Hello.", "Hello again."]) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        for question in ("Hi", "Hi again"):  # two servers, one store
            factory, cleanups, _ = agent_factory(str(PRESET), checkpoint=store_target)
            app = create_app(factory, on_shutdown=cleanups)
            with live_server(app) as url:
                async with httpx.AsyncClient(base_url=url, timeout=PATIENCE) as http:
                    run = await http.post("/api/runs", json={"input": question, "thread_id": "chat"})
                    assert run.status_code == 201, run.text
                    await _done(http, run.json()["run_id"])
                    listed = (await http.get("/api/threads")).json()
                    shown = await http.get("/api/threads/chat")
                    history = (await http.get("/api/threads/chat/history")).json()
                    missing = await http.get("/api/threads/nope/history")
        users = [m["content"] for m in srv.requests[-1]["messages"] if m["role"] == "user"]

    assert users == ["Hi", "Hi again"]
    [head] = listed["threads"]
    assert head["thread_id"] == "chat" and head["status"] == "success" and head["messages"] == 4
    view = shown.json()
    assert shown.status_code == 200 and view["versions"] == len(history["versions"])
    assert [m["content"] for m in view["messages"]] == ["Hi", "Hello.", "Hi again", "Hello again."]
    seqs = [v["seq"] for v in history["versions"]]
    assert history["thread_id"] == "chat" and seqs == sorted(seqs, reverse=True)
    assert [v["status"] for v in history["versions"]].count("success") == 2
    assert missing.status_code == 404 and "no thread 'nope' (threads: chat)" in missing.json()["error"]


async def test_without_a_store_the_threads_routes_say_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    factory, cleanups, _ = agent_factory(str(PRESET))
    with live_server(create_app(factory, on_shutdown=cleanups)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=PATIENCE) as http:
            answer = await http.get("/api/threads")
    assert answer.status_code == 409 and "serve with --checkpoint STORE" in answer.json()["error"]
