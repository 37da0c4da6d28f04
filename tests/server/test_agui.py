"""The AG-UI endpoint (`POST /ag-ui`) over real HTTP, every stream checked by the conformance
validator `ag-ui-validate` (its CLI against the live endpoint, and its checker on each captured
stream, warnings counted): chat with the agent's own tools, shared state, front-end tools
resumed by tool messages, approvals as interrupts answered by `resume`, and the refusals.

The agent's model is the project's scripted OpenAI-compatible server, answering by the last user
message: `add` (its own `add` tool, then the sum), `weather <city>` (the front-end's
`get_weather`), `delete` (a tool that needs a person's approval); a tool result is read back."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from ag_ui_validate.pytest_plugin import assert_valid_agui

import jianmu_like.server
from jianmu_like import Agent, AgentTemplate, ReActConfig, create_react_node, tool
from jianmu_like._base.redact import register_secret
from jianmu_like.guard import GuardEnforcer, RequireApproval
from jianmu_like.server import create_app
from jianmu_like.testing import (
    PATIENCE,
    ScriptedOpenAIServer,
    call,
    calls,
    reply,
    scripted_client,
    wait_until,
)
from jianmu_like.tools import MCPToolProvider
from tests.mcp.everything import everything_command, needs_everything
from tests.server.sse_live import live_server

TOKEN = "s3cret-token-for-ag-ui"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
CLI = Path(sys.executable).parent / "ag-ui-validate"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


RELEASE = threading.Event()
"""Lets `slow` end (set when a test is done with a run held in it)."""
SECRET = "hunter2-agui-topsecret"
register_secret(SECRET, source="test")


@tool
def leak() -> str:
    """Read the vault (its output holds a secret)."""
    return f"the key is {SECRET}"


@tool
async def slow() -> str:
    """Work until released."""
    await asyncio.to_thread(RELEASE.wait, PATIENCE)
    return "released"


@tool
def delete_all(what: str) -> str:
    """Delete everything (needs a person's approval)."""
    return f"deleted {what}"


def responder(body: dict[str, Any]) -> Any:
    last = body["messages"][-1]
    offered = {t["function"]["name"] for t in body.get("tools") or ()}
    if last["role"] == "tool":
        return reply(f"read: {last['content']}")
    text = str(last["content"])
    if text == "add":
        return calls(call("add", a=1, b=2))
    if text.startswith("weather") and "get_weather" in offered:
        return calls(call("get_weather", city=text.split()[-1]))
    if text == "delete":
        return calls(call("delete_all", what="files"))
    if text == "draft":  # text before a tool call: a thought, not the answer
        return calls(call("add", a=2, b=2), content="Let me add that up.")
    if text == "fail":
        raise RuntimeError("the model is down")
    if text == "slow":
        return calls(call("slow"))
    if text == "vault":
        return calls(call("leak"))
    if text == "think":
        return reply("It is 42.", reasoning_content="Six times seven is forty-two.")
    return reply(f"echo: {text}")


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    root = create_react_node(
        model_client=scripted_client(responder),
        tools=[add, delete_all, leak, slow],
        constraints=GuardEnforcer([RequireApproval(tools=["delete_all"])]),
        config=ReActConfig(max_iterations=6, stream=True),
    )
    template = AgentTemplate.from_prototype(root, log_events=False)
    with live_server(create_app(template.conversation, token=TOKEN, model_name="helper")) as base:
        yield base


def run_input(thread: str, run: str, text: str | None, **fields: Any) -> dict[str, Any]:
    messages = [{"id": f"{run}-m", "role": "user", "content": text}] if text is not None else []
    return {"threadId": thread, "runId": run, "messages": messages, "state": {}, "tools": [], **fields}


def post(url: str, body: dict[str, Any], path: str = "/ag-ui") -> httpx.Response:
    return httpx.post(url + path, json=body, headers=AUTH, timeout=PATIENCE)


def stream(url: str, body: dict[str, Any], path: str = "/ag-ui", **validation: Any) -> list[dict[str, Any]]:
    """The events of one AG-UI run, checked by the validator (no error, no warning)."""
    answer = post(url, body, path)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/event-stream")
    events = [json.loads(line[5:]) for line in answer.text.splitlines() if line.startswith("data:")]
    assert_valid_agui(events, max_warnings=0, **validation)
    return events


def of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] == kind]


def test_the_validator_cli_passes_the_live_endpoint(url: str) -> None:
    """`ag-ui-validate <url>` as a user runs it: it POSTs its own RunAgentInput."""
    done = subprocess.run(
        [str(CLI), f"{url}/ag-ui", "--header", f"Authorization: Bearer {TOKEN}", "--max-warnings", "0",
         "--timeout", str(int(PATIENCE)), "--json"],
        capture_output=True, text=True, timeout=PATIENCE * 2, check=False,
    )  # fmt: skip
    report = json.loads(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert report["summary"]["errors"] == 0 and report["summary"]["warnings"] == 0


def test_a_run_with_its_own_tool_streams_steps_calls_text_state_and_messages(url: str) -> None:
    events = stream(url, run_input("chat-1", "run-1", "add"), features=["agentic-chat", "shared-state"])
    kinds = [event["type"] for event in events]
    assert kinds[0] == "RUN_STARTED" and kinds[-2:] == ["MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert (events[0]["threadId"], events[0]["runId"]) == ("chat-1", "run-1")
    assert (events[-1]["threadId"], events[-1]["runId"]) == ("chat-1", "run-1")
    assert "outcome" not in events[-1]  # success
    (start,) = of(events, "TOOL_CALL_START")
    assert start["toolCallName"] == "add"
    assert json.loads(of(events, "TOOL_CALL_ARGS")[0]["delta"]) == {"a": 1, "b": 2}
    assert of(events, "TOOL_CALL_RESULT")[0]["content"] == "3"
    text = "".join(event["delta"] for event in of(events, "TEXT_MESSAGE_CONTENT"))
    assert text == "read: 3"
    steps = {event["stepName"] for event in of(events, "STEP_STARTED")}
    assert {"ReActAgent.LLM", "ReActAgent.Tools"} <= steps
    # Shared state: the run's, without messages (MESSAGES_SNAPSHOT's) and step scratch.
    (snapshot,) = of(events, "STATE_SNAPSHOT")
    assert "messages" not in snapshot["snapshot"] and "actions" not in snapshot["snapshot"]
    patched = {op["path"]: op.get("value") for delta in of(events, "STATE_DELTA") for op in delta["delta"]}
    assert patched["/final_answer"] == "read: 3" and patched["/rounds"] == 2
    messages = of(events, "MESSAGES_SNAPSHOT")[0]["messages"]
    assert [m["role"] for m in messages][-4:] == ["user", "assistant", "tool", "assistant"]
    assert messages[-1]["content"] == "read: 3" and messages[-3]["toolCalls"][0]["function"]["name"] == "add"
    # It is an ordinary run of the server.
    run_id = events[0]["metadata"]["jianmu_run_id"]
    with httpx.Client(base_url=url, headers=AUTH, timeout=PATIENCE) as http:
        assert http.get(f"/api/runs/{run_id}").json()["answer"] == "read: 3"


def test_the_thread_continues_and_takes_back_the_state_it_was_shown(url: str) -> None:
    first = stream(url, run_input("chat-2", "run-a", "hello"))
    shown: dict[str, Any] = dict(of(first, "STATE_SNAPSHOT")[0]["snapshot"])
    for delta in of(first, "STATE_DELTA"):
        for op in delta["delta"]:
            shown[op["path"][1:]] = op["value"]
    history = [
        {"id": "1", "role": "user", "content": "hello"},
        {"id": "2", "role": "assistant", "content": "x"},
    ]
    body = run_input("chat-2", "run-b", None, state=shown)
    body["messages"] = [*history, {"id": "3", "role": "user", "content": "again"}]
    second = stream(url, body)
    messages = of(second, "MESSAGES_SNAPSHOT")[0]["messages"]
    assert [m["content"] for m in messages if m["role"] == "user"][-2:] == ["hello", "again"]
    # A state the front-end changed is refused: the agent's state is shown, not written.
    changed = {**shown, "final_answer": "forged"}
    refused = post(url, {**run_input("chat-2", "run-c", "more"), "state": changed})
    assert refused.status_code == 422 and "state" in refused.json()["error"]


def test_a_front_end_tool_call_ends_the_run_and_its_result_resumes_it(url: str) -> None:
    body = run_input("chat-3", "run-1", "weather in Paris", tools=[WEATHER])
    first = stream(url, body)
    (start,) = of(first, "TOOL_CALL_START")
    assert start["toolCallName"] == "get_weather"
    assert json.loads(of(first, "TOOL_CALL_ARGS")[0]["delta"]) == {"city": "Paris"}
    assert not of(first, "TOOL_CALL_RESULT")  # the front-end runs it
    assert first[-1]["outcome"] == {"type": "success", "pendingToolCallIds": [start["toolCallId"]]}
    call_id = start["toolCallId"]
    messages = [
        *body["messages"],
        {"id": "a1", "role": "assistant", "toolCalls": [
            {"id": call_id, "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
        ]},
        {"id": "t1", "role": "tool", "toolCallId": call_id, "content": "sunny 21"},
    ]  # fmt: skip
    second = stream(url, {**run_input("chat-3", "run-2", None, tools=[WEATHER]), "messages": messages})
    assert "".join(event["delta"] for event in of(second, "TEXT_MESSAGE_CONTENT")) == "read: sunny 21"
    assert second[0]["metadata"]["jianmu_run_id"] == first[0]["metadata"]["jianmu_run_id"]  # one run, resumed


def test_an_approval_is_an_interrupt_answered_by_resume(url: str) -> None:
    first = stream(url, run_input("chat-4", "run-1", "delete"))
    outcome = first[-1]["outcome"]
    assert outcome["type"] == "interrupt"
    (interrupt,) = outcome["interrupts"]
    assert interrupt["reason"] == "tool_approval" and interrupt["metadata"]["tool"] == "delete_all"
    assert interrupt["responseSchema"]["required"] == ["decision"]
    # A new message while it waits is a conflict; a resume must answer the open interrupt.
    assert post(url, run_input("chat-4", "run-x", "something else")).status_code == 409
    wrong = post(
        url, run_input("chat-4", "run-y", None, resume=[{"interruptId": "nope", "status": "resolved"}])
    )
    assert wrong.status_code == 422 and "nope" in wrong.json()["error"]
    bad = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"decision": "maybe"}}]
    assert post(url, run_input("chat-4", "run-z", None, resume=bad)).status_code == 422

    answer = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"decision": "approve"}}]
    second = stream(url, run_input("chat-4", "run-2", None, resume=answer), features=["human-in-the-loop"])
    assert of(second, "TOOL_CALL_RESULT")[0]["content"] == "deleted files"
    assert "".join(event["delta"] for event in of(second, "TEXT_MESSAGE_CONTENT")) == "read: deleted files"
    assert (second[-1]["runId"], "outcome" in second[-1]) == ("run-2", False)


def test_a_cancelled_interrupt_denies_the_call(url: str) -> None:
    first = stream(url, run_input("chat-5", "run-1", "delete"))
    (interrupt,) = first[-1]["outcome"]["interrupts"]
    second = stream(
        url,
        run_input("chat-5", "run-2", None, resume=[{"interruptId": interrupt["id"], "status": "cancelled"}]),
    )
    text = "".join(event["delta"] for event in of(second, "TEXT_MESSAGE_CONTENT"))
    assert text.startswith("read: ") and "deleted files" not in text


def test_the_agent_by_name_and_the_refusals(url: str) -> None:
    stream(url, run_input("chat-6", "run-1", "hi"), path="/ag-ui/helper")
    assert post(url, run_input("chat-6", "run-2", "hi"), path="/ag-ui/other").status_code == 404
    assert httpx.post(f"{url}/ag-ui", json=run_input("t", "r", "hi"), timeout=PATIENCE).status_code == 401
    missing = post(url, {"threadId": "t", "messages": []})
    assert missing.status_code == 422 and "runId" in missing.text
    assert post(url, run_input("chat-7", "run-1", "hi", forwardedProps={"x": 1})).status_code == 422
    image = run_input("chat-8", "run-1", None)
    image["messages"] = [
        {
            "id": "1",
            "role": "user",
            "content": [{"type": "image", "source": {"type": "url", "value": "https://x/y.png"}}],
        }
    ]
    assert post(url, image).status_code == 422


def test_without_the_extra_the_endpoint_names_it(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ag_ui.core", None)  # type: ignore[arg-type]
    monkeypatch.delitem(sys.modules, "jianmu_like.server._agui_events")
    monkeypatch.delattr(jianmu_like.server, "_agui_events")  # imported again, without ag_ui
    answer = post(url, run_input("chat-9", "run-1", "hi"))
    assert answer.status_code == 501 and "jianmu_like[agui]" in answer.json()["error"]


def test_reasoning_streams_as_reasoning_messages(url: str) -> None:
    events = stream(url, run_input("chat-10", "run-1", "think"))
    text = "".join(event["delta"] for event in of(events, "REASONING_MESSAGE_CONTENT"))
    assert text == "Six times seven is forty-two."
    assert of(events, "REASONING_START") and of(events, "REASONING_END")
    assert "".join(event["delta"] for event in of(events, "TEXT_MESSAGE_CONTENT")) == "It is 42."


def test_no_secret_reaches_the_front_end(url: str) -> None:
    answer = post(url, run_input("chat-11", "run-1", "vault"))
    assert answer.status_code == 200
    assert SECRET not in answer.text
    events = [json.loads(line[5:]) for line in answer.text.splitlines() if line.startswith("data:")]
    assert "the key is" in of(events, "TOOL_CALL_RESULT")[0]["content"]


def test_a_retried_run_id_follows_the_same_run(url: str) -> None:
    body = run_input("chat-12", "run-1", "add")
    first = stream(url, body)
    again = stream(url, body)
    assert again[0]["metadata"]["jianmu_run_id"] == first[0]["metadata"]["jianmu_run_id"]
    assert [e["type"] for e in again if e["type"].startswith("TEXT")] == [
        e["type"] for e in first if e["type"].startswith("TEXT")
    ]
    with httpx.Client(base_url=url, headers=AUTH, timeout=PATIENCE) as http:
        runs = http.get("/api/runs", params={"thread_id": "chat-12"}).json()["runs"]
    assert len(runs) == 1


def test_closing_the_stream_cancels_the_run(url: str) -> None:
    """A front-end's Stop closes the stream: the run is cancelled, not left working."""
    body = run_input("chat-13", "run-1", "slow")
    run_id = None
    try:
        with httpx.stream("POST", f"{url}/ag-ui", json=body, headers=AUTH, timeout=PATIENCE) as answer:
            for line in answer.iter_lines():
                if line.startswith("data:"):
                    event = json.loads(line[5:])
                    run_id = run_id or event.get("metadata", {}).get("jianmu_run_id")
                    if event["type"] == "TOOL_CALL_START":
                        break  # the run is in its tool: close the stream
        with httpx.Client(base_url=url, headers=AUTH, timeout=PATIENCE) as http:
            wait_until(
                lambda: http.get(f"/api/runs/{run_id}").json()["status"] == "cancelled",
                "the run to be cancelled once its stream closed",
            )
    finally:
        RELEASE.set()


def test_a_failed_run_ends_with_run_error(url: str) -> None:
    events = stream(url, run_input("chat-14", "run-1", "fail"))
    assert events[-1]["type"] == "RUN_ERROR"
    assert "model" in events[-1]["message"]
    assert not of(events, "RUN_FINISHED")


@needs_everything
def test_a_question_is_an_interrupt_answered_by_resume() -> None:
    """An MCP server's question (server-everything's elicitation) is an interrupt; `resume` with
    the values asked for answers it, and the run goes on."""
    node, *args = everything_command("stdio")
    with ScriptedOpenAIServer([call("trigger-elicitation-request"), reply("thanks")]) as model:

        def factory() -> Agent:
            provider = MCPToolProvider(
                name="ev", command=node, args=args, elicitation="ask", allow=["trigger-elicitation-request"]
            )
            return Agent(create_react_node(model_client=model.client(), tool_providers=[provider]))

        with live_server(create_app(factory)) as base:
            first = stream(base, run_input("ask-1", "run-1", "ask me"))
            (interrupt,) = first[-1]["outcome"]["interrupts"]
            assert interrupt["reason"] == "question" and interrupt["responseSchema"]["required"] == ["name"]
            payload = {"name": "Ada Lovelace", "check": True}
            answer = [{"interruptId": interrupt["id"], "status": "resolved", "payload": payload}]
            second = stream(base, run_input("ask-1", "run-2", None, resume=answer))
            assert "".join(e["delta"] for e in of(second, "TEXT_MESSAGE_CONTENT")) == "thanks"
            assert "Ada Lovelace" in of(second, "TOOL_CALL_RESULT")[0]["content"]


def test_a_draft_before_a_tool_call_is_ended_and_the_snapshot_has_the_answer(url: str) -> None:
    events = stream(url, run_input("chat-15", "run-1", "draft"))
    starts = of(events, "TEXT_MESSAGE_START")
    assert len(starts) == 2  # the thought, ended where the run withdrew it, then the answer
    by_message: dict[str, str] = {}
    for event in of(events, "TEXT_MESSAGE_CONTENT"):
        by_message[event["messageId"]] = by_message.get(event["messageId"], "") + event["delta"]
    assert list(by_message.values()) == ["Let me add that up.", "read: 4"]
    messages = of(events, "MESSAGES_SNAPSHOT")[0]["messages"]
    assert messages[-1] == {"id": messages[-1]["id"], "role": "assistant", "content": "read: 4"}


def test_the_openapi_document_lists_the_endpoint(url: str) -> None:
    with httpx.Client(base_url=url, headers=AUTH, timeout=PATIENCE) as http:
        paths = http.get("/openapi.json").json()["paths"]
    assert {"/ag-ui", "/ag-ui/{agent}", "/v1/responses", "/v1/responses/{response_id}"} <= set(paths)
    assert "text/event-stream" in paths["/ag-ui"]["post"]["responses"]["200"]["content"]


def test_a_front_end_tool_result_resumes_the_run_across_a_restart(tmp_path: Path) -> None:
    """With a checkpoint store, a run waiting for a front-end tool's result outlives the server:
    the next server on the store resumes it with the result (as `/v1` does)."""
    from jianmu_like.checkpoint import SQLiteCheckpointer

    def serve() -> Any:
        store = SQLiteCheckpointer(tmp_path / "runs.db")

        def factory() -> Agent:
            root = create_react_node(
                model_client=scripted_client(responder), config=ReActConfig(max_iterations=4, stream=True)
            )
            return Agent(root, log_events=False, checkpointer=store)

        return live_server(create_app(factory, token=TOKEN))

    body = run_input("chat-restart", "run-1", "weather in Oslo", tools=[WEATHER])
    with serve() as first_url:
        first = stream(first_url, body)
    (start,) = of(first, "TOOL_CALL_START")
    call_id = start["toolCallId"]
    messages = [
        *body["messages"],
        {"id": "a1", "role": "assistant", "toolCalls": [
            {"id": call_id, "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}},
        ]},
        {"id": "t1", "role": "tool", "toolCallId": call_id, "content": "snow -3"},
    ]  # fmt: skip
    with serve() as second_url:
        second = stream(
            second_url, {**run_input("chat-restart", "run-2", None, tools=[WEATHER]), "messages": messages}
        )
        again = post(
            second_url,
            {**run_input("chat-restart", "run-3", None, tools=[WEATHER]), "messages": messages},
        )
    assert "".join(event["delta"] for event in of(second, "TEXT_MESSAGE_CONTENT")) == "read: snow -3"
    assert again.status_code == 409 and "already answered" in again.text  # resumed once
