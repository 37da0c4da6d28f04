"""AnswerCheck on its own (a unit test of one node): a tool call written as text is caught in
every form the JSON and text protocols read, and a plain answer is not parsed at all."""

from __future__ import annotations

import dataclasses

import pytest

from jianmu_like._base.config import AnswerCheckConfig
from jianmu_like.models._messages import human
from jianmu_like.models._react_text import TEXT_DIALECT
from jianmu_like.models._text_protocol import JSON_DIALECT
from jianmu_like.nodes import _answer_check as answer_check
from jianmu_like.nodes._answer_check import AnswerCheck

CALLS = [
    '{"tool": "calculator", "arguments": {"expression": "6 * 7"}}',
    'Sure: ```json\n{"tool": "calculator", "arguments": {"expression": "6 * 7"}}\n```',
    '{"tool": "calculator", "arguments": {"expression": "6 *',  # cut off by max_tokens
    "{'tool': 'calculator', 'arguments': {'expression': '1'}}",
    'Thought: I need it\nAction: calculator\nAction Input: {"expression": "6 * 7"}',
    "Thought: I need it\n**Action**: calculator",  # no input at all: still a call
    "action:  `calculator`",
]
ANSWERS = [
    "It is 42.",
    "The calculator says 42.",
    "Use the action plan: first, second.",
    "A set looks like {1, 2}.",
    '{"answer": "42"}',
    "Action: dance",  # not one of the tools
]


def _check() -> AnswerCheck:
    return AnswerCheck("check", AnswerCheckConfig(), tool_names=lambda: ["calculator"])


@pytest.mark.parametrize("text", CALLS)
def test_tool_calls_written_as_text_are_caught(text: str) -> None:
    problem, _ = _check().problem(text, [human("q")])
    assert problem == "tool_call_as_text"


@pytest.mark.parametrize("text", ANSWERS)
def test_answers_are_not_taken_for_calls(text: str) -> None:
    assert not _check()._tool_call_as_text(text, [human("q")])


@pytest.mark.parametrize("text", CALLS + ANSWERS)
def test_the_pre_check_passes_whatever_a_parser_reads_as_a_call(text: str) -> None:
    parsed = [dialect.parse(text, lambda: "id")[0].tool_calls for dialect in (JSON_DIALECT, TEXT_DIALECT)]
    if any(parsed):
        assert answer_check._may_hold_call(text)


def test_a_plain_answer_is_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_parse(*args: object) -> None:
        raise AssertionError("parsed")

    for name in ("JSON_DIALECT", "TEXT_DIALECT"):
        dialect = getattr(answer_check, name)
        monkeypatch.setattr(answer_check, name, dataclasses.replace(dialect, parse=no_parse))
    assert not _check()._tool_call_as_text("It is 42.", [human("q")])
