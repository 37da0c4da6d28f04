"""ChannelMapper: telemetry events to SSE channels, the answer channel's guarantees."""

from __future__ import annotations

from typing import Any

from jianmu_like.server import ChannelMapper
from jianmu_like.telemetry import events as ev
from jianmu_like.telemetry.events import Event


def feed(mapper: ChannelMapper, *events: tuple[str, dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for kind, data in events:
        out.extend(mapper.map(Event(type=kind, data=data)))
    return out


def test_text_streamed_before_tool_calls_is_withdrawn_and_the_answer_streams_again() -> None:
    mapper = ChannelMapper()
    messages = feed(
        mapper,
        (ev.REPLY_STARTED, {"round": 1}),
        (ev.TEXT_DELTA, {"delta": "Let me check."}),
        (
            ev.REPLY_COMPLETED,
            {"round": 1, "final": False, "content": "Let me check.", "tool_calls": ["add"], "usage": {}},
        ),
        (ev.REPLY_STARTED, {"round": 2}),
        (ev.TEXT_DELTA, {"delta": "It is "}),
        (ev.TEXT_DELTA, {"delta": "42."}),
        (
            ev.REPLY_COMPLETED,
            {"round": 2, "final": True, "content": "It is 42.", "tool_calls": [], "usage": {}},
        ),
    )
    answer = [(d["status"], d["content"]) for c, d in messages if c == "answer"]
    assert answer == [
        ("start", ""),
        ("delta", "Let me check."),
        ("reset", ""),
        ("start", ""),
        ("delta", "It is "),
        ("delta", "42."),
    ]
    thinking = [d for c, d in messages if c == "step" and d["status"] == "done"]
    assert thinking[0]["reasoning"] == "Let me check." and thinking[0]["iteration"] == 1
    closing = mapper.finish(
        answer="It is 42.", status="success", usage={}, elapsed=0.1, termination=None, error=None
    )
    assert [(c, d["status"]) for c, d in closing] == [("answer", "done"), ("done", "success")]
    assert closing[0][1]["content"] == "It is 42." and closing[1][1]["iterations"] == 2


def test_a_run_without_replies_still_carries_its_answer_and_other_channels_map() -> None:
    mapper = ChannelMapper()
    compacted = {
        "messages_before": 9, "messages_after": 4, "tokens_before": 900, "tokens_after": 400,
        "budget": 500, "window": 1000, "strategy": "drop", "summarized": 0, "dropped": 5,
        "cut_tool_results": 0, "over_budget": False, "tokenizer": "estimate",
    }  # fmt: skip
    assert feed(mapper, (ev.CONTEXT_COMPACTED, compacted)) == [
        ("compact", {"original_messages": 9, "kept_messages": 4, **compacted})
    ]
    [(channel, data)] = feed(
        mapper, (ev.PHASE, {"phase": "selecting_tools", "status": "started", "total": 7})
    )
    assert channel == "phase" and data == {
        "phase": "selecting_tools", "status": "started", "total": 7, "total_tools": 7
    }  # fmt: skip
    assert feed(mapper, (ev.MODEL_CALL_STARTED, {"model": "m", "attempt": 1, "streaming": True})) == []
    assert feed(mapper, ("my.own.event", {"anything": 1})) == []  # a user's own type: no channel
    closing = mapper.finish(
        answer="done it", status="success", usage={}, elapsed=0.0, termination=None, error=None
    )
    assert [(c, d.get("status")) for c, d in closing] == [
        ("answer", "start"),
        ("answer", "delta"),
        ("answer", "done"),
        ("done", "success"),
    ]
