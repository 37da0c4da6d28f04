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


def test_a_question_s_messages_come_from_the_interruption_events_and_a_waiting_call_s_from_the_run() -> None:
    """The human channel shows a question from `interruption.requested`/`decided` (in the older
    `elicitation` form, with its `interruptions` entry); the older `elicitation.*` events and a
    waiting call's events add nothing (the run's `pending` message lists the calls)."""
    mapper = ChannelMapper()
    request = {"id": "ev-1", "server": "ev", "message": "name?", "requested_at": 5.0}
    question = {"tool": "ask", "call_id": "c1", "id": "ev-1", "kind": "question"}
    asked = ev.InterruptionRequested(namespace="b", request=request, **question)
    older = ev.ElicitationRequested(tool="ask", call_id="c1", request=request)
    assert mapper.map(older) == []
    [(channel, message)] = mapper.map(asked)
    assert channel == "approval" and message["status"] == "elicitation" and message["elicitation"] == request
    assert message["interruptions"] == [
        {
            "id": "ev-1",
            "kind": "question",
            "namespace": "b",
            "state": "pending",
            "requested_at": 5.0,
            "payload": request,
        }
    ]
    answer = {"action": "accept", "content": {"name": "Ada"}}
    answered = ev.InterruptionDecided(namespace="b", answer=answer, **question)
    assert mapper.map(ev.ElicitationResolved(id="ev-1", server="ev", action="accept")) == []
    [(channel, message)] = mapper.map(answered)
    assert channel == "approval"
    assert {k: message[k] for k in ("status", "tool", "call_id", "id", "server", "action")} == {
        "status": "elicitation_resolved",
        "tool": "ask",
        "call_id": "c1",
        "id": "ev-1",
        "server": "ev",
        "action": "accept",
    }
    [entry] = message["interruptions"]
    assert entry["state"] == "decided" and entry["answer"] == {"action": "accept"}  # not the content
    call = {"id": "call_1", "kind": "approval", "tool": "rm", "call_id": "call_1"}
    # A call starts to wait: `requested` at once (the run may still work); the run's own
    # `pending` (when it suspends) and `decided` messages list it after that.
    request = {"tool": "rm", "arguments": {"path": "x", "api_key": "sk-abcdefghijkl"}}
    [(channel, message)] = mapper.map(ev.InterruptionRequested(request=request, **call))
    assert channel == "approval" and message["status"] == "requested" and "approvals" not in message
    [entry] = message["interruptions"]
    assert (entry["id"], entry["kind"], entry["state"]) == ("call_1", "approval", "pending")
    assert entry["payload"] == {"tool": "rm", "arguments": {"path": "x", "api_key": "***"}}
    assert mapper.map(ev.InterruptionDecided(answer={"approved": True}, **call)) == []
