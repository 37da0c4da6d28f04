"""The Responses API (`/v1/responses`), driven by the official `openai` SDK's `responses`
resource over real HTTP: whole and streamed (`create(stream=True)` and the SDK's strict
`responses.stream` accumulator), `previous_response_id`, client function tools, `text.format`
structured output (`responses.parse`), reasoning items, `retrieve`, and the /v1 error contract.

The agent's own model is the project's scripted OpenAI-compatible server, answering by the last
user message: `count` (how many user messages it saw), `weather <city>` (a call of the client's
`get_weather` when offered, then what it read), `json` (JSON when asked for a schema), `think`
(an answer with its reasoning)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from pydantic import BaseModel

from jianmu_like import Agent, AgentTemplate, ReActConfig, ReActState, create_react_node, tool
from jianmu_like.checkpoint import SQLiteCheckpointer
from jianmu_like.guard import GuardEnforcer, RequireApproval
from jianmu_like.server import create_app
from jianmu_like.testing import PATIENCE, call, calls, reply, scripted_client
from tests.server.sse_live import live_server

TOKEN = "s3cret-token-for-responses"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
THOUGHT = "Six times seven is forty-two."
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


class Weather(BaseModel):
    city: str
    temp: int


@tool
def delete_all(what: str) -> str:
    """Delete everything (needs a human's approval)."""
    return f"deleted {what}"


def responder(body: dict[str, Any]) -> Any:
    messages = body["messages"]
    last = messages[-1]
    offered = {t["function"]["name"] for t in body.get("tools") or ()}
    if last["role"] == "tool":
        return reply("read: " + str(last["content"]))
    text = str(last["content"])
    if text == "count":
        users = [m for m in messages if m["role"] == "user"]
        terse = any("You are terse." in str(m["content"]) for m in messages if m["role"] == "system")
        return reply(f"users: {len(users)}; terse: {terse}")
    if text.startswith("weather") and "get_weather" in offered:
        return calls(call("get_weather", city=text.split()[-1]))
    if text == "json" and "JSON schema" in str(messages[0].get("content")):
        return reply('Here: ```json\n{"city": "Oslo", "temp": 3}\n```')
    if text == "think":
        return reply("It is 42.", reasoning_content=THOUGHT)
    if text == "delete":
        return calls(call("delete_all", what="files"))
    return reply(f"echo: {text}")


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    root = create_react_node(
        model_client=scripted_client(responder),
        tools=[delete_all],
        constraints=GuardEnforcer([RequireApproval(tools=["delete_all"])]),
        config=ReActConfig(max_iterations=6),
    )
    template = AgentTemplate.from_prototype(root, log_events=False)
    with live_server(create_app(template.conversation, token=TOKEN, model_name="helper")) as base:
        yield base


def client(url: str, **options: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=TOKEN, timeout=PATIENCE, **options)


def test_a_whole_response_and_its_retrieval(url: str) -> None:
    api = client(url)
    response = api.responses.create(model="helper", input="hello there")
    assert response.status == "completed" and response.object == "response"
    assert response.output_text == "echo: hello there"
    (item,) = response.output
    assert item.type == "message" and item.role == "assistant"
    assert response.usage is not None and response.usage.total_tokens > 0
    again = api.responses.retrieve(response.id)
    assert again.output_text == "echo: hello there" and again.id == response.id
    # It is an ordinary run of the server.
    run_id = (response.model_extra or {})["run_id"]
    with httpx.Client(base_url=url, headers=AUTH, timeout=PATIENCE) as http:
        assert http.get(f"/api/runs/{run_id}").json()["answer"] == "echo: hello there"


def test_a_streamed_response_sends_the_typed_events(url: str) -> None:
    api = client(url)
    events = list(api.responses.create(model="helper", input="streamed", stream=True))
    kinds = [event.type for event in events]
    assert kinds == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [event.sequence_number for event in events] == list(range(len(events)))
    completed = events[-1]
    assert completed.type == "response.completed"
    assert completed.response.output_text == "echo: streamed"
    # The SDK's own accumulator (strict about item ids and indexes) builds the same response.
    with api.responses.stream(model="helper", input="accumulated") as stream:
        final = stream.get_final_response()
    assert final.output_text == "echo: accumulated"


def test_previous_response_id_continues_the_conversation(url: str) -> None:
    api = client(url)
    first = api.responses.create(model="helper", input="count", instructions="You are terse.")
    assert first.output_text == "users: 1; terse: True"
    second = api.responses.create(model="helper", input="count", previous_response_id=first.id)
    assert second.output_text == "users: 2; terse: True"
    assert second.previous_response_id == first.id
    assert (second.model_extra or {})["thread_id"] == (first.model_extra or {})["thread_id"]
    # Repeating the instructions is fine; changing them is refused, not ignored.
    third = api.responses.create(
        model="helper", input="count", previous_response_id=second.id, instructions="You are terse."
    )
    assert third.output_text.startswith("users: 3")
    with pytest.raises(openai.BadRequestError) as refused:
        api.responses.create(
            model="helper", input="count", previous_response_id=third.id, instructions="Be long."
        )
    assert refused.value.param == "instructions"
    with pytest.raises(openai.NotFoundError):
        api.responses.create(model="helper", input="count", previous_response_id="resp_nope")


def test_a_client_function_call_ends_the_response_and_its_output_resumes_the_run(url: str) -> None:
    api = client(url)
    first = api.responses.create(model="helper", input="weather in Paris", tools=[WEATHER])  # type: ignore[list-item]
    (asked,) = first.output
    assert asked.type == "function_call" and asked.name == "get_weather"
    assert json.loads(asked.arguments) == {"city": "Paris"}
    second = api.responses.create(
        model="helper",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": asked.call_id, "output": "sunny 21"}],
        tools=[WEATHER],  # type: ignore[list-item]
    )
    assert second.output_text == "read: sunny 21"
    assert (second.model_extra or {})["run_id"] == (first.model_extra or {})["run_id"]
    # Answered once: a second answer to the same call is a conflict, not a second run.
    with pytest.raises(openai.ConflictError):
        client(url, max_retries=0).responses.create(
            model="helper",
            previous_response_id=first.id,
            input=[{"type": "function_call_output", "call_id": asked.call_id, "output": "again"}],
        )


def test_a_stateless_client_resends_the_whole_input_streamed(url: str) -> None:
    api = client(url)
    with api.responses.stream(model="helper", input="weather in Rome", tools=[WEATHER]) as stream:  # type: ignore[list-item]
        first = stream.get_final_response()
    (asked,) = first.output
    assert asked.type == "function_call"
    replay: list[Any] = [
        {"role": "user", "content": "weather in Rome"},
        asked.model_dump(exclude_none=True),
        {"type": "function_call_output", "call_id": asked.call_id, "output": "rain 9"},
    ]
    with api.responses.stream(model="helper", input=replay, tools=[WEATHER]) as stream:  # type: ignore[list-item]
        final = stream.get_final_response()
    assert final.output_text == "read: rain 9"


def test_text_format_json_schema_is_structured_output(url: str) -> None:
    api = client(url)
    parsed = api.responses.parse(model="helper", input="json", text_format=Weather)
    assert parsed.output_parsed == Weather(city="Oslo", temp=3)
    assert json.loads(parsed.output_text) == {"city": "Oslo", "temp": 3}


def test_reasoning_is_a_reasoning_item_whole_and_streamed(url: str) -> None:
    api = client(url)
    whole = api.responses.create(model="helper", input="think")
    reasoning, message = whole.output
    assert reasoning.type == "reasoning" and reasoning.content is not None
    assert reasoning.content[0].text == THOUGHT
    assert message.type == "message" and whole.output_text == "It is 42."
    with api.responses.stream(model="helper", input="think") as stream:
        events = list(stream)
        final = stream.get_final_response()
    assert "response.reasoning_text.done" in [event.type for event in events]
    assert [item.type for item in final.output] == ["reasoning", "message"]


def test_refusals_in_the_openai_shape(url: str) -> None:
    api = client(url, max_retries=0)
    with pytest.raises(openai.NotFoundError) as unknown:
        api.responses.create(model="other", input="hi")
    assert unknown.value.code == "model_not_found"
    for field, value in (("store", False), ("background", True)):
        with pytest.raises(openai.BadRequestError) as refused:
            api.responses.create(model="helper", input="hi", **{field: value})  # type: ignore[call-overload]
        assert refused.value.param == field
    with pytest.raises(openai.BadRequestError) as hosted:
        api.responses.create(model="helper", input="hi", tools=[{"type": "web_search"}])
    assert hosted.value.param == "tools[0].type"
    with pytest.raises(openai.BadRequestError) as image:
        api.responses.create(
            model="helper",
            input=[{"role": "user", "content": [{"type": "input_image", "image_url": "https://x/y.png"}]}],
        )
    assert image.value.param == "input[0].content"
    with pytest.raises(openai.NotFoundError):
        api.responses.retrieve("resp_unknown")
    # A run waiting for a human's approval cannot answer: 409, not retried by the SDK.
    with pytest.raises(openai.ConflictError) as waiting:
        client(url).responses.create(model="helper", input="delete")
    assert waiting.value.code == "approval_required"


def test_an_idempotency_key_names_one_run(url: str) -> None:
    api = client(url)
    key = {"Idempotency-Key": "responses-key-1"}
    first = api.responses.create(model="helper", input="once", extra_headers=key)
    again = api.responses.create(model="helper", input="once", extra_headers=key)
    assert (again.model_extra or {})["run_id"] == (first.model_extra or {})["run_id"]
    assert again.output_text == "echo: once"


def test_a_streamed_response_waiting_for_a_person_ends_with_an_error_event(url: str) -> None:
    events = list(client(url).responses.create(model="helper", input="delete", stream=True))
    assert [event.type for event in events[:2]] == ["response.created", "response.in_progress"]
    last = events[-1]
    assert last.type == "error" and last.code == "approval_required"
    assert "POST" in last.message and "/api/approvals/" in last.message


def test_previous_response_id_continues_after_a_restart_with_a_store(tmp_path: Path) -> None:
    store_path = tmp_path / "threads.db"

    def serve() -> Any:
        store = SQLiteCheckpointer(store_path)

        def factory() -> Agent:
            root = create_react_node(model_client=scripted_client(responder), tools=[delete_all])
            return Agent(root, state_schema=ReActState, checkpointer=store, log_events=False)

        return live_server(create_app(factory, token=TOKEN, model_name="helper"))

    with serve() as base:
        first = client(base).responses.create(model="helper", input="count")
    assert first.output_text == "users: 1; terse: False"
    with serve() as base:  # a new server: the response id still names the conversation
        api = client(base, max_retries=0)
        second = api.responses.create(model="helper", input="count", previous_response_id=first.id)
        with pytest.raises(openai.BadRequestError) as unknown:  # nothing to check them against
            api.responses.create(
                model="helper", input="count", previous_response_id=first.id, instructions="Be nice."
            )
    assert second.output_text == "users: 2; terse: False"
    assert unknown.value.code == "instructions_unknown"
