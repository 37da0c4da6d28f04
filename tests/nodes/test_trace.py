"""The run's trace read back from the history: one run spans its follow-ups."""

from __future__ import annotations

from jianmu_like.models._messages import Message, ToolCall, ai, human, tool_message
from jianmu_like.nodes._interrupts import interrupt_message
from jianmu_like.nodes._trace import read_trace, run_start
from jianmu_like.presets._research import calls_made


def _history() -> list[Message]:
    first = ToolCall(id="c1", name="search", arguments={"q": "X"})
    second = ToolCall(id="c2", name="search", arguments={"q": "Y"})
    return [
        human("an earlier run's question"),
        ai("an earlier answer"),
        human("what is X?"),
        ai(tool_calls=[first]),
        tool_message("X=1", "c1"),
        interrupt_message(["and Y?", "and Z?"]),
        ai(tool_calls=[second]),
        tool_message("Y=2", "c2"),
        human("Your final answer was empty. Answer the question."),
        ai("X is 1, Y is 2."),
    ]


def test_a_follow_up_continues_the_run_it_was_sent_to() -> None:
    messages = _history()
    assert run_start(messages) == 2
    trace = read_trace(messages)
    assert trace.question == "what is X?"
    assert trace.follow_ups == ["and Y?\n\nand Z?"]
    assert [(s.name, s.arguments, s.result) for s in trace.steps] == [
        ("search", {"q": "X"}, "X=1"),
        ("search", {"q": "Y"}, "Y=2"),
    ]
    assert trace.answer == "X is 1, Y is 2."
    assert trace.request().startswith("what is X?\n\nFollow-ups the user sent during the work:\n- and Y?")
    assert calls_made(messages) == 2  # the research preset's cap counts the whole run


def test_a_history_of_follow_ups_only_starts_at_the_beginning() -> None:
    messages = [interrupt_message(["hello"]), ai("hi")]
    assert run_start(messages) == -1
    trace = read_trace(messages)
    assert trace.question == "" and trace.follow_ups == ["hello"] and trace.answer == "hi"
