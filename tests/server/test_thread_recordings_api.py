"""A thread's kept recordings over HTTP: `GET /api/threads/{id}/recordings` lists them and
`GET /api/threads/{id}/recordings/{run_id}` serves one's JSON Lines (redacted: a key the run saw
is not in it), which replays offline to the run's answer; hostile and unknown ids are 404s that
change nothing; the routes sit behind the same Host rule as the rest; no store: 409."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from jianmu_like import Agent
from jianmu_like._base.config import get_config
from jianmu_like.replay import areplay
from jianmu_like.testing import PATIENCE, wait_until
from tests.server.console_agent import build_root, console_app
from tests.server.edge_agent import request
from tests.server.sse_live import live_server, sse_events


@pytest.fixture
def http(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[httpx.Client]:
    config = tmp_path / "jianmu.yaml"
    config.write_text("checkpoints:\n  recordings: {max_runs: 10}\n")
    monkeypatch.setenv("JIANMU_CONFIG", str(config))
    get_config(reload=True)
    app = console_app(checkpoint=str(tmp_path / "runs.db"))
    with live_server(app) as url, httpx.Client(base_url=url, timeout=PATIENCE) as client:
        yield client


def run(http: httpx.Client, question: str, thread_id: str) -> dict[str, Any]:
    started = http.post("/api/runs", json={"input": question, "thread_id": thread_id})
    assert started.status_code == 201, started.text
    run_id = started.json()["run_id"]
    with http.stream("GET", f"/api/runs/{run_id}/events") as response:
        events = list(sse_events(response.iter_lines()))
    return {"run_id": run_id, **next(data for _, channel, data in events if channel == "done")}


async def test_list_and_fetch_a_recording_that_replays_offline(http: httpx.Client) -> None:
    done = run(http, "add 41", "t")
    assert done["answer"] == "result 42"
    listed = http.get("/api/threads/t/recordings")
    assert listed.status_code == 200, listed.text
    [info] = listed.json()["recordings"]
    assert listed.json()["thread_id"] == "t"
    assert (info["status"], info["truncated"]) == ("success", False) and info["size"] > 0
    got = http.get(f"/api/threads/t/recordings/{info['run_id']}")
    assert got.status_code == 200 and got.headers["content-type"] == "application/x-ndjson"
    assert got.headers["x-recording-status"] == "success" and len(got.content) == info["size"]
    assert "attachment" in got.headers["content-disposition"]
    assert json.loads(got.content.splitlines()[0])["format"] == "jianmu-like.recording"
    replayed = await areplay(got.content, agent=lambda: Agent(build_root()))
    assert replayed.final_answer == "result 42"


def test_a_recording_serves_no_secret(http: httpx.Client) -> None:
    key = "sk-live0123456789abcdef"
    assert http.post("/api/runs", json={"input": f"delete {key}", "thread_id": "k"}).status_code == 201
    wait_until(lambda: http.get("/api/approvals").json()["approvals"], "the run to wait for approval")
    [info] = http.get("/api/threads/k/recordings").json()["recordings"]
    assert info["status"] == "suspended"
    got = http.get(f"/api/threads/k/recordings/{info['run_id']}")
    assert got.status_code == 200 and key not in got.text and "delete_file" in got.text


def test_hostile_and_unknown_ids_are_404s_that_change_nothing(http: httpx.Client) -> None:
    run(http, "add 1", "t")
    [info] = http.get("/api/threads/t/recordings").json()["recordings"]
    for tid in (
        "'; DROP TABLE jianmu_recordings; --",
        "../../etc/passwd",
        "x" * 4000,
        "线程",
        "a\x00b",
        "%00",
    ):
        # an id with a slash matches no route (404 naming the path); any other reaches the store
        routed = "/" not in tid
        answer = http.get(f"/api/threads/{quote(tid, safe='')}/recordings")
        assert answer.status_code == 404, (tid, answer.text)
        assert ("no thread" if routed else "not found: GET") in answer.json()["error"]
        fetched = http.get(f"/api/threads/{quote(tid, safe='')}/recordings/{info['run_id']}")
        assert fetched.status_code == 404
        assert ("has no recording of run" if routed else "not found: GET") in fetched.json()["error"]
    missing = http.get("/api/threads/t/recordings/nope")
    assert missing.status_code == 404
    assert f"no recording of run 'nope' (recordings: {info['run_id']})" in missing.json()["error"]
    assert "runs.db" not in missing.json()["error"]  # the store's path is not shown
    assert http.get("/api/threads/t/recordings/a%2Fb").status_code == 404
    assert [i["run_id"] for i in http.get("/api/threads/t/recordings").json()["recordings"]] == [
        info["run_id"]
    ]
    port = int(str(http.base_url).rstrip("/").rsplit(":", 1)[1])
    for path in ("/api/threads/t/recordings", f"/api/threads/t/recordings/{info['run_id']}"):
        reply = request(port, "GET", path, host="attacker.example")
        assert reply.status == 421 and "does not answer to the host" in reply.json()["error"]


def test_without_a_store_the_routes_say_how_to_get_one() -> None:
    with live_server(console_app()) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        listed = http.get("/api/threads/t/recordings")
        fetched = http.get("/api/threads/t/recordings/r1")
    assert listed.status_code == 409 and "--checkpoint STORE" in listed.json()["error"]
    assert fetched.status_code == 409
