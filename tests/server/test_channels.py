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
        (ev.REPLY_COMPLETED, {"final": False, "content": "Let me check.", "tool_calls": ["add"]}),
        (ev.REPLY_STARTED, {"round": 2}),
        (ev.TEXT_DELTA, {"delta": "It is "}),
        (ev.TEXT_DELTA, {"delta": "42."}),
        (ev.REPLY_COMPLETED, {"final": True, "content": "It is 42."}),
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
    assert feed(mapper, ("context.compacted", {"original_messages": 9, "kept_messages": 4})) == [
        ("compact", {"original_messages": 9, "kept_messages": 4})
    ]
    [(channel, data)] = feed(mapper, ("phase.started", {"phase": "synthesis"}))
    assert channel == "phase" and data["phase"] == "synthesis"
    assert feed(mapper, (ev.MODEL_CALL_STARTED, {"model": "m"})) == []
    closing = mapper.finish(
        answer="done it", status="success", usage={}, elapsed=0.0, termination=None, error=None
    )
    assert [(c, d.get("status")) for c, d in closing] == [
        ("answer", "start"),
        ("answer", "delta"),
        ("answer", "done"),
        ("done", "success"),
    ]
