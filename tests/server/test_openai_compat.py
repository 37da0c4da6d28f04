"""The OpenAI-compatible face over real HTTP, driven by the official `openai` client: the served
agent is a model, the conversation's messages are its input, streaming and not, approvals
answered by an error telling where to approve, and the same security rules as `/api/`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from jianmu_like import AgentTemplate, ReActConfig, create_react_node, tool
from jianmu_like.guard import GuardEnforcer, RequireApproval
from jianmu_like.models._types import Usage
from jianmu_like.server import create_app
from jianmu_like.testing import PATIENCE, call, reply, scripted_client, wait_until
from tests.server.sse_live import live_server

TOKEN = "s3cret-token-for-tests"
USAGE = Usage(prompt_tokens=7, completion_tokens=3, total_tokens=10)
seen: list[list[dict[str, Any]]] = []
"""The messages of every model request, as the model received them."""


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def responder(body: dict[str, Any]) -> Any:
    """`add N` -> add(N, 1), `delete P` -> delete_file(P) (held for approval); after a tool
    result "result <output>"; anything else: the conversation's user and assistant turns."""
    messages = body["messages"]
    seen.append(messages)
    last = messages[-1]
    if last["role"] == "tool":
        return reply(f"result {last['content']}", usage=USAGE)
    verb, _, arg = str(last["content"]).partition(" ")
    if verb == "add":
        return call("add", a=int(arg), b=1)
    if verb == "delete":
        return call("delete_file", path=arg)
    turns = [f"{m['role']}:{m['content']}" for m in messages if m["role"] in ("user", "assistant")]
    return reply(" | ".join(turns), usage=USAGE)


@pytest.fixture(params=[True, False], ids=["streamed-model", "whole-model"])
def url(request: pytest.FixtureRequest) -> Iterator[str]:
    root = create_react_node(
        model_client=scripted_client(responder),
        tools=[add, delete_file],
        constraints=GuardEnforcer([RequireApproval(tools="delete_file")]),
        config=ReActConfig(stream=request.param, max_iterations=5),
    )
    template = AgentTemplate.from_prototype(root, log_events=False)
    seen.clear()
    with live_server(create_app(template.conversation, token=TOKEN, model_name="helper")) as base:
        yield base


def client(url: str, key: str = TOKEN) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=key, timeout=PATIENCE, max_retries=0)


def test_the_agent_is_the_one_model(url: str) -> None:
    assert [m.id for m in client(url).models.list()] == ["helper"]
    with pytest.raises(openai.NotFoundError, match="no model 'gpt-4o': this server serves 'helper'"):
        client(url).chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])


def test_a_completion_is_the_agents_final_answer_with_its_usage(url: str) -> None:
    completion = client(url).chat.completions.create(
        model="helper", messages=[{"role": "user", "content": "add 41"}]
    )
    assert completion.object == "chat.completion" and completion.model == "helper"
    assert completion.choices[0].message.content == "result 42"
    assert completion.choices[0].finish_reason == "stop"
    usage = completion.usage
    assert usage is not None and usage.completion_tokens >= 3 and usage.prompt_tokens >= 7
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    # An ordinary run: the API and the console see it.
    extra = completion.model_extra or {}
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        summary = http.get(f"/api/runs/{extra['run_id']}").json()
    assert summary["status"] == "success" and summary["answer"] == "result 42"
    assert summary["usage"]["total_tokens"] == usage.total_tokens


def test_a_stream_sends_the_answer_in_chunks_with_usage_in_the_last(url: str) -> None:
    chunks = list(
        client(url).chat.completions.create(
            model="helper", messages=[{"role": "user", "content": "add 1"}], stream=True
        )
    )
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "result 2"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert all(c.usage is None for c in chunks[:-1])
    last = chunks[-1]
    assert last.usage is not None and last.usage.total_tokens > 0
    assert len({c.id for c in chunks}) == 1 and chunks[0].id.startswith("chatcmpl-")

    spec = list(  # stream_options.include_usage: the spec's extra chunk without choices
        client(url).chat.completions.create(
            model="helper",
            messages=[{"role": "user", "content": "add 2"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert spec[-1].choices == [] and spec[-1].usage is not None and spec[-1].usage.total_tokens > 0
    assert spec[-2].choices[0].finish_reason == "stop" and spec[-2].usage is None


def test_the_messages_are_the_conversation(url: str) -> None:
    messages: list[Any] = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "hi there"},
        {"role": "user", "content": [{"type": "text", "text": "and "}, {"type": "text", "text": "now?"}]},
    ]
    completion = client(url).chat.completions.create(model="helper", messages=messages)
    assert completion.choices[0].message.content == "user:hello | assistant:hi there | user:and now?"
    assert any(m["role"] == "system" and m["content"] == "be brief" for m in seen[-1])


def test_a_thread_or_user_keeps_the_conversation_on_the_server(url: str) -> None:
    api = client(url)
    first = [{"role": "user", "content": "one"}]
    answer = api.chat.completions.create(model="helper", messages=first, extra_body={"thread_id": "t-1"})
    assert answer.choices[0].message.content == "user:one"
    # A front-end resends the whole history: the server keeps its own, only the question is new.
    again = [*first, {"role": "assistant", "content": "user:one"}, {"role": "user", "content": "two"}]
    answer = api.chat.completions.create(model="helper", messages=again, extra_body={"thread_id": "t-1"})
    assert answer.choices[0].message.content == "user:one | assistant:user:one | user:two"
    assert (answer.model_extra or {})["thread_id"] == "t-1"

    by_user = api.chat.completions.create(model="helper", messages=first, user="ann")
    assert (by_user.model_extra or {})["thread_id"] == "user:ann"
    later = api.chat.completions.create(
        model="helper", messages=[{"role": "user", "content": "three"}], user="ann"
    )
    assert later.choices[0].message.content == "user:one | assistant:user:one | user:three"
    # Without either, every request is a conversation of its own.
    alone = api.chat.completions.create(model="helper", messages=[{"role": "user", "content": "four"}])
    assert alone.choices[0].message.content == "user:four"


def _approve_and_read(url: str, message: str) -> None:
    """The error names the approval route; following it finishes the run with its answer."""
    assert "waiting for a human approval of delete_file" in message
    assert f"{url}/api/approvals/" in message and "web console" in message
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=PATIENCE) as http:
        (pending,) = http.get("/api/approvals").json()["approvals"]
        assert pending["id"] in message and pending["run_id"] in message
        decided = http.post(f"/api/approvals/{pending['id']}", json={"decision": "approve"})
        assert decided.status_code == 200, decided.text
        run = f"/api/runs/{pending['run_id']}"
        assert f"GET {url}{run}" in message
        wait_until(lambda: http.get(run).json()["status"] == "success", "the approved run to finish")
        assert http.get(run).json()["answer"] == "result deleted x"


def test_a_run_waiting_for_approval_answers_where_to_approve(url: str) -> None:
    with pytest.raises(openai.ConflictError) as caught:
        client(url).chat.completions.create(
            model="helper", messages=[{"role": "user", "content": "delete x"}]
        )
    assert caught.value.code == "approval_required"
    _approve_and_read(url, caught.value.message)


def test_a_streamed_run_waiting_for_approval_ends_with_an_error(url: str) -> None:
    stream = client(url).chat.completions.create(
        model="helper", messages=[{"role": "user", "content": "delete x"}], stream=True
    )
    with pytest.raises(openai.APIError) as caught:
        list(stream)
    assert isinstance(caught.value.body, dict) and caught.value.body["code"] == "approval_required"
    _approve_and_read(url, caught.value.message)


def test_bad_requests_name_their_cause(url: str) -> None:
    api = client(url)
    with pytest.raises(openai.BadRequestError, match="tool messages answer the tool calls of the assistant"):
        api.chat.completions.create(
            model="helper",
            messages=[
                {"role": "user", "content": "x"},
                {"role": "tool", "content": "1", "tool_call_id": "c"},
            ],
        )
    with pytest.raises(
        openai.BadRequestError,
        match=r"the last message must be the user's question \(got an assistant message\)",
    ):
        api.chat.completions.create(model="helper", messages=[{"role": "assistant", "content": "hi"}])
    with pytest.raises(openai.BadRequestError, match=r"\(got a system message\)"):
        api.chat.completions.create(model="helper", messages=[{"role": "system", "content": "be brief"}])
    with pytest.raises(openai.BadRequestError, match="'image_url' content part is not accepted"):
        api.chat.completions.create(
            model="helper",
            messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]}],
        )
    with pytest.raises(openai.BadRequestError, match="messages: List should have at least 1 item"):
        api.chat.completions.create(model="helper", messages=[])


def test_the_same_security_rules_as_the_api(url: str) -> None:
    with pytest.raises(openai.AuthenticationError, match="wrong bearer token"):
        client(url, key="not-the-token").models.list()
    with pytest.raises(openai.AuthenticationError, match="wrong bearer token"):
        client(url, key="not-the-token").chat.completions.create(
            model="helper", messages=[{"role": "user", "content": "add 1"}]
        )
    body = {"model": "helper", "messages": [{"role": "user", "content": "add 1"}]}
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=url, timeout=PATIENCE) as http:
        rebound = http.post("/v1/chat/completions", json=body, headers={**auth, "Host": "evil.example:80"})
        assert rebound.status_code == 421
        foreign = http.post(
            "/v1/chat/completions", json=body, headers={**auth, "Origin": "https://evil.example"}
        )
        assert foreign.status_code == 403
        form = http.post("/v1/chat/completions", content="{}", headers={**auth, "Content-Type": "text/plain"})
        assert form.status_code == 415
