"""Recordings opened over HTTP (`serve --recordings DIR`): listed, replayed as a served run whose
`nodes` stream, state changes and model requests are a live run's; a changed agent's divergence
ends the run saying so, and the rest is shown as the recorded events say; a file outside the
folder, too big, or not a recording, and a page of another origin, are refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from jianmu_like.server import create_app
from jianmu_like.testing import PATIENCE
from tests.server.console_agent import build_root, record
from tests.server.sse_live import live_server, read_events, sse_events


def serve(folder: Path | None, **options: Any) -> Any:
    from jianmu_like import Agent

    options.setdefault("allow_modules", ["tests.server"])  # the recordings' agents: console_agent's
    return create_app(lambda: Agent(build_root(), log_events=False), recordings=folder, **options)


def node_messages(http: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    with http.stream("GET", f"/api/runs/{run_id}/nodes") as response:
        assert response.status_code == 200
        found = [data for _, _, data in sse_events(response.iter_lines())]
    return found  # the stream ends with the run


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("recordings")
    record(where / "add.jsonl", "add 41")
    record(where / "changed.jsonl", "add 41", entry="tests.server.console_agent:changed")
    return where


def test_a_recording_replays_as_a_run_with_statuses_state_and_requests(folder: Path) -> None:
    with live_server(serve(folder)) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        listing = http.get("/api/recordings").json()
        assert listing["folder"] is True
        assert [r["name"] for r in listing["recordings"]] == ["add.jsonl", "changed.jsonl"]
        opened = http.post("/api/recordings/add.jsonl/replay", json={})
        assert opened.status_code == 201, opened.text
        body = opened.json()
        assert body["recording"] == "add.jsonl" and body["agent"] == "tests.server.console_agent:replayable"
        assert body["tree"]["children"][0]["children"][1]["name"] == "ReActAgent.Tools"
        run_id = body["run_id"]
        events = read_events(http, run_id)
        assert events[-1][2]["status"] == "success"
        assert events[-1][2]["answer"] == "result 42"
        steps = node_messages(http, run_id)
        # The replayed tree's statuses step by step: the tool node ran, then succeeded.
        tools = [c["status"] for s in steps for c in s["changes"] if c["id"] == "0.0.1"]
        assert "RUNNING" in tools and tools[-1] == "SUCCESS", tools
        # The state's changes, as a live run's: the actions the model asked for.
        patched = {op["path"] for s in steps for op in s.get("state", [])}
        assert "/actions" in patched and "/final_answer" in patched
        # The model requests of the replayed run: two calls, the second with the tool's result.
        sent = http.get(f"/api/runs/{run_id}/requests").json()["requests"]
        assert [r["n"] for r in sent] == [1, 2]
        last = sent[1]["request"]["messages"][-1]
        assert (last["role"], last["content"], last["name"]) == ("tool", "42", "add")
        summary = http.get(f"/api/runs/{run_id}").json()
        assert summary["input"] == "replay of add.jsonl" and summary["status"] == "success"
        assert summary["thread_id"] == body["thread_id"] == f"replay-{run_id}"


def test_a_changed_agent_diverges_and_the_rest_is_what_the_events_say(folder: Path) -> None:
    with live_server(serve(folder)) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        # The recording names `changed`, whose prompt differs from the agent that recorded it.
        run_id = http.post("/api/recordings/changed.jsonl/replay", json={}).json()["run_id"]
        done = read_events(http, run_id)[-1][2]
        assert done["status"] == "failure"
        assert "replay diverged" in done["error"] and "model request differs" in done["error"]
        steps = node_messages(http, run_id)
        recorded = [s["recorded"] for s in steps if "recorded" in s]
        assert recorded, steps
        assert any(r["type"] == "tool.call.completed" for r in recorded)
        tool_step = next(s for s in steps if s.get("recorded", {}).get("type") == "tool.call.started")
        assert {c["id"]: c["status"] for c in tool_step["changes"]}["0.0.1"] == "RUNNING"


def test_bad_names_big_files_and_non_recordings_are_refused(folder: Path, tmp_path: Path) -> None:
    (tmp_path / "outside.jsonl").write_text((folder / "add.jsonl").read_text())
    own = tmp_path / "own"
    own.mkdir()
    (own / "link.jsonl").symlink_to(tmp_path / "outside.jsonl")
    (own / "notes.jsonl").write_text('{"kind": "note"}\n')
    (own / "broken.jsonl").write_text("{" * 5000 + "\n")
    (own / "big.jsonl").write_text((folder / "add.jsonl").read_text() + "\n" * 4096)
    lines = (folder / "add.jsonl").read_text().splitlines()
    header = json.loads(lines[0])
    for name, agent in (("hostile.jsonl", "os:abort"), ("elsewhere.jsonl", str(tmp_path / "gone.yaml"))):
        (own / name).write_text("\n".join([json.dumps({**header, "agent": agent}), *lines[1:]]) + "\n")
    size = (own / "big.jsonl").stat().st_size
    with (
        live_server(serve(own, max_recording_bytes=size - 1, allow_modules=[])) as url,
        httpx.Client(base_url=url, timeout=PATIENCE) as http,
    ):
        names = [r["name"] for r in http.get("/api/recordings").json()["recordings"]]
        # not the link out of the folder
        assert names == ["big.jsonl", "broken.jsonl", "elsewhere.jsonl", "hostile.jsonl", "notes.jsonl"]
        for name in ("link.jsonl", "..%2Foutside.jsonl", "outside.jsonl", "big.txt"):
            answer = http.post(f"/api/recordings/{name}/replay", json={})
            assert answer.status_code == 404, (name, answer.text)
        answer = http.post("/api/recordings/big.jsonl/replay", json={})
        assert answer.status_code == 422 and "over the" in answer.json()["error"]
        answer = http.post("/api/recordings/notes.jsonl/replay", json={})
        assert answer.status_code == 422 and "not a jianmu-like recording" in answer.json()["error"]
        answer = http.post("/api/recordings/broken.jsonl/replay", json={})
        assert answer.status_code == 422 and "not JSON" in answer.json()["error"]
        # A recording naming a Python entry the server may not import: refused, not imported.
        answer = http.post("/api/recordings/hostile.jsonl/replay", json={})
        assert answer.status_code == 422, answer.text
        assert "'os:abort'" in answer.json()["error"] and "--allow-module os" in answer.json()["error"]
        answer = http.post("/api/recordings/elsewhere.jsonl/replay", json={})
        assert answer.status_code == 422 and "gone.yaml" in answer.json()["error"]
        assert http.post("/api/recordings/big.jsonl/replay", json={"live": True}).status_code == 422
        assert http.get("/api/runs").json()["runs"] == []  # nothing was started


def test_without_a_folder_from_another_origin_or_without_the_token(folder: Path) -> None:
    with live_server(serve(None)) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        assert http.get("/api/recordings").json()["folder"] is False
        answer = http.post("/api/recordings/add.jsonl/replay", json={})
        assert answer.status_code == 404 and "--recordings" in answer.json()["error"]
    with (
        live_server(serve(folder, token="s3cret-token-value")) as url,
        httpx.Client(base_url=url, timeout=PATIENCE) as http,
    ):
        assert http.get("/api/recordings").status_code == 401
        assert http.post("/api/recordings/add.jsonl/replay", json={}).status_code == 401
        auth = {"Authorization": "Bearer s3cret-token-value"}
        # A page of another origin cannot open one (a simple request needs no preflight).
        foreign = {**auth, "Origin": "https://evil.example", "Content-Type": "text/plain"}
        answer = http.post("/api/recordings/add.jsonl/replay", content=json.dumps({}), headers=foreign)
        assert answer.status_code in (403, 415)
        answer = http.post(
            "/api/recordings/add.jsonl/replay", json={}, headers={**auth, "Origin": "https://evil.example"}
        )
        assert answer.status_code == 403
        assert http.get("/api/runs", headers=auth).json()["runs"] == []


def test_a_replay_takes_no_follow_up() -> None:
    """A follow-up would make the replay differ from its recording: refused while it runs."""
    from jianmu_like import Agent
    from jianmu_like.server._run_record import RunConflict, RunRecord
    from jianmu_like.server._runs import RunRegistry

    agent = Agent(build_root(), log_events=False)
    registry = RunRegistry(lambda: agent)
    record = RunRecord("r1", "replay-r1", agent, "replay of add.jsonl")
    record.replay = "add.jsonl"
    registry.runs["r1"] = record
    with pytest.raises(RunConflict, match=r"replays recording 'add\.jsonl': it takes no follow-ups"):
        registry.inject("r1", "and then?")
    assert agent.interrupts.contents() == []
