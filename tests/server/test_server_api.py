"""The HTTP/SSE API over real HTTP: uvicorn on 127.0.0.1, agents on the scripted model."""

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
from jianmu_like.testing import PATIENCE, ScriptedToolCall, call, calls, error_reply, reply, scripted_client
from tests.server.sse_live import live_server, read_events, shape, sse_events

gate = threading.Event()
"""Holds the `wait` tool until a test releases it (so a test can act while a run is mid-tool)."""
deleted: list[str] = []


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def wait(label: str) -> str:
    """Wait until released."""
    released = await asyncio.to_thread(gate.wait, PATIENCE)
    return f"{label} released" if released else f"{label} timed out"


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    deleted.append(path)
    return f"deleted {path}"


def responder(body: dict[str, Any]) -> Any:
    """`add N` -> add(N, 1); `wait L` -> wait(L); `delete P` -> delete_file(P); after a tool
    result: "result <output>", or the interrupt quoted when one was injected."""
    messages = body["messages"]
    users = [m["content"] for m in messages if m["role"] == "user"]
    last = messages[-1]
    if last["role"] == "user" and last["content"].startswith("[USER INTERRUPT]"):
        return reply(f"noted: {last['content']}")
    if last["role"] == "tool":
        return reply(f"result {last['content']}")
    verb, arg = users[-1].split()
    if verb == "add":
        return call("add", a=int(arg), b=1)
    if verb == "fail":
        return error_reply(400, f"scripted refusal: {arg}")
    if verb == "wait":
        return call("wait", label=arg)
    if verb == "same":  # every conversation's call has the same id (some providers number calls)
        return calls(ScriptedToolCall(name="delete_file", arguments={"path": arg}, id="call_same"))
    return call("delete_file", path=arg)


def make_app(*, stream: bool = True, token: str | None = None) -> Any:
    guard = GuardEnforcer([RequireApproval(tools="delete_file")])
    root = create_react_node(
        model_client=scripted_client(responder),
        tools=[add, wait, delete_file],
        constraints=guard,
        config=ReActConfig(stream=stream, max_iterations=5),
    )
    template = AgentTemplate.from_prototype(root, log_events=False)
    return create_app(template.conversation, token=token)


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    gate.clear()
    with live_server(make_app()) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        yield http
    gate.set()


def start(client: httpx.Client, question: str, thread_id: str | None = None) -> str:
    body: dict[str, Any] = {"input": question}
    if thread_id is not None:
        body["thread_id"] = thread_id
    response = client.post("/api/runs", json=body)
    assert response.status_code == 201, response.text
    run_id: str = response.json()["run_id"]
    return run_id


def test_a_run_with_a_tool_streams_every_channel_in_order(client: httpx.Client) -> None:
    run_id = start(client, "add 41")
    events = read_events(client, run_id)
    assert shape(events) == [
        "step:thinking:start",
        "step:thinking:done",
        "step:iteration:start",
        "step:iteration:done",
        "step:thinking:start",
        "answer:start",
        "answer:delta",
        "answer:delta",
        "step:thinking:done",
        "step:answer:start",
        "answer:done",
        "done:success",
    ]
    assert [e[0] for e in events] == list(range(1, len(events) + 1))
    by_shape = dict(zip(shape(events), (e[2] for e in events), strict=False))
    tool_start, tool_done = by_shape["step:iteration:start"], by_shape["step:iteration:done"]
    assert tool_start["tool_name"] == "add" and tool_start["tool_args"] == {"a": 41, "b": 1}
    assert tool_start["iteration"] == 1
    assert tool_done["observation"] == "42" and tool_done["error"] is None
    assert tool_done["iter_elapsed"] >= 0
    deltas = [d["content"] for _, c, d in events if c == "answer" and d["status"] == "delta"]
    assert "".join(deltas) == "result 42" == by_shape["answer:done"]["content"]
    done = events[-1][2]
    assert done["answer"] == "result 42" and done["status"] == "success"
    assert done["iterations"] == 2 and done["usage"]["total_tokens"] == 30 and done["elapsed"] > 0

    # A late client gets everything so far; Last-Event-ID resumes after that event.
    assert read_events(client, run_id) == events
    assert read_events(client, run_id, last_event_id=4) == events[4:]
    summary = client.get(f"/api/runs/{run_id}").json()
    assert summary["status"] == "success" and summary["answer"] == "result 42"
    assert summary["termination"] == {"reason": "completed", "iterations": 2}


def test_without_streaming_the_answer_is_one_delta() -> None:
    with live_server(make_app(stream=False)) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        events = read_events(http, start(http, "add 1"))
    answer = [(d["status"], d["content"]) for _, c, d in events if c == "answer"]
    assert answer == [("start", ""), ("delta", "result 2"), ("done", "result 2")]


def test_an_approval_decided_over_http_resumes_the_run(client: httpx.Client) -> None:
    deleted.clear()
    run_id = start(client, "delete /tmp/x")
    before = read_events(client, run_id, until="approval:pending")
    assert before[-1][2]["status"] == "pending"
    [pending] = before[-1][2]["approvals"]
    assert pending["tool"] == "delete_file" and pending["arguments"] == {"path": "/tmp/x"}
    assert client.get(f"/api/runs/{run_id}").json()["status"] == "suspended"
    assert client.get("/api/approvals").json()["approvals"] == [pending]
    assert deleted == []

    bad = client.post(f"/api/approvals/{pending['id']}", json={"decision": "maybe"})
    assert bad.status_code == 422 and "decision" in bad.json()["error"]
    assert client.post("/api/approvals/nope.call_1", json={"decision": "approve"}).status_code == 404
    decided = client.post(f"/api/approvals/{pending['id']}", json={"decision": "approve"})
    assert decided.status_code == 200, decided.text

    events = read_events(client, run_id, last_event_id=before[-1][0])
    assert shape(events)[0] == "approval:decided" and events[0][2]["approvals"][0]["decision"] == "approve"
    assert "step:iteration:done" in shape(events)
    assert events[-1][2]["answer"] == "result deleted /tmp/x"
    assert deleted == ["/tmp/x"]
    assert client.get("/api/approvals").json()["approvals"] == []
    again = client.post(f"/api/approvals/{pending['id']}", json={"decision": "deny"})
    assert again.status_code == 409 and again.json()["decision"] == "approved"
    assert "already decided (approved)" in again.json()["error"]
    legacy = client.post(f"/api/approvals/{run_id}.{pending['id']}", json={"decision": "deny"})
    assert legacy.status_code == 409 and legacy.json()["decision"] == "approved"


def test_an_approval_with_corrected_arguments_over_http(client: httpx.Client) -> None:
    deleted.clear()
    run_id = start(client, "delete /tmp/wrong")
    before = read_events(client, run_id, until="approval:pending")
    [pending] = before[-1][2]["approvals"]
    url = f"/api/approvals/{pending['id']}"

    bad = client.post(url, json={"decision": "approve", "arguments": {"path": 3}})
    assert bad.status_code == 422, bad.text
    assert "do not match tool 'delete_file'" in bad.json()["error"] and "path" in bad.json()["error"]
    assert bad.json()["detail"][0]["field"] == "arguments"
    denial = client.post(url, json={"decision": "deny", "arguments": {"path": "/tmp/x"}})
    assert denial.status_code == 422 and "not a denial" in denial.json()["error"]
    assert client.get("/api/approvals").json()["approvals"] == [pending]  # still waiting

    edited = client.post(url, json={"decision": "approve", "arguments": {"path": "/tmp/right"}})
    assert edited.status_code == 200, edited.text
    events = read_events(client, run_id, last_event_id=before[-1][0])
    decided = events[0][2]["approvals"][0]
    assert decided["decision"] == "approve" and decided["decision_arguments"] == {"path": "/tmp/right"}
    assert deleted == ["/tmp/right"]
    note = '[a human reviewer approved this call with corrected arguments: {"path": "/tmp/right"}]'
    assert events[-1][2]["answer"] == f"result {note}\ndeleted /tmp/right"


def test_an_approval_id_pending_in_two_conversations_needs_its_thread(client: httpx.Client) -> None:
    deleted.clear()
    runs = {thread: start(client, f"same /tmp/{thread}", thread) for thread in ("ta", "tb")}
    for run_id in runs.values():
        suspended = read_events(client, run_id, until="approval:pending")[-1][2]
        assert suspended["approvals"][0]["id"] == "call_same"
    ambiguous = client.post("/api/approvals/call_same", json={"decision": "approve"})
    assert ambiguous.status_code == 409 and "ta, tb" in ambiguous.json()["error"]
    assert "thread_id" in ambiguous.json()["error"]
    assert deleted == []
    body = {"decision": "approve", "thread_id": "tb"}
    assert client.post("/api/approvals/call_same", json=body).status_code == 200
    assert read_events(client, runs["tb"])[-1][2]["answer"] == "result deleted /tmp/tb"
    assert client.get(f"/api/runs/{runs['ta']}").json()["status"] == "suspended"  # untouched
    again = client.post("/api/approvals/call_same", json=body)
    assert again.status_code == 409 and again.json()["decision"] == "approved"
    other = client.post(
        "/api/approvals/call_same", json={"decision": "deny", "thread_id": "ta", "reason": "no"}
    )
    assert other.status_code == 200
    assert read_events(client, runs["ta"])[-1][2]["answer"] == "result Error: denied by a human reviewer: no"
    assert deleted == ["/tmp/tb"]


def test_a_new_run_on_a_thread_waiting_for_approval_is_refused(client: httpx.Client) -> None:
    deleted.clear()
    run_id = start(client, "delete /tmp/held", "held")
    [pending] = read_events(client, run_id, until="approval:pending")[-1][2]["approvals"]
    refused = client.post("/api/runs", json={"input": "add 1", "thread_id": "held"})
    assert refused.status_code == 409
    error = refused.json()["error"]
    assert (
        f"thread 'held' is suspended waiting for approvals: {pending['id']} (delete_file, waiting)" in error
    )
    assert "POST /api/approvals/" in error
    assert client.get("/api/approvals").json()["approvals"] == [pending]  # kept as it was
    assert client.post(f"/api/approvals/{pending['id']}", json={"decision": "approve"}).status_code == 200
    assert read_events(client, run_id)[-1][2]["answer"] == "result deleted /tmp/held"
    assert deleted == ["/tmp/held"]


def test_an_injected_follow_up_reaches_the_model_between_iterations(client: httpx.Client) -> None:
    run_id = start(client, "wait w1")
    read_events(client, run_id, until="step")  # the run is under way
    response = client.post(f"/api/runs/{run_id}/inject", json={"content": "also say hi"})
    assert response.status_code == 202
    gate.set()
    events = read_events(client, run_id)
    injects = [d for _, c, d in events if c == "inject"]
    assert [(d["status"], d["content"]) for d in injects] == [
        ("queued", "also say hi"),
        ("applied", "[USER INTERRUPT] also say hi"),
    ]
    assert events[-1][2]["answer"] == "noted: [USER INTERRUPT] also say hi"
    late = client.post(f"/api/runs/{run_id}/inject", json={"content": "too late"})
    assert late.status_code == 409 and "thread_id" in late.json()["error"]


def test_a_follow_up_sent_while_a_run_awaits_approval_is_applied_after_the_resume(
    client: httpx.Client,
) -> None:
    run_id = start(client, "delete /tmp/z")
    before = read_events(client, run_id, until="approval:pending")
    [pending] = before[-1][2]["approvals"]
    response = client.post(f"/api/runs/{run_id}/inject", json={"content": "then say bye"})
    assert response.status_code == 202 and response.json()["queued"] == 1
    assert client.post(f"/api/approvals/{pending['id']}", json={"decision": "approve"}).status_code == 200
    events = read_events(client, run_id)
    injects = [(d["status"], d["content"]) for _, c, d in events if c == "inject"]
    assert injects == [("queued", "then say bye"), ("applied", "[USER INTERRUPT] then say bye")]
    assert events[-1][2]["answer"] == "noted: [USER INTERRUPT] then say bye"


def test_a_client_that_disconnects_never_cancels_the_run(client: httpx.Client) -> None:
    run_id = start(client, "wait w2")
    with client.stream("GET", f"/api/runs/{run_id}/events") as response:
        next(response.iter_lines())  # one line read, then the connection is dropped
    gate.set()
    events = read_events(client, run_id)  # a new client sees the run finish
    assert events[-1][2]["answer"] == "result w2 released"
    assert client.get(f"/api/runs/{run_id}").json()["status"] == "success"


def test_a_thread_continues_its_conversation_and_a_busy_thread_is_refused(client: httpx.Client) -> None:
    first = client.post("/api/runs", json={"input": "add 1", "thread_id": "t1"}).json()
    assert first["thread_id"] == "t1"
    read_events(client, first["run_id"])
    second = start(client, "add 2", thread_id="t1")
    assert read_events(client, second)[-1][2]["answer"] == "result 3"
    waiting = start(client, "wait w3", thread_id="t2")
    busy = client.post("/api/runs", json={"input": "add 3", "thread_id": "t2"})
    assert busy.status_code == 409 and waiting in busy.json()["error"]
    gate.set()
    read_events(client, waiting)


async def test_concurrent_runs_each_receive_exactly_their_own_events() -> None:
    with live_server(make_app()) as url:
        async with httpx.AsyncClient(base_url=url, timeout=PATIENCE) as http:

            async def one(i: int) -> tuple[int, list[str], str]:
                run = (await http.post("/api/runs", json={"input": f"add {i}"})).json()
                answers, tools = "", []
                async with http.stream("GET", f"/api/runs/{run['run_id']}/events") as response:
                    lines = [line async for line in response.aiter_lines()]
                for _, channel, data in sse_events(iter(lines)):
                    if channel == "step" and data["type"] == "iteration" and data["status"] == "start":
                        tools.append(str(data["tool_args"]["a"]))
                    if channel == "done":
                        answers = data["answer"]
                return i, tools, answers

            results = await asyncio.gather(*(one(i) for i in range(100)))
    for i, tools, answer in results:
        assert tools == [str(i)] and answer == f"result {i + 1}"


def test_a_failed_run_ends_its_stream_with_the_cause(client: httpx.Client) -> None:
    run_id = start(client, "fail badly")
    events = read_events(client, run_id)
    assert shape(events) == ["step:thinking:start", "done:failure"]
    done = events[-1][2]
    assert done["answer"] is None and "scripted refusal: badly" in done["error"]
    summary = client.get(f"/api/runs/{run_id}").json()
    assert summary["status"] == "failure" and summary["error"] == done["error"]


def test_bad_bodies_are_422_naming_the_field_and_unknown_runs_404(client: httpx.Client) -> None:
    missing = client.post("/api/runs", json={"thread_id": "x"})
    assert missing.status_code == 422
    assert missing.json()["detail"][0]["field"] == "input" and "input" in missing.json()["error"]
    json_type = {"Content-Type": "application/json"}
    assert client.post("/api/runs", content=b"{not json", headers=json_type).status_code == 422
    assert missing.json()["detail"][0]["message"] == "required key is missing"
    extra = client.post("/api/runs", json={"input": "add 1", "thread": "red"})
    assert extra.status_code == 422
    unknown = {"field": "thread", "message": "unknown key (did you mean 'thread_id'?)"}
    assert extra.json()["detail"] == [unknown]
    assert client.get("/api/runs/nope").status_code == 404
    assert client.get("/api/runs/nope/events").status_code == 404
    assert client.post("/api/runs/nope/inject", json={"content": "x"}).status_code == 404


def test_agent_tree_and_health(client: httpx.Client) -> None:
    tree = client.get("/api/agent").json()["tree"]
    assert tree["name"] == "ReActAgent" and tree["type"] == "LoopUntilSuccess"
    [sequence] = tree["children"]
    types = [c["type"] for c in sequence["children"]]
    assert types == ["AgentLLMNode", "ToolExecutor", "InterruptGate", "AnswerCheck", "OutputNode"]
    assert client.get("/healthz").json()["status"] == "ok"
    assert client.get("/").status_code == 200


def test_a_token_is_required_on_every_api_route() -> None:
    with live_server(make_app(token="s3cret")) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        assert http.get("/healthz").status_code == 200
        for method, path in [("POST", "/api/runs"), ("GET", "/api/approvals"), ("GET", "/api/agent")]:
            response = http.request(method, path, json={"input": "add 1"})
            assert response.status_code == 401 and "bearer token" in response.json()["error"]
        wrong = http.get("/api/approvals", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        auth = {"Authorization": "Bearer s3cret"}
        run = http.post("/api/runs", json={"input": "add 1"}, headers=auth)
        assert run.status_code == 201
        http.headers.update(auth)
        assert read_events(http, run.json()["run_id"])[-1][2]["answer"] == "result 2"
