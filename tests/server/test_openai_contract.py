"""`/v1/` as OpenAI's clients expect it, driven by the official `openai` client with its DEFAULT
retries on (max_retries=2) over real HTTP, the agent's own model a scripted OpenAI-compatible
server over HTTP too: one request is one run whatever the SDK retries (`x-should-retry`,
`Idempotency-Key`, `X-Stainless-Retry-Count`, across a restart with a SQLite store), OpenAI's
error contract (400 + `param`, codes, an upstream 429 with `Retry-After`, `models.retrieve`,
errors in a stream), and what a chat UI does (Stop closes the stream, big bodies, the legacy
`function_call`, a blank token)."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import uvicorn

from jianmu_like import Agent, ReActConfig, create_react_node, tool
from jianmu_like.checkpoint import SQLiteCheckpointer
from jianmu_like.cli._main import main
from jianmu_like.guard import GuardEnforcer, RequireApproval
from jianmu_like.server import create_app
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, reply, wait_until
from tests.server.sse_live import free_port, live_server

TOKEN = "contract-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
MODEL = "helper"
LIMIT = 20_000
"""The server's body limit (bytes)."""
PRESET = Path(__file__).resolve().parents[2] / "presets" / "react.yaml"
gates: dict[str, threading.Event] = {}
"""`hold <tag>` waits for its gate (set by the test) or for cancellation."""
held: list[str] = []
"""Every `hold` call that began."""


@tool
async def hold(tag: str) -> str:
    """Wait until the test opens the gate `tag`."""
    held.append(tag)
    gate = gates.setdefault(tag, threading.Event())
    deadline = time.monotonic() + PATIENCE
    while not gate.is_set() and time.monotonic() < deadline:  # cancellable, unlike a thread's wait
        await asyncio.sleep(0.01)
    return f"released {tag}"


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def responder(body: dict[str, Any]) -> Any:
    """`hold T` -> hold(T); `delete P` -> delete_file(P) (waits for approval); `fail` -> a 400 of
    the model (the run fails); `busy` -> a 429 with `Retry-After: 7`; after a tool result
    "result <output>"; anything else: "echo <question>"."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return reply(f"result {last['content']}")
    verb, _, arg = str(last["content"]).partition(" ")
    if verb == "hold":
        return call("hold", tag=arg)
    if verb == "delete":
        return call("delete_file", path=arg)
    if verb == "fail":
        return reply(error_status=400, error_message="the model refuses")
    if verb == "busy":
        return reply(error_status=429, error_message="slow down", retry_after="7")
    return reply(f"echo {last['content']}")


def factory(upstream: ScriptedOpenAIServer, store: SQLiteCheckpointer | None = None) -> Any:
    def build() -> Agent:
        root = create_react_node(
            name=MODEL,
            model_client=upstream.client(max_retries=1),  # the agent's own retry: 2 calls per 429
            tools=[hold, delete_file],
            constraints=GuardEnforcer([RequireApproval(tools="delete_file")]),
            config=ReActConfig(max_iterations=5),
        )
        return Agent(root, checkpointer=store, log_events=False)

    return build


@pytest.fixture(scope="module")
def upstream() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(responder) as server:
        yield server


@pytest.fixture(scope="module")
def url(upstream: ScriptedOpenAIServer) -> Iterator[str]:
    app = create_app(factory(upstream), token=TOKEN, model_name=MODEL, max_body_bytes=LIMIT)
    with live_server(app) as base:
        yield base


def client(url: str, **options: Any) -> openai.OpenAI:
    """The SDK as users make it: its default retries (2) on."""
    options.setdefault("timeout", PATIENCE)
    return openai.OpenAI(base_url=f"{url}/v1", api_key=TOKEN, **options)


def aclient(url: str, **options: Any) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=TOKEN, timeout=PATIENCE, **options)


def runs_of(url: str, question: str) -> list[dict[str, Any]]:
    with httpx.Client(base_url=url, headers=AUTH, timeout=PATIENCE) as http:
        return [r for r in http.get("/api/runs").json()["runs"] if r["input"] == question]


def upstream_calls(upstream: ScriptedOpenAIServer, question: str) -> int:
    return sum(1 for body in upstream.requests if body["messages"][-1].get("content") == question)


def ask(question: str) -> list[Any]:
    return [{"role": "user", "content": question}]


def unique(verb: str) -> str:
    return f"{verb} {uuid.uuid4().hex[:8]}"


def deny_all(url: str) -> None:
    with httpx.Client(base_url=url, headers=AUTH, timeout=PATIENCE) as http:
        for pending in http.get("/api/approvals").json()["approvals"]:
            http.post(f"/api/approvals/{pending['id']}", json={"decision": "deny", "reason": "test over"})


# ---------------------------------------------------------------- one request, one run
def test_a_run_waiting_for_approval_is_one_run_whatever_the_sdk_retries(url: str) -> None:
    question = unique("delete")
    with pytest.raises(openai.ConflictError) as caught:
        client(url).chat.completions.create(model=MODEL, messages=ask(question))
    assert caught.value.code == "approval_required"
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert len(runs_of(url, question)) == 1
    deny_all(url)


async def test_async_a_run_waiting_for_approval_is_one_run(url: str) -> None:
    question = unique("delete")
    async with aclient(url) as api:
        with pytest.raises(openai.ConflictError):
            await api.chat.completions.create(model=MODEL, messages=ask(question))
    assert len(await asyncio.to_thread(runs_of, url, question)) == 1
    await asyncio.to_thread(deny_all, url)


def test_a_failed_run_is_one_run_and_a_500_not_retried(url: str, upstream: ScriptedOpenAIServer) -> None:
    question = unique("fail")
    with pytest.raises(openai.InternalServerError) as caught:
        client(url).chat.completions.create(model=MODEL, messages=ask(question))
    assert caught.value.code == "agent_failed" and "the model refuses" in caught.value.message
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert len(runs_of(url, question)) == 1 and upstream_calls(upstream, question) == 1


async def test_async_a_failed_run_is_one_run(url: str) -> None:
    question = unique("fail")
    async with aclient(url) as api:
        with pytest.raises(openai.InternalServerError):
            await api.chat.completions.create(model=MODEL, messages=ask(question))
    assert len(await asyncio.to_thread(runs_of, url, question)) == 1


def test_an_upstream_rate_limit_is_a_429_with_retry_after_and_one_run(
    url: str, upstream: ScriptedOpenAIServer
) -> None:
    question = unique("busy")
    with pytest.raises(openai.RateLimitError) as caught:
        client(url).chat.completions.create(model=MODEL, messages=ask(question))
    assert caught.value.code == "rate_limit_exceeded" and "slow down" in caught.value.message
    headers = caught.value.response.headers
    assert headers["retry-after"] == "7" and headers["x-should-retry"] == "false"
    # One run; the agent's own model client retried once (max_retries=1): 2 upstream calls, not 6.
    assert len(runs_of(url, question)) == 1 and upstream_calls(upstream, question) == 2


def test_an_explicit_retry_with_the_same_key_gets_the_same_completion(
    url: str, upstream: ScriptedOpenAIServer
) -> None:
    api, question, key = client(url), unique("hello"), uuid.uuid4().hex
    first = api.chat.completions.create(
        model=MODEL, messages=ask(question), extra_headers={"Idempotency-Key": key}
    )
    again = api.chat.completions.create(
        model=MODEL, messages=ask(question), extra_headers={"Idempotency-Key": key}
    )
    assert again.id == first.id and again.choices[0].message.content == f"echo {question}"
    assert len(runs_of(url, question)) == 1 and upstream_calls(upstream, question) == 1
    # The stream of the same request is another request (another body): its own key.
    with pytest.raises(openai.BadRequestError) as caught:
        api.chat.completions.create(
            model=MODEL, messages=ask(question + "?"), extra_headers={"Idempotency-Key": key}
        )
    assert caught.value.code == "idempotency_key_reused" and caught.value.param == "Idempotency-Key"
    with pytest.raises(openai.BadRequestError) as caught:
        api.chat.completions.create(
            model=MODEL, messages=ask(question), extra_headers={"Idempotency-Key": "k" * 256}
        )
    assert caught.value.code == "invalid_idempotency_key"
    assert len(runs_of(url, question)) == 1 and runs_of(url, question + "?") == []


def test_a_key_whose_run_waits_for_approval_answers_409_then_the_answer(url: str) -> None:
    api, question, key = client(url), unique("delete"), uuid.uuid4().hex
    for _ in range(2):
        with pytest.raises(openai.ConflictError) as caught:
            api.chat.completions.create(
                model=MODEL, messages=ask(question), extra_headers={"Idempotency-Key": key}
            )
        assert caught.value.code == "approval_required"
    (run,) = runs_of(url, question)
    with httpx.Client(base_url=url, headers=AUTH, timeout=PATIENCE) as http:
        (pending,) = [
            a for a in http.get("/api/approvals").json()["approvals"] if a["run_id"] == run["run_id"]
        ]
        assert http.post(f"/api/approvals/{pending['id']}", json={"decision": "approve"}).status_code == 200
        wait_until(lambda: http.get(f"/api/runs/{run['run_id']}").json()["status"] == "success", "the run")
    answer = api.chat.completions.create(
        model=MODEL, messages=ask(question), extra_headers={"Idempotency-Key": key}
    )
    assert answer.choices[0].message.content == f"result deleted {question.split()[1]}"
    assert len(runs_of(url, question)) == 1


def test_two_identical_requests_at_once_make_one_run(url: str) -> None:
    question, key = unique("hold"), uuid.uuid4().hex
    tag = question.split()[1]
    gates[tag] = threading.Event()

    async def both() -> list[Any]:
        async with aclient(url) as api:
            asks = [
                api.chat.completions.create(
                    model=MODEL, messages=ask(question), extra_headers={"Idempotency-Key": key}
                )
                for _ in range(2)
            ]
            tasks = [asyncio.ensure_future(a) for a in asks]
            await asyncio.to_thread(wait_until, lambda: tag in held, "the run's tool to start")
            gates[tag].set()
            return list(await asyncio.gather(*tasks))

    one, two = asyncio.run(both())
    assert one.id == two.id and one.choices[0].message.content == f"result released {tag}"
    assert len(runs_of(url, question)) == 1 and held.count(tag) == 1


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_the_sdks_own_retry_after_a_timeout_follows_the_same_run(url: str, flavour: str) -> None:
    """No key: the SDK times out, retries the same body with `X-Stainless-Retry-Count: 1`; the
    retry follows the run the first attempt started (the gate opens only when it is sent)."""
    question = unique("hold")
    tag = question.split()[1]
    gates[tag] = threading.Event()
    counts: list[str] = []

    def seen(request: Any) -> None:
        counts.append(request.headers.get("x-stainless-retry-count", "?"))
        if counts[-1] == "1":
            gates[tag].set()

    async def aseen(request: Any) -> None:
        seen(request)

    if flavour == "sync":
        http = openai.DefaultHttpxClient(event_hooks={"request": [seen]})
        api = openai.OpenAI(base_url=f"{url}/v1", api_key=TOKEN, timeout=1.0, http_client=http)
        answer = api.chat.completions.create(model=MODEL, messages=ask(question))
    else:

        async def go() -> Any:
            http = openai.DefaultAsyncHttpxClient(event_hooks={"request": [aseen]})
            async with openai.AsyncOpenAI(
                base_url=f"{url}/v1", api_key=TOKEN, timeout=1.0, http_client=http
            ) as api:
                return await api.chat.completions.create(model=MODEL, messages=ask(question))

        answer = asyncio.run(go())
    assert counts[:2] == ["0", "1"]
    assert answer.choices[0].message.content == f"result released {tag}"
    assert len(runs_of(url, question)) == 1 and held.count(tag) == 1


@contextmanager
def restartable(app: Any) -> Iterator[str]:
    """A uvicorn server that stops within a second even while a request still waits for its run
    (its client gone): as a restart would, it cancels what is left."""
    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=1
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(
        lambda: server.started, "uvicorn to start", abort=lambda: None if thread.is_alive() else "it ended"
    )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=PATIENCE)


def test_the_key_survives_a_restart_with_a_sqlite_store(
    upstream: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    question, key, interrupted = unique("hello"), uuid.uuid4().hex, uuid.uuid4().hex
    slow = unique("hold")
    gates[slow.split()[1]] = threading.Event()  # never opened: the restart interrupts it
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    try:
        with restartable(create_app(factory(upstream, store), token=TOKEN, model_name=MODEL)) as first:
            answer = client(first).chat.completions.create(
                model=MODEL, messages=ask(question), extra_headers={"Idempotency-Key": key}
            )
            impatient = client(first, timeout=1.0, max_retries=0)
            with pytest.raises(openai.APITimeoutError):
                impatient.chat.completions.create(
                    model=MODEL, messages=ask(slow), extra_headers={"Idempotency-Key": interrupted}
                )
            assert slow.split()[1] in held
        with restartable(create_app(factory(upstream, store), token=TOKEN, model_name=MODEL)) as second:
            api = client(second)
            again = api.chat.completions.create(
                model=MODEL, messages=ask(question), extra_headers={"Idempotency-Key": key}
            )
            assert again.id == answer.id and again.choices[0].message.content == f"echo {question}"
            assert runs_of(second, question) == [] and upstream_calls(upstream, question) == 1
            with pytest.raises(openai.ConflictError) as caught:
                api.chat.completions.create(
                    model=MODEL, messages=ask(slow), extra_headers={"Idempotency-Key": interrupted}
                )
            assert caught.value.code == "run_interrupted"
            assert caught.value.response.headers["x-should-retry"] == "false"
            assert runs_of(second, slow) == [] and held.count(slow.split()[1]) == 1
    finally:
        store.close()


# ---------------------------------------------------------------- OpenAI's error contract
def test_an_invalid_body_is_a_bad_request_naming_the_param(url: str) -> None:
    api = client(url)
    with pytest.raises(openai.BadRequestError) as caught:
        api.chat.completions.create(model=MODEL, messages=[])
    assert caught.value.param == "messages" and caught.value.type == "invalid_request_error"
    assert "at least 1 item" in caught.value.message
    with pytest.raises(openai.BadRequestError) as caught:
        api.chat.completions.create(model=MODEL, messages=ask("hi"), n=2)
    assert caught.value.param == "n"
    with pytest.raises(openai.BadRequestError, match="the last message must be the user's question"):
        api.chat.completions.create(model=MODEL, messages=[{"role": "assistant", "content": "hi"}])
    # /api/ keeps its own shape and status.
    with httpx.Client(base_url=url, headers=AUTH, timeout=PATIENCE) as http:
        refused = http.post("/api/runs", json={})
        assert refused.status_code == 422 and isinstance(refused.json()["error"], str)


def test_refusals_keep_their_status_with_a_code(url: str) -> None:
    with pytest.raises(openai.AuthenticationError) as caught:
        openai.OpenAI(base_url=f"{url}/v1", api_key="wrong", max_retries=0).models.list()
    assert caught.value.code == "invalid_api_key"
    with pytest.raises(openai.NotFoundError) as unknown:
        client(url).chat.completions.create(model="gpt-4o", messages=ask("hi"))
    assert unknown.value.code == "model_not_found" and unknown.value.param == "model"
    with httpx.Client(base_url=url, headers=AUTH, timeout=PATIENCE) as http:
        nowhere = http.get("/v1/nowhere").json()["error"]
        assert nowhere["code"] == "not_found" and nowhere["type"] == "not_found_error"


def test_models_retrieve_names_the_served_agent(url: str) -> None:
    model = client(url).models.retrieve(MODEL)
    assert model.id == MODEL and model.object == "model"
    with pytest.raises(openai.NotFoundError) as caught:
        client(url).models.retrieve("gpt-4o")
    assert caught.value.code == "model_not_found" and "serves 'helper'" in caught.value.message


def test_a_streamed_failure_is_an_error_chunk_then_the_stream_stops(url: str) -> None:
    body = {"model": MODEL, "messages": ask(unique("busy")), "stream": True}
    with (
        httpx.Client(base_url=url, headers=AUTH, timeout=PATIENCE) as http,
        http.stream("POST", "/v1/chat/completions", json=body) as response,
    ):
        data = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    assert data[-1] != "[DONE]" and '"code": "rate_limit_exceeded"' in data[-1]
    with pytest.raises(openai.APIError) as caught:
        list(client(url).chat.completions.create(model=MODEL, messages=ask(unique("fail")), stream=True))
    assert isinstance(caught.value.body, dict) and caught.value.body["code"] == "agent_failed"


# ---------------------------------------------------------------- a chat UI
def test_a_closed_stream_cancels_the_run_and_the_next_message_is_answered(url: str) -> None:
    question = unique("hold")
    tag, thread = question.split()[1], f"stop-{uuid.uuid4().hex[:6]}"
    gates[tag] = threading.Event()  # never opened: only the Stop ends the tool
    api = client(url)
    stream = api.chat.completions.create(
        model=MODEL, messages=ask(question), stream=True, extra_body={"thread_id": thread}
    )
    first = next(iter(stream))
    wait_until(lambda: tag in held, "the run's tool to start")
    stream.close()  # the chat UI's Stop
    run_id = (first.model_extra or {})["run_id"]
    with httpx.Client(base_url=url, headers=AUTH, timeout=PATIENCE) as http:
        wait_until(
            lambda: http.get(f"/api/runs/{run_id}").json()["status"] == "cancelled",
            "the run to be cancelled",
            timeout=10,
        )
    answer = api.chat.completions.create(
        model=MODEL, messages=ask("and now?"), extra_body={"thread_id": thread}
    )
    assert answer.choices[0].message.content == "echo and now?"


def test_the_next_message_right_after_a_stop_is_not_refused_as_busy(url: str) -> None:
    question = unique("hold")
    tag, thread = question.split()[1], f"stop-{uuid.uuid4().hex[:6]}"
    gates[tag] = threading.Event()
    api = client(url, max_retries=0)  # a 409 busy would surface, not be retried away
    stream = api.chat.completions.create(
        model=MODEL, messages=ask(question), stream=True, extra_body={"thread_id": thread}
    )
    next(iter(stream))
    wait_until(lambda: tag in held, "the run's tool to start")
    stream.close()
    answer = api.chat.completions.create(model=MODEL, messages=ask("next"), extra_body={"thread_id": thread})
    assert answer.choices[0].message.content == "echo next"


def test_a_body_over_the_limit_is_a_413_with_a_message_chunked_or_not(url: str) -> None:
    big = "x" * (LIMIT + 100)
    with pytest.raises(openai.APIStatusError) as caught:
        client(url).chat.completions.create(model=MODEL, messages=ask(big))
    assert caught.value.status_code == 413 and "over the limit of 20000 bytes" in caught.value.message

    def chunks() -> Iterator[bytes]:
        yield b'{"model": "helper", "messages": [{"role": "user", "content": "'
        for _ in range(10):
            yield b"y" * 4000
        yield b'"}]}'

    headers = {**AUTH, "Content-Type": "application/json"}
    with httpx.Client(base_url=url, timeout=PATIENCE) as http:
        refused = http.post("/v1/chat/completions", content=chunks(), headers=headers)
    assert refused.status_code == 413, refused.text
    error = refused.json()["error"]
    assert "over the limit" in error["message"] and error["code"] == "request_too_large"


def test_the_legacy_function_call_is_refused_naming_it(url: str) -> None:
    messages: list[Any] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}},
        {"role": "user", "content": "again"},
    ]
    with pytest.raises(openai.BadRequestError) as caught:
        client(url).chat.completions.create(model=MODEL, messages=messages)
    assert caught.value.param == "messages[1].function_call" and "function_call" in caught.value.message
    with pytest.raises(openai.BadRequestError) as legacy:
        client(url).chat.completions.create(
            model=MODEL, messages=ask("hi"), extra_body={"functions": [{"name": "f", "parameters": {}}]}
        )
    assert legacy.value.param == "functions"


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_a_blank_token_is_refused_at_start(
    host: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("JIANMU_SERVER_TOKEN", raising=False)
    assert main(["serve", str(PRESET), "--host", host, "--token", "   "]) == 2
    error = capsys.readouterr().err
    assert "refusing a token that is blank" in error
    with pytest.raises(ValueError, match="surrounded by whitespace"):
        create_app(lambda: None, token=" padded ")  # type: ignore[arg-type, return-value]


def test_a_stop_cancels_only_when_no_other_stream_follows_the_run(url: str) -> None:
    """Two streams of one request (a retry with its key): the first one's Stop leaves the run to
    the second, which gets the answer."""
    question, key = unique("hold"), uuid.uuid4().hex
    tag = question.split()[1]
    gates[tag] = threading.Event()
    api = client(url)
    streams = [
        api.chat.completions.create(
            model=MODEL, messages=ask(question), stream=True, extra_headers={"Idempotency-Key": key}
        )
        for _ in range(2)
    ]
    readers = [iter(stream) for stream in streams]
    firsts = [next(reader) for reader in readers]
    assert firsts[0].id == firsts[1].id
    wait_until(lambda: tag in held, "the run's tool to start")
    streams[0].close()
    gates[tag].set()
    rest = list(readers[1])
    assert "".join(c.choices[0].delta.content or "" for c in rest if c.choices) == f"result released {tag}"
    (run,) = runs_of(url, question)
    assert run["status"] == "success" and held.count(tag) == 1


def test_an_sdk_retry_of_a_refused_first_attempt_never_follows_an_older_run(url: str) -> None:
    """The same body twice on one thread: the second time the thread is busy (409, which the SDK
    retries); its retries must not get the first request's old answer."""
    thread = f"busy-{uuid.uuid4().hex[:6]}"
    question, slow = unique("hello"), unique("hold")
    tag = slow.split()[1]
    gates[tag] = threading.Event()
    api = client(url)
    first = api.chat.completions.create(model=MODEL, messages=ask(question), extra_body={"thread_id": thread})
    assert first.choices[0].message.content.endswith(question)  # type: ignore[union-attr]
    with httpx.Client(base_url=url, headers=AUTH, timeout=PATIENCE) as http:
        held_run = http.post("/api/runs", json={"input": slow, "thread_id": thread}).json()
        wait_until(lambda: tag in held, "the thread's run to hold it")
        try:
            with pytest.raises(openai.ConflictError) as caught:
                api.chat.completions.create(
                    model=MODEL, messages=ask(question), extra_body={"thread_id": thread}
                )
            assert caught.value.code == "thread_busy"
        finally:
            gates[tag].set()
        wait_until(
            lambda: http.get(f"/api/runs/{held_run['run_id']}").json()["status"] == "success", "the run"
        )
    assert len(runs_of(url, question)) == 1
