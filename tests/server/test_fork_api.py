"""Time travel over HTTP: `GET /api/threads/{id}/checkpoints/{seq}` shows one saved version (its
messages, the tree's statuses, pending approvals) and `POST /api/runs` with `from_checkpoint`
forks from it; every wrong request is refused before anything runs, naming the cause, and the
new routes sit behind the same Host/Origin/JSON middlewares as the rest (raw sockets)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from jianmu_like.testing import PATIENCE, wait_until
from tests.server.console_agent import console_app
from tests.server.edge_agent import request
from tests.server.sse_live import live_server, sse_events


class Server:
    def __init__(self, app: Any, url: str, http: httpx.Client) -> None:
        self.app, self.url, self.http = app, url, http
        self.port = int(url.rsplit(":", 1)[1])

    def run(self, question: str, thread_id: str, **extra: Any) -> dict[str, Any]:
        """Start a run and read its stream to the end: its `done`."""
        started = self.http.post("/api/runs", json={"input": question, "thread_id": thread_id, **extra})
        assert started.status_code == 201, started.text
        run_id = started.json()["run_id"]
        with self.http.stream("GET", f"/api/runs/{run_id}/events") as response:
            events = list(sse_events(response.iter_lines()))
        return {"run_id": run_id, **next(data for _, channel, data in events if channel == "done")}

    def versions(self, thread_id: str) -> list[dict[str, Any]]:
        return list(self.http.get(f"/api/threads/{thread_id}/history").json()["versions"])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    app = console_app(checkpoint=str(tmp_path / "runs.db"))
    with live_server(app) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        yield Server(app, url, http)


def test_a_version_shows_its_messages_statuses_and_a_fork_continues_it(server: Server) -> None:
    assert server.run("add 41", "t")["answer"] == "result 42"
    first_end = max(v["seq"] for v in server.versions("t") if v["status"] == "success")
    assert server.run("add 1", "t")["answer"] == "result 2"
    newest = max(v["seq"] for v in server.versions("t"))

    saved = server.http.get(f"/api/threads/t/checkpoints/{first_end}").json()
    assert saved["version"]["seq"] == first_end and saved["version"]["status"] == "success"
    contents = [m.get("content") for m in saved["messages"]]
    assert contents[0] == "add 41" and contents[-1] == "result 42" and "add 1" not in contents
    statuses = {node["id"]: node["status"] for node in saved["nodes"]}
    assert statuses["0"] == "SUCCESS" and saved["pending_approvals"] == []
    assert all(node["path"].startswith(node["path"].split("/")[0]) for node in saved["nodes"])

    fork = server.run("add 5", "t", from_checkpoint=first_end)
    assert fork["answer"] == "result 6"
    messages = server.http.get(f"/api/runs/{fork['run_id']}/messages").json()["messages"]
    users = [m["content"] for m in messages if m["role"] == "user"]
    assert users == ["add 41", "add 5"]  # the version's conversation, not the later "add 1"
    after = server.versions("t")
    forked = [v for v in after if v["seq"] > newest and v["parent_seq"] == first_end]
    assert len(forked) == 1  # the fork's first save names the version it continued
    assert {v["seq"] for v in after} >= {first_end, newest}  # the later versions stay


def test_a_suspended_version_lists_its_pending_approval(server: Server) -> None:
    started = server.http.post("/api/runs", json={"input": "delete notes.txt", "thread_id": "w"})
    assert started.status_code == 201
    wait_until(lambda: server.http.get("/api/approvals").json()["approvals"], "the run to wait for approval")
    [waiting] = [v for v in server.versions("w") if v["status"] == "suspended"]
    saved = server.http.get(f"/api/threads/w/checkpoints/{waiting['seq']}").json()
    [pending] = saved["pending_approvals"]
    assert pending["tool"] == "delete_file" and pending["arguments"] == {"path": "notes.txt"}
    statuses = {node["id"]: node["status"] for node in saved["nodes"]}
    assert statuses["0"] == "RUNNING" and statuses["0.0.1"] == "RUNNING"  # the tool node waits
    # Forking the thread while it waits would drop the approval: refused, naming it.
    refused = server.http.post("/api/runs", json={"input": "add 1", "thread_id": "w", "from_checkpoint": 1})
    assert refused.status_code == 409 and "delete_file" in refused.json()["error"]


def test_wrong_forks_and_versions_are_refused_before_anything_runs(server: Server) -> None:
    server.run("add 1", "t")
    kept = sorted(v["seq"] for v in server.versions("t"))
    runs_before = len(server.http.get("/api/runs").json()["runs"])
    post = server.http.post
    cases = [
        ({"input": "x", "from_checkpoint": 1}, 422, "give its thread_id too"),
        ({"input": "x", "thread_id": "t", "from_checkpoint": -1}, 422, "from_checkpoint"),
        ({"input": "x", "thread_id": "t", "from_checkpoint": "one"}, 422, "from_checkpoint"),
        # Not taken for version 1 (`True == 1` in Python, "1" coerced by a lax model): refused.
        ({"input": "x", "thread_id": "t", "from_checkpoint": True}, 422, "from_checkpoint"),
        ({"input": "x", "thread_id": "t", "from_checkpoint": "1"}, 422, "from_checkpoint"),
        ({"input": "x", "thread_id": "t", "from_checkpoint": 1.0}, 422, "from_checkpoint"),
        ({"input": "x", "thread_id": "t", "from_checkpoint": [1]}, 422, "from_checkpoint"),
        ({"input": "x", "thread_id": "t", "from_checkpoint": 10**30}, 422, ""),
        ({"input": "x", "thread_id": "t", "from_checkpoint": 999}, 404, f"999 (kept versions: {kept[0]}"),
        ({"input": "x", "thread_id": "nobody", "from_checkpoint": 1}, 404, "no checkpoint for thread 'nob"),
    ]  # fmt: skip
    for body, status, words in cases:
        answer = post("/api/runs", json=body)
        assert answer.status_code == status, (body, answer.text)
        assert words in answer.json()["error"], (body, answer.json())
    assert len(server.http.get("/api/runs").json()["runs"]) == runs_before  # nothing ran

    get = server.http.get
    assert get("/api/threads/t/checkpoints/x1").status_code == 422
    missing = get("/api/threads/t/checkpoints/999")
    assert missing.status_code == 404 and "has no version 999 (kept versions: " in missing.json()["error"]
    unknown = get("/api/threads/nobody/checkpoints/1")
    assert unknown.status_code == 404 and "no thread 'nobody' (threads: t)" in unknown.json()["error"]
    huge = get(f"/api/threads/t/checkpoints/{'9' * 400}")
    assert huge.status_code == 422 and "a version is a number" in huge.json()["error"]
    assert get("/api/threads/t/checkpoints/%D9%A3").status_code == 422  # a non-ASCII digit


def test_without_a_store_a_fork_says_how_to_get_one() -> None:
    with live_server(console_app()) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        answer = http.post("/api/runs", json={"input": "add 1", "thread_id": "t", "from_checkpoint": 1})
        version = http.get("/api/threads/t/checkpoints/1")
        agent = http.get("/api/agent").json()
        runs = http.get("/api/runs").json()["runs"]
    assert answer.status_code == 409 and "serve with --checkpoint STORE" in answer.json()["error"]
    assert version.status_code == 409 and "--checkpoint STORE" in version.json()["error"]
    assert agent["checkpoints"] is False and runs == []


def test_the_new_routes_sit_behind_the_host_origin_and_json_rules(server: Server) -> None:
    server.run("add 1", "t")
    port = server.port
    fork = json.dumps({"input": "add 2", "thread_id": "t", "from_checkpoint": 1}).encode()
    JSON = {"Content-Type": "application/json"}
    for path in ("/api/threads/t/checkpoints/1", "/openapi.json", "/docs"):
        reply = request(port, "GET", path, host="attacker.example")
        assert reply.status == 421 and "does not answer to the host" in reply.json()["error"]
    foreign = request(port, "POST", "/api/runs", fork, headers={**JSON, "Origin": "http://attacker.example"})
    assert foreign.status == 403, foreign.body
    plain = request(port, "POST", "/api/runs", fork, headers={"Content-Type": "text/plain"})
    assert plain.status == 415
    assert len(server.http.get("/api/runs").json()["runs"]) == 1  # only the first run
    docs = request(port, "GET", "/docs")
    assert docs.status == 200 and "script-src 'self'" in docs.headers["content-security-policy"]


def test_a_version_shows_no_secret(server: Server) -> None:
    """Like every answer of the server, a saved version's messages and pending approvals are
    redacted (the store keeps what the model saw; the API shows no key)."""
    key = "sk-live0123456789abcdef"
    assert server.http.post("/api/runs", json={"input": f"delete {key}", "thread_id": "k"}).status_code == 201
    wait_until(lambda: server.http.get("/api/approvals").json()["approvals"], "the run to wait for approval")
    [waiting] = [v for v in server.versions("k") if v["status"] == "suspended"]
    answer = server.http.get(f"/api/threads/k/checkpoints/{waiting['seq']}")
    assert answer.status_code == 200 and key not in answer.text
    assert answer.json()["pending_approvals"][0]["arguments"] == {"path": "***"}
