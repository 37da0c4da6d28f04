"""ScriptedOpenAIServer: wire shapes, script handling, concurrency and shutdown."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest

from jianmu_like.models import ModelCallFailed, ModelRequest, human
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, ScriptedReply, call, calls, reply, wait_until


def fetch(srv: ScriptedOpenAIServer, path: str, data: bytes | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(
        f"{srv.base_url}{path}", data=data, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=PATIENCE) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read()


def post(srv: ScriptedOpenAIServer, body: dict[str, Any]) -> tuple[int, bytes]:
    return fetch(srv, "/chat/completions", json.dumps(body).encode())


def sse_events(raw: bytes) -> list[str]:
    return [line[len("data: ") :] for line in raw.decode().split("\n\n") if line.startswith("data: ")]


BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def test_non_streaming_shape() -> None:
    with ScriptedOpenAIServer([calls(call("add", a=1), content="thinking")]) as srv:
        status, raw = post(srv, BODY)
    data = json.loads(raw)
    assert status == 200
    assert data["object"] == "chat.completion"
    assert data["model"] == "m"
    (choice,) = data["choices"]
    assert choice["finish_reason"] == "tool_calls"
    message = choice["message"]
    assert message["content"] == "thinking"
    assert message["tool_calls"] == [
        {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}
    ]
    assert data["usage"] == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    assert srv.requests == [BODY]


def test_streaming_shape_splits_content_and_arguments() -> None:
    script = [calls(call("search", query="behaviour trees in robotics"), content="Looking it up now")]
    with ScriptedOpenAIServer(script) as srv:
        status, raw = post(srv, {**BODY, "stream": True, "stream_options": {"include_usage": True}})
    events = sse_events(raw)
    assert status == 200
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    content = [d["content"] for d in deltas if d.get("content")]
    assert len(content) > 1 and "".join(content) == "Looking it up now"
    fragments = [tc for d in deltas for tc in d.get("tool_calls", [])]
    assert fragments[0]["id"] == "call_1" and fragments[0]["function"]["name"] == "search"
    args = [f["function"]["arguments"] for f in fragments if f["function"].get("arguments")]
    assert len(args) > 1
    assert json.loads("".join(args)) == {"query": "behaviour trees in robotics"}
    assert all(f["index"] == 0 for f in fragments)
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] == 15


def test_streaming_without_include_usage_sends_no_usage_chunk() -> None:
    with ScriptedOpenAIServer(["hello"]) as srv:
        _, raw = post(srv, {**BODY, "stream": True})
    chunks = [json.loads(e) for e in sse_events(raw)[:-1]]
    assert all(c["choices"] for c in chunks)
    assert all("usage" not in c for c in chunks)


def test_scripted_error_has_openai_shape() -> None:
    with ScriptedOpenAIServer([ScriptedReply(error_status=429, error_message="too many")]) as srv:
        status, raw = post(srv, BODY)
    assert status == 429
    error = json.loads(raw)["error"]
    assert error["message"] == "too many"
    assert {"type", "code"} <= set(error)


def test_exhausted_script_answers_500_with_a_clear_message() -> None:
    with ScriptedOpenAIServer(["only one"]) as srv:
        assert post(srv, BODY)[0] == 200
        status, raw = post(srv, BODY)
    assert status == 500
    assert json.loads(raw)["error"]["message"] == "scripted server: script exhausted after 1 requests"


def test_models_route_unknown_routes_and_bad_json() -> None:
    with ScriptedOpenAIServer(models=["a", "b"]) as srv:
        listing = fetch(srv, "/models")
        bad_json = fetch(srv, "/chat/completions", b"{not json")
        missing = fetch(srv, "/nowhere")
    assert listing[0] == 200
    assert [m["id"] for m in json.loads(listing[1])["data"]] == ["a", "b"]
    assert (
        bad_json[0] == 400 and "could not parse the JSON body" in json.loads(bad_json[1])["error"]["message"]
    )
    assert missing[0] == 404


def test_base_url_requires_a_running_server() -> None:
    srv = ScriptedOpenAIServer()
    with pytest.raises(RuntimeError, match="not running"):
        _ = srv.base_url


def test_quiet_no_request_logging(capfd: pytest.CaptureFixture[str]) -> None:
    with ScriptedOpenAIServer(["x"]) as srv:
        post(srv, BODY)
        post(srv, BODY)  # exhausted: an error response, still quiet
    assert capfd.readouterr().err == ""


def test_stop_does_not_hang_on_a_delayed_request() -> None:
    outcome: list[object] = []
    with ScriptedOpenAIServer([reply("never", delay=10 * PATIENCE)]) as srv:

        def slow_client() -> None:
            try:
                outcome.append(post(srv, BODY))
            except Exception as exc:  # the server drops the request on shutdown
                outcome.append(exc)

        thread = threading.Thread(target=slow_client, daemon=True)
        thread.start()
        wait_until(lambda: srv.requests, "the request to arrive")
    thread.join(timeout=PATIENCE / 2)  # sooner than the client's own timeout: stopping dropped the request
    assert not thread.is_alive()
    assert outcome and not isinstance(outcome[0], tuple)


async def test_concurrent_agents_with_a_responder() -> None:
    def responder(body: dict[str, Any]) -> ScriptedReply:
        question = body["messages"][-1]["content"]
        return reply(f"answer to {question}")

    async with ScriptedOpenAIServer(responder) as srv:
        client_a, client_b = srv.client(), srv.client()
        results = await asyncio.gather(
            *(
                client.complete(ModelRequest(messages=[human(q)]))
                for client, q in [(client_a, "a"), (client_b, "b"), (client_a, "c"), (client_b, "d")]
            )
        )
    assert [r.message.content for r in results] == [
        "answer to a",
        "answer to b",
        "answer to c",
        "answer to d",
    ]
    assert sorted(body["messages"][-1]["content"] for body in srv.requests) == ["a", "b", "c", "d"]


async def test_responder_exception_fails_the_call_clearly() -> None:
    def responder(body: dict[str, Any]) -> ScriptedReply:
        raise KeyError("no rule for this request")

    async with ScriptedOpenAIServer(responder) as srv:
        with pytest.raises(ModelCallFailed, match="scripted responder raised KeyError"):
            await srv.client(max_retries=0).complete(ModelRequest(messages=[human("x")]))


def test_listen_backlog_holds_a_burst_of_clients() -> None:
    """Thousands of agents connect at once: with a backlog of 5, the kernel dropped the
    connections the accept loop had not taken yet. Here nothing accepts at all, and a burst of
    200 connections must still all be queued by the kernel."""
    import socket

    from jianmu_like.testing._server import _HTTPServer

    httpd = _HTTPServer(ScriptedOpenAIServer([]))  # bound and listening, never accepting
    clients: list[socket.socket] = []
    try:
        for _ in range(200):
            clients.append(socket.create_connection(httpd.server_address[:2], timeout=5))
    finally:
        for client in clients:
            client.close()
        httpd.server_close()
    assert len(clients) == 200
