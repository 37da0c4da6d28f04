"""ContextGuard on its own (a unit test of one request transformer, in-process model)."""

from __future__ import annotations

from typing import Any

from jianmu_like import ContextConfig, ReActState
from jianmu_like.models._messages import Message, ToolCall, ai, human, system, tool_message
from jianmu_like.models._types import ModelRequest
from jianmu_like.nodes import ContextGuard, StateKeys
from jianmu_like.state import StateManager
from jianmu_like.telemetry import events as ev
from jianmu_like.testing import scripted_client


class Host:
    """What the guard asks of its node: state, namespace, keys, emit."""

    def __init__(self) -> None:
        self.state_manager = StateManager(ReActState)
        self.namespace: str | None = None
        self.keys = StateKeys()
        self.events: list[tuple[str, dict[str, Any]]] = []

    def emit(self, event: type[ev.ContextCompacted], /, **data: Any) -> None:
        self.events.append((event.type, data))


def _history(turns: int) -> list[Message]:
    history: list[Message] = [human("[USER INTERRUPT] keep me"), human("the task")]
    for n in range(turns):
        history.append(ai(tool_calls=[ToolCall(id=f"c{n}", name="f", arguments={"n": n})]))
        history.append(tool_message("x" * 200, f"c{n}"))
        history.append(ai(f"step {n} done"))
    return history


async def test_under_the_budget_the_same_request_goes_out() -> None:
    guard = ContextGuard(scripted_client([]), ContextConfig(window=4000))
    request = ModelRequest(messages=[system("s"), *_history(3)])
    assert await guard(request, Host()) is request


async def test_dropping_keeps_the_system_prompt_pinned_messages_and_tool_pairs() -> None:
    guard = ContextGuard(scripted_client([]), ContextConfig(window=900, reserve_tokens=100, strategy="drop"))
    host = Host()
    request = ModelRequest(messages=[system("s"), *_history(30)])
    sent = (await guard(request, host)).messages
    assert sent[0].content == "s" and sent[1].content == "[USER INTERRUPT] keep me"
    assert "earlier messages were removed" in (sent[2].content or "")
    assert sent[3].content == "the task"  # the current turn's question stays, its older steps leave
    for i, message in enumerate(sent):  # every tool result right after its call
        if message.role == "tool":
            j = i
            while sent[j].role == "tool":
                j -= 1
            assert message.tool_call_id in [c.id for c in sent[j].tool_calls or []]
        if message.tool_calls:
            assert sent[i + 1].tool_call_id == message.tool_calls[0].id
    [(kind, data)] = host.events
    assert kind == "context.compacted" and data["strategy"] == "drop"
    assert data["messages_before"] == len(request.messages) and data["messages_after"] == len(sent)
    assert data["tokens_after"] <= data["budget"] == 800
    # the next request reuses the compaction: no new event, no new work
    again = ModelRequest(messages=[*request.messages, ai("step 30 done")])
    resent = (await guard(again, host)).messages
    assert resent[-1].content == "step 30 done" and len(host.events) == 1
    assert resent[3].content == "the task"


async def test_a_failed_summary_falls_back_to_dropping() -> None:
    from jianmu_like.testing import error_reply

    guard = ContextGuard(
        scripted_client([error_reply(400, "no")]), ContextConfig(window=900, reserve_tokens=100)
    )
    host = Host()
    sent = (await guard(ModelRequest(messages=[system("s"), *_history(30)]), host)).messages
    assert "earlier messages were removed" in (sent[2].content or "")
    assert host.events[0][1]["strategy"] == "drop" and "no" in host.events[0][1]["summary_error"]
