"""A follow-up sent over the API to a run waiting for approval, on a server with a checkpoint
store (`serve --checkpoint`): saved with the thread at once, let in once the run resumes; and
refused (409, not queued) when another process has moved the thread on since."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from jianmu_like import Agent
from jianmu_like.checkpoint import open_checkpointer
from jianmu_like.testing import PATIENCE, wait_until
from tests.server.console_agent import build_root, console_app
from tests.server.sse_live import live_server


def _suspended(http: httpx.Client, question: str) -> dict[str, str]:
    created = http.post("/api/runs", json={"input": question}).json()
    run_id = created["run_id"]
    wait_until(lambda: http.get(f"/api/runs/{run_id}").json()["status"] == "suspended", "the run to wait")
    return dict(created)


def test_a_follow_up_to_a_waiting_run_is_saved_then_let_in_once(tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    with (
        live_server(console_app(checkpoint=db)) as url,
        httpx.Client(base_url=url, timeout=PATIENCE) as http,
    ):
        run = _suspended(http, "delete notes.txt")
        sent = http.post(f"/api/runs/{run['run_id']}/inject", json={"content": "and say goodbye"})
        assert sent.status_code == 202, sent.text
        store = open_checkpointer(db)
        try:
            saved = store.load(run["thread_id"])
            assert saved is not None and saved.status == "suspended"
            assert [f.content for f in saved.followups] == ["and say goodbye"]
        finally:
            store.close()
        [approval] = http.get("/api/approvals").json()["approvals"]
        decided = http.post(f"/api/approvals/{approval['id']}", json={"decision": "approve"})
        assert decided.status_code == 200, decided.text
        wait_until(lambda: http.get(f"/api/runs/{run['run_id']}").json()["status"] == "success", "the run")
        answer = http.get(f"/api/runs/{run['run_id']}").json()["answer"]
        messages = http.get(f"/api/runs/{run['run_id']}/messages").json()["messages"]
    assert answer == "noted: [USER INTERRUPT] and say goodbye"
    contents = [m["content"] for m in messages]
    assert contents.count("[USER INTERRUPT] and say goodbye") == 1, contents


def test_a_follow_up_to_a_thread_moved_on_elsewhere_is_refused_not_queued(tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    with (
        live_server(console_app(checkpoint=db)) as url,
        httpx.Client(base_url=url, timeout=PATIENCE) as http,
    ):
        run = _suspended(http, "delete notes.txt")

        async def elsewhere() -> str:
            """Another process resumes the thread (nothing decided: it waits again)."""
            async with Agent(build_root(), checkpointer=db, log_events=False) as other:
                result = await other.resume(thread_id=run["thread_id"])
            return result.status

        assert asyncio.run(elsewhere()) == "suspended"
        refused = http.post(f"/api/runs/{run['run_id']}/inject", json={"content": "too late"})
        record = http.get(f"/api/runs/{run['run_id']}").json()
    assert refused.status_code == 409, refused.text
    assert "the follow-up was not queued" in refused.json()["error"], refused.text
    assert record["status"] == "suspended"
