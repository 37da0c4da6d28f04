"""A run paused with a store outlives its server: the next server on the same SQLite store lists
what the stored thread waits for (`GET /api/interruptions`, `GET /api/approvals`, `run_id`
null: no run holds it yet), and deciding it over HTTP resumes the thread as a new run whose
events stream like any run's. Decided once: a second decision, or two at once, is a 409, and
the thread resumes once. For an approval (a guard policy) and a breakpoint (a pause before a
tool node). Real uvicorn servers on 127.0.0.1, one after the other on one store file."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from jianmu_like.testing import PATIENCE, wait_until
from tests.server.console_agent import console_app
from tests.server.sse_live import live_server, read_events


def waiting(http: httpx.Client, kind: str) -> dict[str, Any]:
    """The one undecided interruption of `kind` the server lists (waited for)."""
    found: list[dict[str, Any]] = []

    def listed() -> bool:
        items = http.get("/api/interruptions").json()["interruptions"]
        found[:] = [i for i in items if i["kind"] == kind and not i["decided"]]
        return bool(found)

    wait_until(listed, f"a pending {kind}")
    [item] = found
    return item


def paused_before_restart(store: Path, question: str, breakpoints: list[dict[str, str]]) -> dict[str, Any]:
    """Serve on `store`, start a run that pauses, stop the server; what the run waited for."""
    with (
        live_server(console_app(checkpoint=str(store))) as url,
        httpx.Client(base_url=url, timeout=PATIENCE) as http,
    ):
        assert http.post("/api/breakpoints", json={"breakpoints": breakpoints}).status_code == 200
        run = http.post("/api/runs", json={"input": question}).json()
        kind = "breakpoint" if breakpoints else "approval"
        item = waiting(http, kind)
        assert item["run_id"] == run["run_id"]
        return item


def answer(url: str, interruption_id: str, route: str) -> httpx.Response:
    with httpx.Client(base_url=url, timeout=PATIENCE) as http:
        return http.post(f"{route}/{interruption_id}", json={"decision": "approve"})


def test_an_approval_is_decided_after_a_restart_once(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    before = paused_before_restart(store, "delete notes.txt", [])
    with (
        live_server(console_app(checkpoint=str(store))) as url,
        httpx.Client(base_url=url, timeout=PATIENCE) as http,
    ):
        item = waiting(http, "approval")
        assert (item["id"], item["thread_id"], item["run_id"]) == (before["id"], before["thread_id"], None)
        assert item["payload"]["tool"] == "delete_file" and item["payload"]["arguments"] == {
            "path": "notes.txt"
        }
        [approval] = http.get("/api/approvals").json()["approvals"]
        assert (approval["id"], approval["run_id"], approval["kind"]) == (item["id"], None, "approval")

        # Two decisions at once: one is taken (the thread resumes as a new run), the other is a 409.
        with ThreadPoolExecutor(2) as pool:
            replies = list(pool.map(lambda _: answer(url, item["id"], "/api/interruptions"), range(2)))
        assert sorted(r.status_code for r in replies) == [200, 409], [r.text for r in replies]
        [taken] = [r.json() for r in replies if r.status_code == 200]
        assert taken["kind"] == "approval" and taken["run_id"]
        events = read_events(http, taken["run_id"])
        assert events[-1][2]["status"] == "success"
        summary = http.get(f"/api/runs/{taken['run_id']}").json()
        assert (summary["thread_id"], summary["answer"]) == (item["thread_id"], "result deleted notes.txt")

        # Decided and done: a later decision, on either route, is refused and resumes nothing.
        again = answer(url, item["id"], "/api/approvals")
        assert again.status_code == 409 and "already decided" in again.text
        assert http.get("/api/interruptions").json()["interruptions"] == []
        assert len(http.get("/api/runs").json()["runs"]) == 1


def test_a_breakpoint_pause_survives_a_restart_and_continues(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    before = paused_before_restart(store, "add 41", [{"tool": "add"}])
    with (
        live_server(console_app(checkpoint=str(store))) as url,
        httpx.Client(base_url=url, timeout=PATIENCE) as http,
    ):
        [pause] = http.get("/api/approvals").json()["approvals"]
        assert (pause["id"], pause["kind"], pause["run_id"]) == (before["id"], "breakpoint", None)
        assert pause["arguments"]["node"] == "0.0.1"
        taken = answer(url, pause["id"], "/api/approvals")
        assert taken.status_code == 200, taken.text
        run_id = taken.json()["run_id"]
        assert read_events(http, run_id)[-1][2]["status"] == "success"
        assert http.get(f"/api/runs/{run_id}").json()["answer"] == "result 42"
        again = answer(url, pause["id"], "/api/interruptions")
        assert again.status_code == 409 and "already decided" in again.text
    # The next server finds the thread finished: nothing to decide, the decision a 409 still.
    with (
        live_server(console_app(checkpoint=str(store))) as url,
        httpx.Client(base_url=url, timeout=PATIENCE) as http,
    ):
        assert http.get("/api/interruptions").json()["interruptions"] == []
        late = http.post(
            f"/api/interruptions/{pause['id']}", json={"decision": "approve", "thread_id": pause["thread_id"]}
        )
        assert late.status_code == 409 and "already decided" in late.text


def test_a_decision_made_elsewhere_stands_and_resumes_the_thread_once(tmp_path: Path) -> None:
    """An operator decided the stored approval first (as `jianmu-like approvals deny` does): the
    server's decision is a 409 naming the first, and the thread goes on with it, once."""
    from jianmu_like._run.review import record_decision
    from jianmu_like.checkpoint import SQLiteCheckpointer
    from jianmu_like.guard import ApprovalDecision

    store = tmp_path / "runs.db"
    before = paused_before_restart(store, "delete notes.txt", [])
    with (
        live_server(console_app(checkpoint=str(store))) as url,
        httpx.Client(base_url=url, timeout=PATIENCE) as http,
    ):
        operator = SQLiteCheckpointer(store)
        try:
            record_decision(
                operator, before["thread_id"], before["id"], ApprovalDecision(approved=False, reason="no")
            )
        finally:
            operator.close()
        late = answer(url, before["id"], "/api/interruptions")
        assert late.status_code == 409 and late.json()["decision"] == "denied", late.text
        again = answer(url, before["id"], "/api/approvals")
        assert again.status_code == 409
        [run] = http.get("/api/runs").json()["runs"]  # resumed once, with the operator's denial
        assert read_events(http, run["run_id"])[-1][2]["status"] == "success"
        assert run["thread_id"] == before["thread_id"]
        assert "denied" in http.get(f"/api/runs/{run['run_id']}").json()["answer"]
