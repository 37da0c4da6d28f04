"""The JSON/text tool protocol: prompt rendering, history conversion, reply schema, parsing."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from jianmu_like import ToolCall, ai, human, system, tool, tool_message
from jianmu_like.models._text_protocol import (
    ANSWER_SCHEMA,
    CALCULATOR_EXAMPLE,
    OBSERVATION_NUDGE,
    WorkedExample,
    forced_tools,
    parse_reply,
    render_system_prompt,
    reply_schema,
    to_chat_messages,
)
from jianmu_like.nodes._context import ContextBuilder
from jianmu_like.tools._toolset import ToolSet
from jianmu_like.tools.builtin import calculator


@tool
def lookup(key: str, exact: bool = False) -> str:
    """Look up a fact. More detail here.

    Args:
        key: What to look up.
        exact: Match exactly.
    """
    return key


TOOLS = ToolSet.from_providers([]).with_tools([calculator, lookup])
SCHEMAS = TOOLS.schemas()


def ids() -> Any:
    counter = itertools.count(1)
    return lambda: f"call_{next(counter)}"


def test_system_prompt_replaces_native_protocol_and_lists_tools_compactly() -> None:
    builder = ContextBuilder("You are careful.")
    native = builder.system_message(TOOLS).content or ""
    assert "Available tools:" in native
    turns = to_chat_messages([system(native), human("Hi")], SCHEMAS, persona=builder.persona)
    prompt = turns[0]["content"]
    assert prompt == render_system_prompt("You are careful.", SCHEMAS)
    assert prompt.startswith("You are careful.\n\nYou can use these tools:\n")
    assert "Available tools:" not in prompt and "tool messages" not in prompt
    assert "- calculator(expression: string): Evaluate an arithmetic expression" in prompt
    assert "- lookup(key: string, exact: boolean (optional)): Look up a fact." in prompt
    assert '{"answer": "<your answer>"}' in prompt
    assert 'Assistant: {"tool": "calculator", "arguments": {"expression": "12 * 3 + 4"}}' in prompt


def test_examples_are_shown_only_for_offered_tools() -> None:
    only_lookup = ToolSet.from_providers([]).with_tools([lookup]).schemas()
    assert "Example" not in render_system_prompt("x", only_lookup)
    mine = WorkedExample("Who?", "lookup", {"key": "who"}, "Ann", "Ann")
    both = render_system_prompt("x", SCHEMAS, examples=[CALCULATOR_EXAMPLE, mine])
    assert both.count("User: ") == 4 and "Examples:" in both
    assert "Example" not in render_system_prompt("x", SCHEMAS, examples=[])


def test_the_persona_arrives_as_data_and_a_system_prompt_without_one_is_kept_whole() -> None:
    """The protocol never takes a native system prompt apart: the request's persona is what it
    writes its prompt around; without one, the system message is the persona as it is."""
    native = "Be nice.\n\nAvailable tools:\nfoo: bar"
    with_persona = to_chat_messages([system(native), human("Hi")], SCHEMAS, persona="Be nice.")
    assert with_persona[0]["content"].startswith("Be nice.\n\nYou can use these tools:\n")
    assert "Available tools:" not in with_persona[0]["content"]
    without = to_chat_messages([system("Plain prompt."), human("Hi")], SCHEMAS)
    assert without[0]["content"].startswith("Plain prompt.\n\nYou can use these tools:\n")
    assert render_system_prompt(None, SCHEMAS).startswith("You can use these tools:\n")


def test_history_becomes_plain_turns() -> None:
    call = ToolCall(id="c1", name="calculator", arguments={"expression": "2+2"})
    history = [
        system("Be careful."),
        human("What is 2+2?"),
        ai(None, [call]),
        tool_message("4", "c1"),
        ai("It is 4."),
        human("And 3+3?"),
    ]
    turns = to_chat_messages(history, SCHEMAS)
    assert [t["role"] for t in turns] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert json.loads(turns[2]["content"]) == {"tool": "calculator", "arguments": {"expression": "2+2"}}
    assert turns[3]["content"] == f"Observation (calculator): 4\n{OBSERVATION_NUDGE}"
    assert json.loads(turns[4]["content"]) == {"answer": "It is 4."}


def test_consecutive_turns_merge_and_system_can_fold_into_first_user_turn() -> None:
    calls = [
        ToolCall(id="a", name="calculator", arguments={"expression": "1"}),
        ToolCall(id="b", name="lookup"),
    ]
    history = [
        system("S"),
        human("Q"),
        ai(None, calls),
        tool_message("1", "a"),
        tool_message("x", "b", "lookup"),
    ]
    turns = to_chat_messages(history, SCHEMAS, system_role=False)
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert turns[0]["content"].startswith("S\n\nYou can use these tools:") and turns[0]["content"].endswith(
        "\n\nQ"
    )
    assert len(turns[1]["content"].splitlines()) == 2
    assert (
        "Observation (calculator): 1" in turns[2]["content"]
        and "Observation (lookup): x" in turns[2]["content"]
    )


def test_without_tools_the_history_stays_plain() -> None:
    turns = to_chat_messages([system("S"), human("hi"), ai("hello")], None)
    assert turns == [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]


def test_reply_schema_allows_each_tool_or_an_answer() -> None:
    schema = reply_schema(SCHEMAS)
    branches = schema["oneOf"]
    assert [b["properties"].get("tool", {}).get("const") for b in branches] == ["calculator", "lookup", None]
    assert branches[0]["properties"]["arguments"]["required"] == ["expression"]
    assert branches[-1] == ANSWER_SCHEMA


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        (None, (["calculator", "lookup"], True)),
        ("auto", (["calculator", "lookup"], True)),
        ("required", (["calculator", "lookup"], False)),
        ("none", ([], True)),
        ({"type": "function", "function": {"name": "lookup"}}, (["lookup"], False)),
        ({"type": "function", "function": {"name": "nope"}}, (["calculator", "lookup"], False)),
    ],
)
def test_tool_choice(choice: Any, expected: tuple[list[str], bool]) -> None:
    assert forced_tools(choice, ["calculator", "lookup"]) == expected


def test_forced_schema_has_no_answer_branch() -> None:
    forced = reply_schema(SCHEMAS, {"type": "function", "function": {"name": "calculator"}})
    assert forced["properties"]["tool"] == {"const": "calculator"}
    assert "answer" not in json.dumps(reply_schema(SCHEMAS, "required"))
    assert reply_schema(SCHEMAS, "none") == ANSWER_SCHEMA


def test_parse_tool_call_and_answer() -> None:
    new_id = ids()
    message = parse_reply('{"tool": "calculator", "arguments": {"expression": "2+2"}}', new_id)
    assert message.content is None and message.tool_calls is not None
    assert (message.tool_calls[0].id, message.tool_calls[0].arguments) == ("call_1", {"expression": "2+2"})
    assert parse_reply('{"answer": "4"}', new_id).content == "4"
    assert parse_reply('{"tool": "lookup", "arguments": {"key": "x"}}', new_id).tool_calls[0].id == "call_2"  # type: ignore[index]


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"tool": "calculator", "arguments": {"expression": "1+1"}}\n```',
        'Sure! {"tool": "calculator", "arguments": {"expression": "1+1"}} Hope this helps.',
        "{'tool': 'calculator', 'arguments': {'expression': '1+1'}}",
        '{"name": "calculator", "args": {"expression": "1+1"}}',
        '{"tool": "calculator", "arguments": "{\\"expression\\": \\"1+1\\"}"}',
    ],
)
def test_parse_is_tolerant(text: str) -> None:
    calls = parse_reply(text, ids()).tool_calls
    assert calls is not None and calls[0].name == "calculator" and calls[0].arguments == {"expression": "1+1"}


def test_parse_keeps_bad_arguments_as_an_error_for_the_model() -> None:
    calls = parse_reply('{"tool": "calculator", "arguments": "{oops"}', ids()).tool_calls
    assert calls is not None and calls[0].arguments_error and calls[0].raw_arguments == "{oops"
    listed = parse_reply('{"tool": "calculator", "arguments": [1]}', ids()).tool_calls
    assert listed is not None and "JSON object" in (listed[0].arguments_error or "")


def test_parse_several_calls_truncated_answer_and_plain_text() -> None:
    two = parse_reply('{"tool": "a", "arguments": {}}\n{"tool": "b", "arguments": {"k": 1}}', ids())
    assert [c.name for c in two.tool_calls or ()] == ["a", "b"]
    assert parse_reply('{"answer": "The result is 11', ids()).content == "The result is 11"
    assert parse_reply("The answer is 7.", ids()).content == "The answer is 7."
    assert parse_reply('{"answer": {"value": 3}}', ids()).content == '{"value": 3}'


def test_cut_off_tool_call_stays_a_call_with_an_argument_error() -> None:
    text = '{ "tool": "calculator", "arguments": { "expression": "25 * 4 + 10 } } 25 * 4 = 100 100 + 1'
    calls = parse_reply(text, ids()).tool_calls
    assert calls is not None and calls[0].name == "calculator"
    assert calls[0].arguments == {} and "not valid JSON" in (calls[0].arguments_error or "")
    bare = parse_reply('{"tool": "calculator"', ids()).tool_calls
    assert bare is not None and bare[0].arguments_error


def test_an_object_is_a_call_only_when_it_names_a_tool_or_plainly_asks_for_one() -> None:
    names = {"calculator", "lookup"}
    value = parse_reply('{"name": "Ann", "answer": "Ann is 7."}', ids(), names)
    assert value.tool_calls is None and value.content == "Ann is 7."
    known = parse_reply('{"action": "lookup", "action_input": {"key": "k"}}', ids(), names)
    assert known.tool_calls and known.tool_calls[0].arguments == {"key": "k"}
    unknown = parse_reply('{"tool": "search", "arguments": {}}', ids(), names)
    assert unknown.tool_calls and unknown.tool_calls[0].name == "search"
    marked = parse_reply('{"action": "Final Answer", "action_input": "done"}', ids(), names)
    assert marked.tool_calls is None and marked.content == "done"
    own = parse_reply('{"action": "final_answer", "action_input": {"x": 1}}', ids(), {"final_answer"})
    assert own.tool_calls and own.tool_calls[0].name == "final_answer"  # the agent's own tool wins
