"""A call that waits for approval is listed as soon as its guard says so, not once the whole run
suspends: in a batch where a sibling call still runs (it waits on an event this test sets only
after it has seen the approval listed and decided it), the server lists the approval
(`GET /api/interruptions`, `GET /api/approvals`, the `approval` SSE channel's `requested`
message) and takes a decision while the sibling works; two decisions at once leave one standing
(the other is a 409), the run never suspends, and the approved call runs once. Real uvicorn on
127.0.0.1, the real `openai` client against the strict scripted model server, a SQLite store."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from jianmu_like import Agent, ToolCall, create_react_node, tool
from jianmu_like.guard import GuardDecision, GuardEnforcer
from jianmu_like.server import create_app
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, calls, reply, wait_until
from tests.server.sse_live import live_server, read_events


def needs_approval(call: ToolCall, _tool: Any, _ctx: Any) -> GuardDecision | None:
    return GuardDecision.pending("deleting needs a human") if call.name == "delete_file" else None


def model(body: dict[str, Any]) -> Any:
    """One batch of two calls (one guarded, one slow), then an answer naming both results."""
    results = sorted(m["content"] for m in body["messages"] if m["role"] == "tool")
    return (
        reply("done: " + "; ".join(results))
        if results
        else calls(call("delete_file", path="notes.txt"), call("wait_for_go"))
    )


def test_an_approval_is_listed_and_decided_while_a_sibling_call_still_runs(tmp_path: Path) -> None:
    go = threading.Event()
    deleted: list[str] = []

    @tool
    async def wait_for_go() -> str:
        """Wait until the test says go."""
        went = await asyncio.to_thread(go.wait, PATIENCE)
        return "went" if went else "gave up waiting"

    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return f"deleted {path}"

    store = str(tmp_path / "runs.db")
    with ScriptedOpenAIServer(model) as srv:

        def factory() -> Agent:
            root = create_react_node(
                model_client=srv.client(),
                tools=[delete_file, wait_for_go],
                constraints=GuardEnforcer([needs_approval]),
            )
            return Agent(root, checkpointer=store, log_events=False)

        with live_server(create_app(factory)) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
            run_id = http.post("/api/runs", json={"input": "delete notes.txt, then wait"}).json()["run_id"]

            def listed() -> list[dict[str, Any]]:
                items = http.get("/api/interruptions").json()["interruptions"]
                return [i for i in items if i["kind"] == "approval" and i["run_id"] == run_id]

            [item] = wait_until(listed, "the approval, listed while its sibling call runs")
            assert item["payload"]["tool"] == "delete_file" and not item["decided"]
            assert not go.is_set()  # the sibling still waits: the run has not suspended
            assert http.get(f"/api/runs/{run_id}").json()["status"] == "running"
            [legacy] = [a for a in http.get("/api/approvals").json()["approvals"] if a["run_id"] == run_id]
            assert legacy["id"] == item["id"] and legacy["decided"] is False

            def approve(_: int) -> httpx.Response:
                with httpx.Client(base_url=url, timeout=PATIENCE) as client:
                    return client.post(f"/api/interruptions/{item['id']}", json={"decision": "approve"})

            with ThreadPoolExecutor(2) as pool:  # two decisions at once: one stands
                replies = list(pool.map(approve, range(2)))
            assert sorted(r.status_code for r in replies) == [200, 409], [r.text for r in replies]
            [taken] = [r.json() for r in replies if r.status_code == 200]
            assert (taken["run_id"], taken["kind"], taken["status"]) == (run_id, "approval", "running")
            [refused] = [r.json() for r in replies if r.status_code == 409]
            assert "already decided" in refused["error"]
            assert not go.is_set()  # decided while the sibling still works

            go.set()
            events = read_events(http, run_id)
            assert events[-1][2]["status"] == "success", events[-1]
            assert deleted == ["notes.txt"]
            summary = http.get(f"/api/runs/{run_id}").json()
            assert summary["answer"] == "done: deleted notes.txt; went"

    human = [(n, data) for n, name, data in events if name == "approval"]
    statuses = [data["status"] for _, data in human]
    assert statuses == ["requested", "decided"]  # listed at once; never suspended ("pending")
    requested = human[0][1]["interruptions"][0]
    assert (requested["id"], requested["kind"], requested["state"]) == (item["id"], "approval", "pending")
    assert requested["payload"]["arguments"] == {"path": "notes.txt"}
