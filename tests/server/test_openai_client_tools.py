"""Client tools and structured output on `/v1/chat/completions`, driven by the official `openai`
SDK over real HTTP (sync, async, streaming, `parse`, `with_raw_response`, default retries on).

The agent's own model is the project's scripted OpenAI-compatible server: asked with the
client's `get_weather` among its tools, it calls the agent's own `add` and the client's
`get_weather` in one batch; once the results are in, it answers with what it read (as JSON
when the system prompt asks for a JSON answer)."""

from __future__ import annotations

import asyncio
import json
import threading
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
from jianmu_like.testing import PATIENCE, ScriptedToolCall, call, calls, reply, scripted_client, wait_until
from tests.server.sse_live import live_server

TOKEN = "s3cret-token-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
seen: list[dict[str, Any]] = []
"""Every request the agent's model received."""

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
CLOCK = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "The time.",
        "parameters": {"type": "object", "properties": {}},
    },
}


class get_weather(BaseModel):
    """The weather in a city."""

    city: str


class Weather(BaseModel):
    city: str
    temp: int


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def responder(body: dict[str, Any]) -> Any:
    seen.append(body)
    messages = body["messages"]
    last = messages[-1]
    offered = {t["function"]["name"] for t in body.get("tools") or ()}
    wants_json = "JSON schema" in str(messages[0].get("content"))
    if last["role"] == "tool":
        results = []
        for message in reversed(messages):
            if message["role"] != "tool":
                break
            results.insert(0, message["content"])
        if wants_json:
            return reply(json.dumps({"city": "Paris", "temp": int(results[-1].split()[-1])}))
        return reply("read: " + " | ".join(results))
    text = str(last["content"])
    if text.startswith("prose"):
        return reply("It is sunny, more or less.")
    if text.startswith("json") and wants_json:
        return reply('Here: ```json\n{"city": "Oslo", "temp": 3}\n```')
    if text.startswith("numbered"):  # a backend that numbers call ids from 1 in every conversation
        return calls(ScriptedToolCall(name="get_weather", arguments={"city": text.split()[-1]}, id="call_1"))
    if text.startswith("both") and {"get_weather", "get_time"} <= offered:
        return calls(call("get_weather", city="Paris"), call("get_time"))
    if "get_weather" in offered:
        return calls(call("add", a=1, b=2), call("get_weather", city=text.split()[-1]))
    return reply(f"no client tool; tools: {sorted(offered)}")


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    root = create_react_node(
        model_client=scripted_client(responder), tools=[add], config=ReActConfig(max_iterations=6)
    )
    template = AgentTemplate.from_prototype(root, log_events=False)
    with live_server(create_app(template.conversation, token=TOKEN, model_name="helper")) as base:
        yield base


def client(url: str, **options: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=TOKEN, timeout=PATIENCE, **options)


def runs(url: str) -> list[dict[str, Any]]:
    with httpx.Client(base_url=url, headers=AUTH, timeout=PATIENCE) as http:
        return list(http.get("/api/runs").json()["runs"])


def ask(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def test_a_client_tool_call_ends_the_response_and_its_result_resumes_the_run(url: str) -> None:
    api = client(url)  # default retries on: nothing here may make a second run
    before = len(runs(url))
    messages: list[Any] = ask("weather in Paris")
    first = api.chat.completions.create(model="helper", messages=messages, tools=[WEATHER])
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    (asked,) = choice.message.tool_calls or []
    assert asked.type == "function" and asked.function.name == "get_weather"
    assert json.loads(asked.function.arguments) == {"city": "Paris"}
    # The agent's own tool of the same batch ran on the server; the client's did not.
    assert {t["function"]["name"] for t in seen[-1]["tools"]} == {"add", "get_weather"}

    messages += [
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": asked.id, "content": "sunny 21"},
    ]
    second = api.chat.completions.create(model="helper", messages=messages, tools=[WEATHER])
    assert second.choices[0].finish_reason == "stop"
    assert second.choices[0].message.content == "read: 3 | sunny 21"
    # One run, resumed: the tool message became the call's observation.
    assert len(runs(url)) == before + 1
    assert (second.model_extra or {})["run_id"] == (first.model_extra or {})["run_id"]
    observed = [m for m in seen[-1]["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in observed][-1] == (asked.id, "sunny 21")
    # Each model call counted once over the two responses: a client summing usage gets the run's.
    with httpx.Client(base_url=url, headers=AUTH, timeout=PATIENCE) as http:
        run = http.get(f"/api/runs/{(first.model_extra or {})['run_id']}").json()
    assert first.usage is not None and second.usage is not None
    assert 0 < first.usage.total_tokens < run["usage"]["total_tokens"]
    assert first.usage.total_tokens + second.usage.total_tokens == run["usage"]["total_tokens"]


def test_streaming_sends_tool_call_deltas_and_resumes(url: str) -> None:
    api = client(url)
    messages: list[Any] = ask("weather in Rome")
    chunks = list(
        api.chat.completions.create(model="helper", messages=messages, tools=[WEATHER], stream=True)
    )
    deltas = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or ()]
    assert [(d.index, d.function.name if d.function else None) for d in deltas] == [(0, "get_weather")]
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    (delta,) = deltas
    assert delta.id and delta.function and json.loads(delta.function.arguments or "") == {"city": "Rome"}
    messages += [
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": delta.id,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": delta.function.arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": delta.id, "content": "rain 9"},
    ]
    with api.chat.completions.stream(model="helper", messages=messages, tools=[WEATHER]) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.content == "read: 3 | rain 9"


def test_tool_choice_none_required_and_named(url: str) -> None:
    api = client(url)
    answer = api.chat.completions.create(
        model="helper", messages=ask("weather in X"), tools=[WEATHER], tool_choice="none"
    )
    assert answer.choices[0].message.content == "no client tool; tools: ['add']"

    forced = api.chat.completions.create(
        model="helper", messages=ask("weather in Oslo"), tools=[WEATHER, CLOCK], tool_choice="required"
    )
    assert forced.choices[0].finish_reason == "tool_calls" and seen[-1]["tool_choice"] == "required"

    named = api.chat.completions.create(
        model="helper",
        messages=ask("weather in Bern"),
        tools=[WEATHER, CLOCK],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
    )
    assert named.choices[0].finish_reason == "tool_calls"
    assert {t["function"]["name"] for t in seen[-1]["tools"]} == {"add", "get_weather"}
    assert seen[-1]["tool_choice"] == "required"


def test_parallel_tool_calls_false_sends_one_call_at_a_time(url: str) -> None:
    api = client(url)
    messages: list[Any] = ask("both")
    first = api.chat.completions.create(
        model="helper", messages=messages, tools=[WEATHER, CLOCK], parallel_tool_calls=False
    )
    assert [c.function.name for c in first.choices[0].message.tool_calls or ()] == ["get_weather"]
    assert seen[-1]["parallel_tool_calls"] is False
    parallel = api.chat.completions.create(model="helper", messages=ask("both"), tools=[WEATHER, CLOCK])
    assert [c.function.name for c in parallel.choices[0].message.tool_calls or ()] == [
        "get_weather",
        "get_time",
    ]


def test_refusals_are_400_naming_the_cause(url: str) -> None:
    api = client(url, max_retries=0)
    with pytest.raises(openai.BadRequestError, match="unknown tool call id 'call_nobody'"):
        api.chat.completions.create(
            model="helper",
            messages=[
                *ask("hi"),
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "call_nobody",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "call_nobody", "content": "x"},
            ],
            tools=[WEATHER],
        )
    clash = {"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}
    with pytest.raises(
        openai.BadRequestError, match="client tool 'add' has the name of one of the agent's own"
    ):
        api.chat.completions.create(model="helper", messages=ask("hi"), tools=[clash])
    broken = {"type": "function", "function": {"name": "odd", "parameters": {"type": "nonsense"}}}
    with pytest.raises(openai.BadRequestError, match="the parameters of 'odd' are not a valid JSON schema"):
        api.chat.completions.create(model="helper", messages=ask("hi"), tools=[broken])
    with pytest.raises(openai.BadRequestError, match="tool_choice names 'nope'"):
        api.chat.completions.create(
            model="helper",
            messages=ask("hi"),
            tools=[WEATHER],
            tool_choice={"type": "function", "function": {"name": "nope"}},
        )
    with pytest.raises(openai.BadRequestError, match="tool messages answer the tool calls of the assistant"):
        api.chat.completions.create(
            model="helper", messages=[*ask("x"), {"role": "tool", "tool_call_id": "c", "content": "1"}]
        )


def test_a_thread_waiting_for_the_client_refuses_a_question_that_ignores_it(url: str) -> None:
    api = client(url, max_retries=0)
    thread = {"thread_id": "weather-thread"}
    first = api.chat.completions.create(
        model="helper", messages=ask("weather in Lima"), tools=[WEATHER], extra_body=thread
    )
    (asked,) = first.choices[0].message.tool_calls or []
    with pytest.raises(openai.ConflictError, match=f"waits for the results of client tool calls {asked.id}"):
        api.chat.completions.create(
            model="helper", messages=ask("something else"), tools=[WEATHER], extra_body=thread
        )
    # A tool message that answers only part of what waits, or more, is refused too.
    answer = [
        *ask("weather in Lima"),
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": asked.id, "content": "fog 14"},
    ]
    done = api.chat.completions.create(model="helper", messages=answer, tools=[WEATHER], extra_body=thread)
    assert done.choices[0].message.content == "read: 3 | fog 14"


def test_two_answers_at_once_resume_the_run_once(url: str) -> None:
    api = client(url, max_retries=0)
    messages: list[Any] = ask("weather in Kyiv")
    first = api.chat.completions.create(model="helper", messages=messages, tools=[WEATHER])
    (asked,) = first.choices[0].message.tool_calls or []
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": asked.id, "content": "snow 1"},
    ]
    outcomes: list[Any] = []

    def send() -> None:
        try:
            outcomes.append(api.chat.completions.create(model="helper", messages=messages, tools=[WEATHER]))
        except openai.APIStatusError as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=send) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(PATIENCE)
    answers = [o for o in outcomes if not isinstance(o, Exception)]
    errors = [o for o in outcomes if isinstance(o, openai.APIStatusError)]
    assert len(answers) == 1 and answers[0].choices[0].message.content == "read: 3 | snow 1"
    assert len(errors) == 1 and errors[0].status_code in (400, 409)
    assert "already" in errors[0].message


def test_a_huge_tool_message_is_cut_or_refused(url: str) -> None:
    api = client(url, max_retries=0)
    messages: list[Any] = ask("weather in Lagos")
    first = api.chat.completions.create(model="helper", messages=messages, tools=[WEATHER])
    (asked,) = first.choices[0].message.tool_calls or []
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    with pytest.raises(openai.APIStatusError, match="over the limit of 1048576 bytes") as caught:
        api.chat.completions.create(
            model="helper",
            messages=[*messages, {"role": "tool", "tool_call_id": asked.id, "content": "x" * 1_100_000}],
        )
    assert caught.value.status_code == 413  # the run still waits: the next answer is taken
    big = "y" * 200_000 + " 30"
    done = api.chat.completions.create(
        model="helper", messages=[*messages, {"role": "tool", "tool_call_id": asked.id, "content": big}]
    )
    observed = [m for m in seen[-1]["messages"] if m["role"] == "tool"][-1]["content"]
    assert len(observed) < 20_000 and done.choices[0].finish_reason == "stop"


def test_structured_output_with_parse_json_schema_and_json_object(url: str) -> None:
    api = client(url)
    parsed = api.chat.completions.parse(model="helper", messages=ask("json please"), response_format=Weather)
    assert parsed.choices[0].message.parsed == Weather(city="Oslo", temp=3)
    assert json.loads(parsed.choices[0].message.content or "") == {"city": "Oslo", "temp": 3}

    loose = api.chat.completions.create(
        model="helper",
        messages=ask("json please"),
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "w", "schema": Weather.model_json_schema(), "strict": False},
        },
    )
    assert json.loads(loose.choices[0].message.content or "") == {"city": "Oslo", "temp": 3}
    anything = api.chat.completions.create(
        model="helper", messages=ask("json please"), response_format={"type": "json_object"}
    )
    assert json.loads(anything.choices[0].message.content or "") == {"city": "Oslo", "temp": 3}

    # Client tools and a structured answer together: the answer after the tool result.
    messages: list[Any] = ask("weather in Paris")
    strict = [openai.pydantic_function_tool(get_weather)]
    first = api.chat.completions.parse(
        model="helper", messages=messages, tools=strict, response_format=Weather
    )
    (asked,) = first.choices[0].message.tool_calls or []
    assert asked.function.parsed_arguments == get_weather(city="Paris")
    messages += [
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": asked.id,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": asked.function.arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": asked.id, "content": "sunny 25"},
    ]
    second = api.chat.completions.parse(
        model="helper", messages=messages, tools=strict, response_format=Weather
    )
    assert second.choices[0].message.parsed == Weather(city="Paris", temp=25)


def test_an_answer_that_never_matches_the_schema_fails_clearly(url: str) -> None:
    api = client(url, max_retries=0)
    with pytest.raises(openai.APIStatusError) as caught:
        api.chat.completions.parse(model="helper", messages=ask("prose"), response_format=Weather)
    assert caught.value.code == "invalid_output" and "invalid output" in caught.value.message
    with pytest.raises(openai.BadRequestError, match="not a valid JSON schema"):
        api.chat.completions.create(
            model="helper",
            messages=ask("json"),
            response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": 5}}},
        )


def test_async_client_and_raw_response(url: str) -> None:
    async def main() -> None:
        async with openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=TOKEN, timeout=PATIENCE) as api:
            raw = await api.chat.completions.with_raw_response.create(
                model="helper", messages=ask("weather in Tunis"), tools=[WEATHER]
            )
            assert raw.status_code == 200
            first = raw.parse()
            (asked,) = first.choices[0].message.tool_calls or []
            messages = [
                *ask("weather in Tunis"),
                first.choices[0].message.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": asked.id, "content": "hot 35"},
            ]
            second = await api.chat.completions.create(model="helper", messages=messages, tools=[WEATHER])  # type: ignore[arg-type]
            assert second.choices[0].message.content == "read: 3 | hot 35"

    asyncio.run(main())


def test_a_client_that_never_answers_frees_the_run_after_the_time_to_live() -> None:
    root = create_react_node(model_client=scripted_client(responder), tools=[add])
    template = AgentTemplate.from_prototype(root, log_events=False)
    app = create_app(template.conversation, token=TOKEN, model_name="helper", run_ttl=0.3)
    with live_server(app) as base:
        api = client(base, max_retries=0)
        first = api.chat.completions.create(model="helper", messages=ask("weather in Baku"), tools=[WEATHER])
        (asked,) = first.choices[0].message.tool_calls or []
        run = f"/api/runs/{(first.model_extra or {})['run_id']}"
        with httpx.Client(base_url=base, headers=AUTH, timeout=PATIENCE) as http:
            wait_until(lambda: http.get(run).json()["status"] != "suspended", "the unanswered run to expire")
            summary = http.get(run).json()
        assert summary["status"] == "failure" and "never sent the results" in summary["error"]
        late = [
            *ask("weather in Baku"),
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": asked.id, "content": "late 1"},
        ]
        with pytest.raises(openai.BadRequestError, match="no run waits for it"):
            api.chat.completions.create(model="helper", messages=late, tools=[WEATHER])


def test_a_wait_survives_a_server_restart_with_a_store(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"

    def serve() -> Any:
        store = SQLiteCheckpointer(path)

        def factory() -> Agent:
            root = create_react_node(model_client=scripted_client(responder), tools=[add])
            return Agent(root, state_schema=ReActState, checkpointer=store, log_events=False)

        return live_server(create_app(factory, token=TOKEN, model_name="helper"))

    thread = {"thread_id": "kept"}
    key = {"Idempotency-Key": "quito-1"}
    with serve() as base:
        first = client(base).chat.completions.create(
            model="helper",
            messages=ask("weather in Quito"),
            tools=[WEATHER],
            extra_body=thread,
            extra_headers=key,
        )
    (asked,) = first.choices[0].message.tool_calls or []
    with serve() as base:  # a retry after the restart gets the same calls, and starts nothing
        again = client(base).chat.completions.create(
            model="helper",
            messages=ask("weather in Quito"),
            tools=[WEATHER],
            extra_body=thread,
            extra_headers=key,
        )
    assert again.choices[0].finish_reason == "tool_calls"
    assert [(c.id, c.function.arguments) for c in again.choices[0].message.tool_calls or ()] == [
        (asked.id, asked.function.arguments)
    ]
    messages = [
        *ask("weather in Quito"),
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": asked.id, "content": "mild 18"},
    ]
    with serve() as base:  # a new process would find the same: the wait is in the store
        done = client(base).chat.completions.create(
            model="helper", messages=messages, tools=[WEATHER], extra_body=thread
        )
    assert done.choices[0].message.content == "read: 3 | mild 18"


def test_repeated_call_ids_find_their_run_by_the_calls(url: str) -> None:
    api = client(url, max_retries=0)
    asked = {}
    for city in ("Kiel", "Ulm", "Ulm"):
        first = api.chat.completions.create(model="helper", messages=ask(f"numbered {city}"), tools=[WEATHER])
        asked.setdefault(city, []).append(first.choices[0].message)
    assert {m.tool_calls[0].id for ms in asked.values() for m in ms if m.tool_calls} == {"call_1"}

    def answer(city: str, sky: str) -> Any:
        messages = [
            *ask(f"numbered {city}"),
            asked[city][0].model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": "call_1", "content": sky},
        ]
        return api.chat.completions.create(model="helper", messages=messages, tools=[WEATHER])

    assert answer("Kiel", "wind 4").choices[0].message.content == "read: wind 4"
    with pytest.raises(openai.ConflictError, match="pending in several runs"):
        answer("Ulm", "fog 2")  # two stateless runs wait for the very same call


def test_a_batch_that_also_needs_an_approval_answers_409_then_waits_for_the_client() -> None:
    root = create_react_node(
        model_client=scripted_client(responder),
        tools=[add],
        constraints=GuardEnforcer([RequireApproval(tools="add")]),
    )
    template = AgentTemplate.from_prototype(root, log_events=False)
    with live_server(create_app(template.conversation, token=TOKEN, model_name="helper")) as base:
        api = client(base, max_retries=0)
        with pytest.raises(openai.ConflictError) as caught:
            api.chat.completions.create(model="helper", messages=ask("weather in Nice"), tools=[WEATHER])
        assert caught.value.code == "approval_required" and "get_weather" not in caught.value.message
        with httpx.Client(base_url=base, headers=AUTH, timeout=PATIENCE) as http:
            (approval,) = http.get("/api/approvals").json()["approvals"]
            assert approval["kind"] == "approval" and approval["tool"] == "add"
            assert (
                http.post(f"/api/approvals/{approval['id']}", json={"decision": "approve"}).status_code == 200
            )
            run = f"/api/runs/{approval['run_id']}"
            # Between the decision and the client's wait the run has no pending entry at all.
            wait_until(
                lambda: any(p["decided"] is False for p in http.get(run).json()["pending_approvals"]),
                "the client wait",
            )
            (waiting,) = http.get(run).json()["pending_approvals"]
            assert waiting["kind"] == "client_tool" and waiting["tool"] == "get_weather"
            refused = http.post(f"/api/approvals/{waiting['id']}", json={"decision": "approve"})
            assert refused.status_code == 409 and "waits for the client's result" in refused.json()["error"]
        calls_made = [
            {
                "id": waiting["call_id"],
                "type": "function",
                "function": {"name": "get_weather", "arguments": "{}"},
            }
        ]
        messages = [
            *ask("weather in Nice"),
            {"role": "assistant", "tool_calls": calls_made},
            {"role": "tool", "tool_call_id": waiting["call_id"], "content": "sun 26"},
        ]
        done = api.chat.completions.create(model="helper", messages=messages, tools=[WEATHER])
        assert done.choices[0].message.content == "read: 3 | sun 26"


def test_an_agent_that_takes_no_client_tools_refuses_them() -> None:
    from jianmu_like.nodes import LLMCallNode

    root = LLMCallNode("Say", scripted_client(lambda body: "hello"), prompt="Say hello to {task}.")
    template = AgentTemplate.from_prototype(root, ReActState, log_events=False)
    with live_server(create_app(template.conversation, token=TOKEN, model_name="helper")) as base:
        api = client(base, max_retries=0)
        with pytest.raises(openai.BadRequestError, match="the served agent takes no client tools"):
            api.chat.completions.create(model="helper", messages=ask("Ann"), tools=[WEATHER])
        with pytest.raises(openai.BadRequestError, match="the served agent takes no output schema"):
            api.chat.completions.create(
                model="helper", messages=ask("Ann"), response_format={"type": "json_object"}
            )
        plain = api.chat.completions.create(model="helper", messages=ask("Ann"))
        assert plain.choices[0].message.content == "hello"
