"""Breakpoints over HTTP: set for every run of the server, a pause listed and decided as an
approval of kind `breakpoint`, its state read and edited (checked against the state schema: a bad
edit is a 422 and the run still waits), a step to the next node, and bad breakpoints refused."""

from __future__ import annotations

from typing import Any

import httpx

from jianmu_like.testing import PATIENCE, wait_until
from tests.server.console_agent import console_app
from tests.server.sse_live import live_server


def pauses(http: httpx.Client) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def listed() -> bool:
        found[:] = [a for a in http.get("/api/approvals").json()["approvals"] if not a["decided"]]
        return bool(found)

    wait_until(listed, "a pause")
    return found


def finished(http: httpx.Client, run_id: str) -> dict[str, Any]:
    answer: dict[str, Any] = {}

    def done() -> bool:
        answer.update(http.get(f"/api/runs/{run_id}").json())
        return answer["status"] not in ("running", "suspended")

    wait_until(done, "the run to finish")
    return answer


def test_pause_read_edit_step_and_continue_over_http() -> None:
    with live_server(console_app()) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        for bad in (
            {"status": "RUNNING"},
            {"event": "tool.call.fail"},
            {"node": "0", "tool": "add"},
            {"nodes": "0"},
        ):
            answer = http.post("/api/breakpoints", json={"breakpoints": [{"tool": "add"}, bad]})
            assert answer.status_code == 422, answer.text
            assert answer.json()["detail"][0]["field"].startswith("breakpoints[1]")
        assert http.get("/api/breakpoints").json() == {"breakpoints": []}  # nothing changed

        assert http.post("/api/breakpoints", json={"breakpoints": [{"tool": "add"}]}).status_code == 200
        run = http.post("/api/runs", json={"input": "add 41"}).json()
        [pause] = pauses(http)
        assert pause["kind"] == "breakpoint" and pause["arguments"]["node"] == "0.0.1"
        state = http.get(f"/api/runs/{run['run_id']}/state").json()
        assert state["status"] == "suspended"
        assert state["state"]["actions"][0]["arguments"] == {"a": 41, "b": 1}
        assert "actions" in state["state_schema"]["properties"]

        # A bad edit is refused and loses nothing: the run still waits on the same pause.
        bad = {"decision": "approve", "arguments": {"state": {"rounds": "many"}}}
        answer = http.post(f"/api/approvals/{pause['id']}", json=bad)
        assert answer.status_code == 422 and "rounds" in answer.text
        assert [p["id"] for p in pauses(http)] == [pause["id"]]

        action = state["state"]["actions"][0]
        action["arguments"] = {"a": 99, "b": 1}
        http.post("/api/breakpoints", json={"breakpoints": []})
        step = {"decision": "approve", "arguments": {"step": True, "state": {"actions": [action]}}}
        assert http.post(f"/api/approvals/{pause['id']}", json=step).status_code == 200
        [after] = pauses(http)  # stepped: paused again before the next node (the Done gate)
        assert after["id"] != pause["id"] and after["arguments"]["node"] == "0.0.2"
        assert http.post(f"/api/approvals/{after['id']}", json={"decision": "approve"}).status_code == 200
        assert finished(http, run["run_id"])["answer"] == "result 100"


def test_pause_after_an_event_then_after_a_status_over_http() -> None:
    """`boom`'s tool fails: the event rule pauses before the Done gate, then the Done gate fails
    (the loop goes round) and the status rule pauses before the loop; each pause says why."""
    tools = "ReActAgent/ReActAgent.Loop/ReActAgent.Tools"
    done = "ReActAgent/ReActAgent.Loop/ReActAgent.Done"
    rules = [{"event": "tool.call.failed"}, {"status": "failure", "node": "ReActAgent.Done"}]
    with live_server(console_app()) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        answer = http.post("/api/breakpoints", json={"breakpoints": [{"event": "tool.call.fail"}]})
        assert answer.status_code == 422 and "tool.call.failed" in answer.text  # a close match
        assert http.post("/api/breakpoints", json={"breakpoints": rules}).status_code == 200
        listed = [{"event": "tool.call.failed"}, {"node": "ReActAgent.Done", "status": "FAILURE"}]
        assert http.get("/api/breakpoints").json() == {"breakpoints": listed}

        run = http.post("/api/runs", json={"input": "boom x"}).json()
        [pause] = pauses(http)
        assert pause["kind"] == "breakpoint" and pause["arguments"]["node"] == "0.0.2"
        assert pause["arguments"]["trigger"] == {"event": "tool.call.failed", "node": tools}
        assert "after event tool.call.failed" in pause["reason"]
        assert http.post(f"/api/approvals/{pause['id']}", json={"decision": "approve"}).status_code == 200

        [after] = pauses(http)
        assert after["id"] != pause["id"] and after["arguments"]["node"] == "0.0"
        assert after["arguments"]["trigger"] == {"status": "FAILURE", "node": done, "node_id": "0.0.2"}
        http.post("/api/breakpoints", json={"breakpoints": []})
        assert http.post(f"/api/approvals/{after['id']}", json={"decision": "approve"}).status_code == 200
        assert finished(http, run["run_id"])["status"] == "success"


def test_an_agent_files_breakpoints_are_the_servers() -> None:
    from jianmu_like import Agent
    from jianmu_like.server import create_app
    from tests.server.console_agent import build_root

    def made() -> Agent:
        agent = Agent(build_root(), log_events=False)
        agent.breakpoints.set([{"tool": "add"}])  # as load_agent does with `breakpoints:`
        return agent

    with live_server(create_app(made)) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        assert http.get("/api/breakpoints").json() == {"breakpoints": [{"tool": "add"}]}
        run = http.post("/api/runs", json={"input": "add 1"}).json()
        [pause] = pauses(http)
        assert pause["kind"] == "breakpoint"
        http.post("/api/breakpoints", json={"breakpoints": []})
        http.post(f"/api/approvals/{pause['id']}", json={"decision": "approve"})
        assert finished(http, run["run_id"])["answer"] == "result 2"
