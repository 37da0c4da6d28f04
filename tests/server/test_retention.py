"""Bounded retention of `jianmu-like serve`: finished runs (and their idle conversations) are
evicted beyond a count and after a time to live; running and suspended runs never are."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from jianmu_like import AgentTemplate, ReActConfig, create_react_node, tool
from jianmu_like.cli._parser import build_parser
from jianmu_like.guard import GuardEnforcer, RequireApproval
from jianmu_like.server import create_app
from jianmu_like.server._run_record import NotFound, Retention
from jianmu_like.server._runs import RunRegistry
from jianmu_like.testing import PATIENCE, call, reply, scripted_client
from tests.server.sse_live import live_server, read_events

release = asyncio.Event()


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@tool
async def hold(label: str) -> str:
    """Wait until the test releases it."""
    await release.wait()
    return label


def responder(body: dict[str, Any]) -> Any:
    """`add N` -> add(N, 1); `delete P` -> delete_file(P) (needs approval); `hold L` -> hold(L)."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return reply(f"result {last['content']}")
    verb, arg = last["content"].split()
    if verb == "add":
        return call("add", a=int(arg), b=1)
    if verb == "hold":
        return call("hold", label=arg)
    return call("delete_file", path=arg)


def template() -> AgentTemplate:
    root = create_react_node(
        model_client=scripted_client(responder),
        tools=[add, delete_file, hold],
        constraints=GuardEnforcer([RequireApproval(tools="delete_file")]),
        config=ReActConfig(max_iterations=5),
    )
    return AgentTemplate.from_prototype(root, log_events=False)


def finish(http: httpx.Client, question: str, thread_id: str | None = None) -> dict[str, Any]:
    body = {"input": question} if thread_id is None else {"input": question, "thread_id": thread_id}
    created = http.post("/api/runs", json=body)
    assert created.status_code == 201, created.text
    run = created.json()
    read_events(http, run["run_id"], until="done")
    return dict(run)


def test_finished_runs_beyond_the_maximum_are_evicted_oldest_first_never_a_suspended_one() -> None:
    app = create_app(template().conversation, max_runs=2, run_ttl=None)
    with live_server(app) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        waiting = http.post("/api/runs", json={"input": "delete /tmp/x"}).json()["run_id"]
        read_events(http, waiting, until="approval:pending")
        first, second, third = (finish(http, f"add {n}") for n in (1, 2, 3))

        gone = http.get(f"/api/runs/{first['run_id']}")
        assert gone.status_code == 404
        assert gone.json()["error"] == (
            f"run {first['run_id']!r} was evicted (more than 2 runs finished after it; "
            "finished runs are kept 2 at most)"
        )
        assert http.get(f"/api/runs/{first['run_id']}/events").status_code == 404
        assert http.get(f"/api/runs/{second['run_id']}").json()["answer"] == "result 3"
        assert http.get(f"/api/runs/{third['run_id']}").json()["answer"] == "result 4"
        assert http.get(f"/api/runs/{waiting}").json()["status"] == "suspended"
        assert http.get("/healthz").json()["runs"] == 3  # two finished, one suspended

        # Its conversation went with it: a follow-up would have started over without history.
        follow_up = http.post("/api/runs", json={"input": "add 9", "thread_id": first["thread_id"]})
        assert follow_up.status_code == 404
        assert f"conversation {first['thread_id']!r} was evicted" in follow_up.json()["error"]
        assert "--checkpoint" in follow_up.json()["error"]
        # A conversation whose latest run is kept goes on.
        assert finish(http, "add 10", third["thread_id"])["thread_id"] == third["thread_id"]

        # The suspended run, decided, finishes; then it counts like any finished run.
        (pending,) = http.get("/api/approvals").json()["approvals"]
        assert http.post(f"/api/approvals/{pending['id']}", json={"decision": "approve"}).status_code == 200
        assert read_events(http, waiting, until="done")[-1][2]["answer"] == "result deleted /tmp/x"
        assert http.get(f"/api/runs/{waiting}").status_code == 200
        assert http.get(f"/api/runs/{third['run_id']}").status_code == 404
        assert http.get("/api/runs/nope").json()["error"] == "no run 'nope'"


async def test_finished_runs_are_evicted_after_their_time_to_live_never_a_running_one() -> None:
    now = [1000.0]
    registry = RunRegistry(
        template().conversation, retention=Retention(max_runs=None, ttl=60), clock=lambda: now[0]
    )
    release.clear()
    done = registry.start("add 1")
    assert done.task is not None
    await done.task
    running = registry.start("hold h")
    await asyncio.sleep(0)
    now[0] += 59
    assert registry.get(done.run_id) is done
    now[0] += 2
    try:
        registry.get(done.run_id)
    except NotFound as exc:
        assert "it finished more than 60 s ago; finished runs are kept for 60 s after they finish" in str(exc)
    else:
        raise AssertionError("the expired run is still there")
    assert registry.get(running.run_id).status == "running"
    assert done.thread_id not in registry.threads  # its idle conversation was let go

    release.set()
    assert running.task is not None
    await running.task
    assert registry.get(running.run_id).status == "success"  # finished just now: kept
    now[0] += 61
    registry.evict()
    assert registry.runs == {} and registry.threads == {}
    await registry.aclose()


def test_serve_takes_the_retention_on_the_command_line() -> None:
    parser = build_parser()
    defaults = parser.parse_args(["serve", "agent.yaml"])
    assert (defaults.max_runs, defaults.run_ttl) == (1000, 3600.0)
    chosen = parser.parse_args(["serve", "agent.yaml", "--max-runs", "50", "--run-ttl", "0"])
    assert (chosen.max_runs, chosen.run_ttl) == (50, 0.0)
