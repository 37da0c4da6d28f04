"""The ReAct text dialect: tolerant reading of Thought / Action / Action Input / Final Answer."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from jianmu_like.models._react_text import TEXT_DIALECT, read_react_reply
from jianmu_like.models._text_protocol import JSON_DIALECT, read_reply


def ids() -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: f"call_{next(counter)}"


def test_action_with_fenced_single_quoted_input() -> None:
    text = "Thought: add\n**Action:** `calculator`\nAction Input:\n```json\n{'expression': '1+1',}\n```"
    message, understood = read_react_reply(text, ids())
    assert understood and message.tool_calls is not None
    assert (message.tool_calls[0].name, message.tool_calls[0].arguments) == (
        "calculator",
        {"expression": "1+1"},
    )
    assert message.reasoning_content == "add"


def test_unreadable_input_stays_a_call_in_error() -> None:
    message, understood = read_react_reply("Action: calculator\nAction Input: 1+1", ids())
    assert understood and message.tool_calls is not None and message.tool_calls[0].arguments_error


def test_final_answer_json_fallback_and_prose() -> None:
    message, understood = read_react_reply("Thought: easy\nFinal Answer: 4\nmore lines", ids())
    assert understood and message.content == "4\nmore lines" and message.reasoning_content == "easy"
    assert read_react_reply('{"answer": "5"}', ids())[0].content == "5"  # JSON after all
    assert read_react_reply("just prose", ids())[1] is False
    assert read_reply("just prose", ids())[1] is False
    assert (
        read_reply('{"tool_call": {"name": "t", "arguments": {"a": 1}}}', ids())[0].tool_calls[0].name == "t"
    )  # type: ignore[index]


def test_dialects_render_what_they_parse() -> None:
    for dialect in (JSON_DIALECT, TEXT_DIALECT):
        call = read_reply('{"tool": "t", "arguments": {"a": 1}}', ids())[0].tool_calls[0]  # type: ignore[index]
        again, ok = dialect.parse(dialect.render_call(call), ids())
        assert ok and again.tool_calls is not None and again.tool_calls[0].arguments == {"a": 1}
        assert dialect.parse(dialect.render_answer("done"), ids())[0].content == "done"
