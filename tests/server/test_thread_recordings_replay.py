"""A thread's kept recording opened over HTTP (`POST /api/threads/{id}/recordings/{run_id}/replay`):
replayed as a served run, followed like a folder recording (statuses, state, model requests),
writing nothing into the thread; a recording still running, incomplete or truncated is a 409
saying so, an unknown one a 404 that shows no path, one too big or whose agent saves into a store
a 422; a page of another origin or host is refused. The folder's recording is replayed from the
bytes that were checked, not read again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from jianmu_like import Agent
from jianmu_like.checkpoint import MemoryCheckpointer, SQLiteCheckpointer
from jianmu_like.server import create_app
from jianmu_like.server._recordings import Recordings
from jianmu_like.testing import PATIENCE, wait_until
from tests.server import console_agent
from tests.server.console_agent import build_root, record
from tests.server.edge_agent import request
from tests.server.sse_live import live_server, read_events, sse_events

ENTRY = "tests.server.console_agent:replayable"
MAX_BYTES = 200_000


def stored() -> Agent:
    """An agent entry that saves into a checkpoint store: a replay on it would write there."""
    return Agent(build_root(), checkpointer=MemoryCheckpointer(), log_events=False)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Path]]:
    db = tmp_path_factory.mktemp("threadrec") / "runs.db"

    def build() -> Agent:
        # The recordings name the agent they replay on, as a served agent file's name its file.
        return Agent(build_root(), checkpointer=str(db), keep_recordings=True, source=ENTRY, log_events=False)

    app = create_app(build, allow_modules=["tests.server"], max_recording_bytes=MAX_BYTES)
    with live_server(app) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        yield http, db


def ask(http: httpx.Client, question: str, thread_id: str) -> str:
    started = http.post("/api/runs", json={"input": question, "thread_id": thread_id})
    assert started.status_code == 201, started.text
    run_id: str = started.json()["run_id"]
    return run_id


def listing(http: httpx.Client, thread_id: str) -> list[dict[str, Any]]:
    answer = http.get(f"/api/threads/{thread_id}/recordings")
    assert answer.status_code == 200, answer.text
    found: list[dict[str, Any]] = answer.json()["recordings"]
    return found


def replays(http: httpx.Client) -> list[str]:
    return [r["run_id"] for r in http.get("/api/runs").json()["runs"] if r["input"].startswith("replay of")]


def replay(http: httpx.Client, thread_id: str, run_id: str, **options: Any) -> httpx.Response:
    return http.post(f"/api/threads/{thread_id}/recordings/{run_id}/replay", json={}, **options)


def test_a_thread_recording_replays_as_a_run(served: tuple[httpx.Client, Path]) -> None:
    http, _db = served
    asked = ask(http, "add 41", "t")
    assert read_events(http, asked)[-1][2]["answer"] == "result 42"
    [info] = listing(http, "t")
    assert info["status"] == "success"
    versions = len(http.get("/api/threads/t/history").json()["versions"])

    opened = replay(http, "t", info["run_id"])
    assert opened.status_code == 201, opened.text
    body = opened.json()
    assert body["recording"] == f"run {info['run_id']} of t" and body["agent"] == ENTRY
    assert body["tree"]["children"][0]["children"][1]["name"] == "ReActAgent.Tools"
    run_id = body["run_id"]
    done = read_events(http, run_id)[-1][2]
    assert (done["status"], done["answer"]) == ("success", "result 42"), done
    with http.stream("GET", f"/api/runs/{run_id}/nodes") as response:
        steps = [data for _, _, data in sse_events(response.iter_lines())]
    tools = [c["status"] for s in steps for c in s["changes"] if c["id"] == "0.0.1"]
    assert "RUNNING" in tools and tools[-1] == "SUCCESS", tools
    assert "/final_answer" in {op["path"] for s in steps for op in s.get("state", [])}
    sent = http.get(f"/api/runs/{run_id}/requests").json()["requests"]
    assert [r["n"] for r in sent] == [1, 2]
    assert sent[0]["request"]["messages"][-1]["content"] == "add 41"
    summary = http.get(f"/api/runs/{run_id}").json()
    assert summary["input"] == f"replay of run {info['run_id']} of t"
    assert summary["thread_id"] == f"replay-{run_id}"
    # The replay wrote nothing into the thread it came from.
    assert [i["run_id"] for i in listing(http, "t")] == [info["run_id"]]
    assert len(http.get("/api/threads/t/history").json()["versions"]) == versions


def test_running_incomplete_truncated_unknown_big_and_foreign_are_refused(
    served: tuple[httpx.Client, Path],
) -> None:
    http, db = served
    before = replays(http)
    console_agent.gate.clear()
    try:
        waiting = ask(http, "wait w", "w")
        wait_until(
            lambda: (
                [i["status"] for i in listing(http, "w")] == ["running"]
                and any(s["status"] == "running" for s in http.get("/api/runs").json()["runs"])
            ),
            "the run to be recorded while it runs",
        )
        [running] = listing(http, "w")
        answer = replay(http, "w", running["run_id"])
        assert answer.status_code == 409 and "is still being written" in answer.json()["error"], answer.text
    finally:
        console_agent.gate.set()
    read_events(http, waiting)

    asked = ask(http, "add 1", "x")
    read_events(http, asked)
    [good] = listing(http, "x")
    data = http.get(f"/api/threads/x/recordings/{good['run_id']}").content
    header, *rest = data.splitlines()
    store = SQLiteCheckpointer(str(db))
    try:  # rows as the recorder leaves them: killed mid-run, cut at its limit, too big, an agent with a store
        store.append_recording("x", "killed", data[: len(data) // 2], status="incomplete")
        store.append_recording("x", "cut", data, status="success", truncated=True)
        store.append_recording("x", "big", data + b"\n" * MAX_BYTES, status="success")
        named = json.dumps({**json.loads(header), "agent": f"{__name__}:stored"}).encode()
        store.append_recording("x", "stored", b"\n".join([named, *rest]) + b"\n", status="success")
    finally:
        store.close()
    answer = replay(http, "x", "killed")
    assert answer.status_code == 409 and "is incomplete" in answer.json()["error"], answer.text
    answer = replay(http, "x", "cut")
    assert answer.status_code == 409 and "truncated at its size limit" in answer.json()["error"]
    answer = replay(http, "x", "big")
    assert answer.status_code == 422 and f"over the {MAX_BYTES} bytes" in answer.json()["error"]
    answer = replay(http, "x", "stored")
    assert answer.status_code == 422 and "saves into a checkpoint store" in answer.json()["error"]

    missing = replay(http, "x", "nope")
    assert missing.status_code == 404 and "no recording of run 'nope'" in missing.json()["error"]
    assert "runs.db" not in missing.text and str(db.parent) not in missing.text
    assert replay(http, "nobody", good["run_id"]).status_code == 404
    assert replay(http, "x", "a%2Fb").status_code == 404

    # A page of another origin cannot open one (a simple request needs no preflight), nor a host
    # that is not the server's (DNS rebinding).
    path = f"/api/threads/x/recordings/{good['run_id']}/replay"
    foreign = {"Origin": "https://evil.example"}
    assert http.post(path, json={}, headers=foreign).status_code == 403
    plain = http.post(path, content="{}", headers={**foreign, "Content-Type": "text/plain"})
    assert plain.status_code in (403, 415)
    port = int(str(http.base_url).rstrip("/").rsplit(":", 1)[1])
    assert request(port, "POST", path, host="attacker.example", body=b"{}").status == 421
    assert replays(http) == before  # no refusal started one

    with live_server(create_app(lambda: Agent(build_root(), log_events=False))) as url:
        answer = httpx.post(f"{url}/api/threads/x/recordings/r/replay", json={}, timeout=PATIENCE)
        assert answer.status_code == 409 and "--checkpoint STORE" in answer.json()["error"]


def test_a_folder_recording_replays_the_bytes_it_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file swapped for another once read and checked: the replay plays what was checked."""
    record(tmp_path / "add.jsonl", "add 41")
    record(tmp_path / "other.jsonl", "add 99")
    read = Recordings.read

    def read_then_swap(self: Recordings, name: str) -> bytes:
        data = read(self, name)
        (tmp_path / name).write_bytes((tmp_path / "other.jsonl").read_bytes())
        return data

    monkeypatch.setattr(Recordings, "read", read_then_swap)
    app = create_app(
        lambda: Agent(build_root(), log_events=False), recordings=tmp_path, allow_modules=["tests.server"]
    )
    with live_server(app) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        run_id = http.post("/api/recordings/add.jsonl/replay", json={}).json()["run_id"]
        assert read_events(http, run_id)[-1][2]["answer"] == "result 42"
