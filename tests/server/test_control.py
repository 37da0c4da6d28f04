"""Control over real HTTP: cancelling a run (halted, no further model or tool call, the thread
free again) and denying a call with a reason (its arguments shown in the stream)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from jianmu_like import AgentTemplate, ReActConfig, create_react_node, tool
from jianmu_like.guard import GuardEnforcer, RequireApproval
from jianmu_like.server import create_app
from jianmu_like.testing import PATIENCE, call, reply, scripted_client, wait_until
from tests.server.sse_live import live_server, read_events, sse_events

gate = threading.Event()
entered = threading.Event()
requests: list[dict[str, Any]] = []


@tool
async def wait(label: str) -> str:
    """Wait until released."""
    entered.set()
    released = await asyncio.to_thread(gate.wait, PATIENCE)
    return f"{label} released" if released else f"{label} timed out"


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def responder(body: dict[str, Any]) -> Any:
    requests.append(body)
    last = body["messages"][-1]
    if last["role"] == "tool":
        return reply(f"result {last['content']}")
    verb, _, arg = str(last["content"]).partition(" ")
    return call("wait", label=arg) if verb == "wait" else call("delete_file", path=arg)


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    gate.clear()
    entered.clear()
    requests.clear()
    root = create_react_node(
        model_client=scripted_client(responder),
        tools=[wait, delete_file],
        constraints=GuardEnforcer([RequireApproval(tools="delete_file")]),
        config=ReActConfig(stream=True, max_iterations=5),
    )
    template = AgentTemplate.from_prototype(root, log_events=False)
    with (
        live_server(create_app(template.conversation)) as url,
        httpx.Client(base_url=url, timeout=PATIENCE) as client,
    ):
        yield client
    gate.set()


def test_cancel_halts_the_run_with_no_further_call_and_frees_the_thread(http: httpx.Client) -> None:
    started = http.post("/api/runs", json={"input": "wait a", "thread_id": "t-cancel"}).json()
    run_id = started["run_id"]
    wait_until(entered.is_set, "the run to wait in its tool")
    answer = http.post(f"/api/runs/{run_id}/cancel", json={})
    assert answer.status_code == 202, answer.text
    events = read_events(http, run_id)
    done = events[-1]
    assert done[1] == "done" and done[2]["status"] == "cancelled"
    assert "cancelled by a client" in done[2]["error"]
    summary = http.get(f"/api/runs/{run_id}").json()
    assert summary["status"] == "cancelled"
    assert len(requests) == 1
    gate.set()  # the tool's worker thread ends; the cancelled call's result goes nowhere
    assert http.post(f"/api/runs/{run_id}/cancel", json={}).status_code == 409
    # The conversation is free again and goes on.
    again = http.post("/api/runs", json={"input": "wait b", "thread_id": "t-cancel"})
    assert again.status_code == 201, again.text
    assert read_events(http, again.json()["run_id"])[-1][2]["answer"] == "result b released"
    history = [(m["role"], m["content"]) for m in requests[1]["messages"][1:]]
    assert history[:2] == [("user", "wait a"), ("assistant", None)]  # its call, answered as stopped:
    assert history[2][0] == "tool" and "the run was stopped" in history[2][1]
    assert len(requests) == 3  # the new run's two calls: none came from the cancelled run
    assert [m["content"] for m in requests[-1]["messages"] if m["role"] == "user"] == ["wait a", "wait b"]


def test_cancel_names_what_it_cannot_cancel(http: httpx.Client) -> None:
    assert "no run 'nope'" in http.post("/api/runs/nope/cancel", json={}).json()["error"]
    run_id = http.post("/api/runs", json={"input": "delete x"}).json()["run_id"]
    wait_until(lambda: http.get(f"/api/runs/{run_id}").json()["status"] == "suspended", "the approval")
    refused = http.post(f"/api/runs/{run_id}/cancel", json={})
    assert refused.status_code == 409 and '"decision": "deny"' in refused.json()["error"]


def test_a_denied_call_shows_its_arguments_and_the_reason(http: httpx.Client) -> None:
    run_id = http.post("/api/runs", json={"input": "delete secret.txt"}).json()["run_id"]
    with http.stream("GET", f"/api/runs/{run_id}/events") as response:
        for _, channel, data in sse_events(response.iter_lines()):
            if channel == "approval" and data["status"] == "pending":
                break
    (pending,) = http.get("/api/approvals").json()["approvals"]
    decided = http.post(
        f"/api/approvals/{pending['id']}", json={"decision": "deny", "reason": "keep that file"}
    )
    assert decided.status_code == 200, decided.text
    events = read_events(http, run_id)
    denied = [d for _, c, d in events if c == "step" and d.get("denied")]
    assert len(denied) == 1
    assert denied[0]["tool_args"] == {"path": "secret.txt"} and "keep that file" in denied[0]["error"]


def test_runs_are_listed_by_status_and_thread_with_their_messages(http: httpx.Client) -> None:
    first = http.post("/api/runs", json={"input": "wait a", "thread_id": "t-list"}).json()["run_id"]
    gate.set()
    assert read_events(http, first)[-1][2]["status"] == "success"
    held = http.post("/api/runs", json={"input": "delete x"}).json()["run_id"]
    wait_until(lambda: http.get(f"/api/runs/{held}").json()["status"] == "suspended", "the approval")

    runs = http.get("/api/runs").json()["runs"]
    assert [r["run_id"] for r in runs] == [first, held]
    assert [r["run_id"] for r in http.get("/api/runs", params={"status": "suspended"}).json()["runs"]] == [
        held
    ]
    by_thread = http.get("/api/runs", params={"thread_id": "t-list"}).json()["runs"]
    assert [(r["run_id"], r["answer"]) for r in by_thread] == [(first, "result a released")]
    bad = http.get("/api/runs", params={"status": "done"})
    assert (
        bad.status_code == 422
        and "status must be one of running, success, failure, suspended, cancelled" in bad.json()["error"]
    )

    messages = http.get(f"/api/runs/{first}/messages").json()
    assert messages["thread_id"] == "t-list"
    roles = [(m["role"], m["content"]) for m in messages["messages"]]
    assert roles[0] == ("user", "wait a") and roles[-1] == ("assistant", "result a released")
    assert roles[1][0] == "assistant" and roles[2] == ("tool", "a released")
    waiting = http.get(f"/api/runs/{held}/messages").json()["messages"]
    assert waiting[-1]["tool_calls"][0]["function"]["name"] == "delete_file"
    assert http.get("/api/runs/nope/messages").status_code == 404
