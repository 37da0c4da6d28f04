"""The one reader of JSON in model text: what it finds in normal and hostile replies, and the
limits tool arguments are decoded under. (How long hostile replies take: bench/json_scan.py.)"""

from __future__ import annotations

import json

import pytest

from jianmu_like import ToolCall
from jianmu_like.models._json_text import (
    KEPT_INVALID_CHARS,
    MAX_ARGUMENTS_CHARS,
    MAX_CANDIDATES,
    MAX_DEPTH,
    JSONTextError,
    json_objects,
    loads_arguments,
)
from jianmu_like.models._react_text import read_react_reply
from jianmu_like.models._text_protocol import read_reply

DEEP = "[" * 100_000 + "]" * 100_000
DEEP_OBJECTS = '{"a":' * 100_000 + "1" + "}" * 100_000
LONG_INT = '{"n": ' + "9" * 5000 + "}"
LONG_STRING = '{"s": "' + "a" * (MAX_ARGUMENTS_CHARS + 10) + '"}'


def _nested(depth: int) -> dict[str, object]:
    value: dict[str, object] = {"x": 1}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def _ids() -> str:
    return "call_1"


def test_objects_in_prose_junk_and_python_literals() -> None:
    found = list(json_objects("x {not json} {\"a\": 1} {'b': true, 'c': null} {\"unclosed\": "))
    assert found == [{"a": 1}, {"b": True, "c": None}]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('I\'ll say {"a": "it\'s {x}"} and {"b": [1, {"c": 2}]}', [{"a": "it's {x}"}, {"b": [1, {"c": 2}]}]),
        ('{"tool": "c", "arguments": {"x": 1}, oops}', []),  # a broken object is skipped whole
        (
            '{"a": {"b": [{"c": {"d": 1}}, {"e": 2}]}, "f": 3}',
            [{"a": {"b": [{"c": {"d": 1}}, {"e": 2}]}, "f": 3}],
        ),
        ('{"k\\"{": {"b": "}"}}', [{'k"{': {"b": "}"}}]),  # braces and escaped quotes inside strings
        ('{"a": "broken\n{"b": 2}', [{"b": 2}]),  # a string cut by a newline does not hide what follows
        ("{}{}{}", [{}, {}, {}]),
        ("}}} {'a': (1, 2)} {1: 2} {[]: 1} {'x': {1, 2}}", []),  # not JSON values: skipped, no crash
    ],
)
def test_objects_found(text: str, expected: list[object]) -> None:
    assert list(json_objects(text)) == expected


@pytest.mark.parametrize(
    "text",
    [
        "{" * 1_000_000,
        '{"a":' * 200_000,
        '{"answer": "' + "x" * 1_000_000,
        '{"' * 500_000,
        "{'" * 500_000,
        '{"a": [' * 150_000,
        DEEP,
        '{"a":' * 100_000 + "1 x" + "}" * 100_000,  # balanced all the way, broken in the middle
    ],
)
def test_hostile_texts_hold_no_object(text: str) -> None:
    assert list(json_objects(text)) == []


def test_an_object_after_sixteen_thousand_open_braces_is_found() -> None:
    assert list(json_objects("{" * 16_000 + '{"answer": "ok"}')) == [{"answer": "ok"}]
    assert list(json_objects("{" * 16_000 + '{"tool": "t", "arguments": {}} tail')) == [
        {"tool": "t", "arguments": {}}
    ]


def test_the_number_of_objects_tried_is_bounded() -> None:
    assert len(list(json_objects("{" + "{}" * 500_000))) == MAX_CANDIDATES
    assert len(list(json_objects('{"a": 1} ' * 10_000))) == MAX_CANDIDATES


def test_objects_nested_past_the_limit_are_not_read() -> None:
    assert list(json_objects(DEEP_OBJECTS)) == []
    fits = json.dumps(_nested(MAX_DEPTH + 2))
    assert list(json_objects(f"{fits} {DEEP_OBJECTS} {fits}")) == [_nested(MAX_DEPTH + 2)] * 2
    assert list(json_objects(json.dumps(_nested(MAX_DEPTH + 3)))) == []


def test_numbers_past_the_limit_are_not_read() -> None:
    assert list(json_objects(LONG_INT)) == []
    assert list(json_objects("{'n': 0x" + "f" * 5000 + "}")) == []  # Python literal: no digit limit there


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (DEEP, "nested deeper than 64 levels"),
        ("[" * 65 + "]" * 65, "nested deeper than 64 levels"),
        (LONG_INT, "a number has more than 4300 digits"),
        ("-" + "1" * 4301, "a number has more than 4300 digits"),
        (LONG_STRING, "arguments are not usable: too long"),
        ('{"a": 1', "arguments are not valid JSON (Expecting ',' delimiter at position 7)"),
    ],
)
def test_argument_limits(text: str, problem: str) -> None:
    with pytest.raises(JSONTextError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        loads_arguments(text)


def test_arguments_within_the_limits_decode() -> None:
    assert loads_arguments("[" * 64 + "]" * 64) is not None
    assert loads_arguments('{"n": ' + "9" * 4300 + "}") == {"n": int("9" * 4300)}


@pytest.mark.parametrize("text", [DEEP, DEEP_OBJECTS, LONG_INT, LONG_STRING])
def test_tool_call_from_hostile_text_is_a_call_with_an_error(text: str) -> None:
    call = ToolCall.from_raw("call_1", "search", text)
    assert call.arguments == {} and call.arguments_error
    assert call.raw_arguments is not None and len(call.raw_arguments) <= KEPT_INVALID_CHARS + 40
    assert call.to_openai()["function"]["arguments"] == call.raw_arguments


def test_tool_call_from_a_hostile_dict_is_a_call_with_an_error() -> None:
    deep = ToolCall.from_raw("call_1", "search", _nested(MAX_DEPTH + 1))
    assert (
        deep.arguments == {}
        and deep.arguments_error == "arguments are not usable: nested deeper than 64 levels"
    )
    keys = ToolCall.from_raw("call_1", "search", {"a": {1: 2}})
    assert keys.arguments_error == "arguments are not usable: an object key is not a string"
    assert ToolCall.from_raw("call_1", "search", _nested(MAX_DEPTH)).arguments == _nested(MAX_DEPTH)


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested deeper than 64 levels"),
        ('{"a":' * 100_000 + "1" + "}" * 100_000, "nested deeper than 64 levels"),
        ('{"n": ' + "9" * 5000 + "}", "more than 4300 digits"),
        ('{"s": "' + "a" * (MAX_ARGUMENTS_CHARS + 10) + '"}', "too long"),
    ],
)
def test_both_text_protocols_turn_hostile_arguments_into_argument_errors(
    arguments: str, problem: str
) -> None:
    json_reply, _ = read_reply(f'{{"tool": "search", "arguments": {arguments}}}', _ids)
    text_reply, _ = read_react_reply(f"Thought: go\nAction: search\nAction Input: {arguments}", _ids)
    for message in (json_reply, text_reply):
        (call,) = message.tool_calls or ()
        assert call.name == "search" and call.arguments == {}
        assert problem in (call.arguments_error or "")


def test_blank_lines_and_long_lines_read_as_plain_text() -> None:
    message, understood = read_react_reply("\n" * 200_000, _ids)
    assert not understood and message.content == ""
    spaced, _ = read_react_reply("Action: search" + " " * 200_000 + "\nAction Input: {}", _ids)
    assert spaced.tool_calls is not None and spaced.tool_calls[0].name == "search"
