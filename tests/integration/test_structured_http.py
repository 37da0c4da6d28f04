"""Structured output over real HTTP: each degradation level of `structured_llm_call` (calls
counted on the server), `output_type` with a validation retry, YAML `output_schema`, run_sync."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from jianmu_like import (
    Agent,
    AgentFileError,
    ReActConfig,
    StructuredOutputError,
    create_react_node,
    human,
    load_agent,
    validate_agent_file,
)
from jianmu_like.models import structured_llm_call
from jianmu_like.testing import ScriptedOpenAIServer, ScriptedToolCall, call, reply


class Person(BaseModel):
    name: str
    age: int


ASK = [human("Who wrote the first program? Name and age at the time.")]


async def test_native_level_forces_the_schema_tool() -> None:
    async with ScriptedOpenAIServer([call("Person", name="Ada", age=36)]) as srv:
        result = await structured_llm_call(srv.client(), ASK, Person)
    assert result.value == Person(name="Ada", age=36) and result.raw == {"name": "Ada", "age": 36}
    assert (result.level, result.calls, result.usage.total_tokens) == ("native", 1, 15)
    (body,) = srv.requests
    assert [t["function"]["name"] for t in body["tools"]] == ["Person"]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "Person"}}
    assert body["tools"][0]["function"]["parameters"]["required"] == ["name", "age"]


async def test_json_mode_after_tools_are_rejected_with_one_reformat_retry() -> None:
    script = ['{"name": "Ada"}', 'Sure: {"name": "Ada", "age": 36,}']
    # A server that ignores response_format (prose in JSON mode), as some compatible ones do.
    async with ScriptedOpenAIServer(script, reject_fields=("tools",), ignores_response_format=True) as srv:
        result = await structured_llm_call(srv.client(), ASK, Person)
    assert result.level == "json_mode" and result.value.age == 36
    assert result.calls == 3 and len(srv.requests) == 3  # native (400), JSON mode, its retry
    assert result.usage.calls == 2  # the rejected call cost nothing
    assert "HTTP 400" in result.failures["native"]
    assert srv.requests[1]["response_format"] == {"type": "json_object"}
    retry = srv.requests[2]["messages"]
    assert retry[-2] == {"role": "assistant", "content": '{"name": "Ada"}'}
    assert "age: required key is missing" in retry[-1]["content"]


async def test_text_level_extracts_json_from_prose() -> None:
    script = ['Here it is:\n```json\n{"name": "Ada", "age": 36}\n```']
    async with ScriptedOpenAIServer(script, reject_fields=("tools", "response_format")) as srv:
        result = await structured_llm_call(srv.client(), ASK, Person)
    assert (result.level, result.calls, result.value.name) == ("text", 3, "Ada")
    assert set(result.failures) == {"native", "json_mode"}
    assert "response_format" not in srv.requests[2] and "tools" not in srv.requests[2]


async def test_every_level_failing_names_each_failure_or_returns_the_default() -> None:
    script = ["no", "still no", "nothing", "nope"]
    async with ScriptedOpenAIServer(
        script * 2, reject_fields=("tools",), ignores_response_format=True
    ) as srv:
        with pytest.raises(StructuredOutputError) as caught:
            await structured_llm_call(srv.client(), ASK, Person)
        fallback = await structured_llm_call(srv.client(), ASK, Person, default_value=None)
    message = str(caught.value)
    assert "native: " in message and "HTTP 400" in message
    assert "json_mode: no JSON object in the reply ('no'); after a retry:" in message
    assert "text: no JSON object" in message
    assert (fallback.level, fallback.value, fallback.calls) == ("default", None, 5)
    assert len(srv.requests) == 10


async def test_dict_schema_and_parse_fn() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    async with ScriptedOpenAIServer([call("count", n="x"), call("count", n=3)]) as srv:
        bad = await structured_llm_call(
            srv.client(), ASK, schema, name="count", levels=["native"], default_value=0
        )
        good = await structured_llm_call(
            srv.client(), ASK, schema, name="count", parse_fn=lambda raw: raw["n"] * 2
        )
    assert bad.level == "default" and "n: must be of type integer" in bad.failures["native"]
    assert good.value == 6


async def test_output_type_validated_with_one_retry() -> None:
    script = [reply('{"name": "Ada"}'), reply('{"name": "Ada", "age": 36}')]
    async with ScriptedOpenAIServer(script) as srv:
        root = create_react_node(model_client=srv.client(), output_type=Person)
        result = await Agent(root).run({"messages": ASK})
    assert result.status == "success" and result.output == Person(name="Ada", age=36)
    assert result.termination == {"reason": "completed", "iterations": 2}
    system_prompt = srv.requests[0]["messages"][0]["content"]
    assert "matches this JSON schema" in system_prompt and '"age"' in system_prompt
    correction = srv.requests[1]["messages"][-1]
    assert correction["role"] == "user" and "age: required key is missing" in correction["content"]


async def test_output_still_invalid_after_the_retry_fails_the_run() -> None:
    async with ScriptedOpenAIServer(["not json", '{"name": 1}']) as srv:
        root = create_react_node(model_client=srv.client(), output_type=Person)
        result = await Agent(root).run({"messages": ASK})
    assert result.status == "failure" and result.output is None
    assert result.termination is not None and result.termination["reason"] == "invalid_output"
    assert result.error is not None and "name: Input should be a valid string" in result.error


def test_yaml_output_schema_as_model_name_and_json_schema(tmp_path: Path) -> None:
    (tmp_path / "shapes.py").write_text(
        "from pydantic import BaseModel\nclass Point(BaseModel):\n    x: int\n"
    )
    named = tmp_path / "named.yaml"
    named.write_text("kind: react\nname: P\noutput_schema: shapes.Point\n")
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    inline = tmp_path / "inline.yaml"
    inline.write_text(f"kind: react\nname: P\noutput_schema: {json.dumps(schema)}\n")
    refused = tmp_path / "refused.yaml"
    refused.write_text("kind: react\nname: P\noutput_schema: 'json:JSONDecoder'\n")
    with ScriptedOpenAIServer(['{"x": 1}', '{"x": 2}']) as srv:
        results = []
        for file in (named, inline):
            agent = load_agent(file, model_client=srv.client())
            results.append(agent.run_sync({"messages": [human("x?")]}))
    assert type(results[0].output).__name__ == "Point" and results[0].output.x == 1
    assert results[1].output == {"x": 2}
    with pytest.raises(AgentFileError, match=r"refused.yaml:3: output_schema: module 'json'"):
        validate_agent_file(refused)


def test_run_sync_runs_successive_runs_on_one_loop() -> None:
    with ScriptedOpenAIServer(["one", "two"]) as srv:
        agent = Agent(create_react_node(model_client=srv.client(), config=ReActConfig(max_iterations=2)))
        first = agent.run_sync({"messages": [human("1")]})
        second = agent.run_sync({"messages": [human("2")]})
    assert (first.final_answer, second.final_answer) == ("one", "two")
    assert len(second.state.messages) == 4  # the conversation continued


async def test_run_sync_inside_an_event_loop_is_a_clear_error() -> None:
    async with ScriptedOpenAIServer() as srv:
        agent = Agent(create_react_node(model_client=srv.client()))
        with pytest.raises(RuntimeError, match=r"await agent.run"):
            agent.run_sync({"messages": [human("hi")]})
    assert srv.requests == []


async def test_hostile_replies_fail_every_level_as_a_structured_output_error() -> None:
    deep = '{"name": ' * 100_000 + '"Ada"' + "}" * 100_000
    script = [
        ScriptedToolCall(name="Person", arguments="[" * 100_000 + "]" * 100_000),  # native
        deep,  # JSON mode, then its retry
        '{"name": "Ada", "age": ' + "9" * 5000 + "}",
        "{" * 16_000,  # text, then its retry
        "{'name': 'Ada', 'age': 0x" + "f" * 5000 + "}",
    ]
    async with ScriptedOpenAIServer(script, ignores_response_format=True) as srv:
        with pytest.raises(StructuredOutputError) as caught:
            await structured_llm_call(srv.client(), ASK, Person)
    failures = caught.value.failures
    assert list(failures) == ["native", "json_mode", "text"] and caught.value.calls == 5
    assert "nested deeper than 64 levels" in failures["native"]
    assert failures["json_mode"].startswith("no JSON object in the reply")
    assert "after a retry: no JSON object in the reply" in failures["json_mode"]
    assert failures["text"].startswith("no JSON object in the reply")
    assert "after a retry: no JSON object in the reply" in failures["text"]


@pytest.mark.parametrize(
    ("abilities", "levels", "calls"),
    [
        ({}, ["native", "json_mode", "text"], 5),
        ({"supports_tools": False}, ["json_mode", "text"], 4),
        ({"supports_tools": False, "supports_json_mode": False}, ["text"], 2),
    ],
)
async def test_levels_start_at_what_the_model_declares(
    abilities: dict[str, bool], levels: list[str], calls: int
) -> None:
    """The reference's call-count table: tool_call + json_mode 5, json_mode only 4, text only 2."""
    from jianmu_like import ModelClient

    # Prose in JSON mode: a server that ignores response_format, so every level fails.
    async with ScriptedOpenAIServer(["no"] * 5, ignores_response_format=True) as srv:
        base = srv.client()
        protocol = "auto" if abilities else None
        client = ModelClient(base.provider, model=base.model, tool_protocol=protocol, **abilities)  # type: ignore[arg-type]
        result = await structured_llm_call(client, ASK, Person, default_value=None)
    assert (result.level, result.calls, list(result.failures)) == ("default", calls, levels)
    assert len(srv.requests) == calls
    assert ["response_format" in body for body in srv.requests][-2:] == [False, False]  # text last


async def test_regex_fallback_reads_prose_before_the_retry() -> None:
    def person(text: str) -> dict[str, object] | None:
        import re

        found = re.search(r"(\w+), aged (\d+)", text)
        return {"name": found[1], "age": int(found[2])} if found else None

    script = ["It was Ada, aged 36."]
    async with ScriptedOpenAIServer(script, reject_fields=("tools", "response_format")) as srv:
        result = await structured_llm_call(srv.client(), ASK, Person, regex_fallback=person)
    assert (result.level, result.value, result.calls) == ("text", Person(name="Ada", age=36), 3)
    async with ScriptedOpenAIServer(["I do not know.", '{"name": "Ada", "age": 36}']) as srv:
        client = srv.client()
        client.supports_json_mode = False
        result = await structured_llm_call(client, ASK, Person, regex_fallback=person, levels=["text"])
    assert (result.level, result.calls) == ("text", 2)  # the fallback found nothing: one retry
