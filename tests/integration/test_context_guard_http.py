"""The context guard over real HTTP (real `openai` client, the scripted server): a long
conversation whose every request fits the budget, with valid tool-call pairing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import structlog.testing

from jianmu_like import Agent, ContextConfig, ReActConfig, create_react_node, human, tool
from jianmu_like.models._messages import Message, ToolCall
from jianmu_like.models._tokens import ESTIMATE, token_counter
from jianmu_like.nodes import AgentLLMNode, ContextGuard
from jianmu_like.nodes._context_guard import SUMMARY_PROMPT
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import ScriptedOpenAIServer, call, calls, reply

WINDOW, RESERVE = 640, 140
BUDGET = WINDOW - RESERVE


@tool
def lookup(n: int) -> str:
    """Facts about a number.

    Args:
        n: The number.
    """
    size = 20_000 if n % 20 == 0 else 300  # now and then a result far larger than the window
    return f"fact {n}: " + ("abcd " * size)[:size]


def responder(body: dict[str, Any]) -> Any:
    """A summary request gets a summary; a question `q N` calls lookup(N) when 4 divides N
    (lookup(N) and lookup(N + 1) in one turn when 8 does) and is answered at once otherwise;
    tool results are answered."""
    messages = body["messages"]
    if messages[0]["content"] == SUMMARY_PROMPT:
        return reply("Summary: the user asked numbered questions; lookups returned facts.")
    last = messages[-1]
    if last["role"] == "tool":
        return reply(f"answer from {last['content'][:12]}")
    n = int(last["content"].split()[-1])
    if n % 8 == 0:
        return calls(call("lookup", n=n), call("lookup", n=n + 1))
    return call("lookup", n=n) if n % 4 == 0 else reply(f"answer {n}")


def _messages(body: dict[str, Any]) -> list[Message]:
    return [
        Message(
            role=m["role"],
            content=m.get("content"),
            tool_call_id=m.get("tool_call_id"),
            tool_calls=[
                ToolCall.from_raw(c["id"], c["function"]["name"], c["function"]["arguments"])
                for c in m.get("tool_calls") or []
            ]
            or None,
        )
        for m in body["messages"]
    ]


def _check_pairing(messages: list[Message]) -> None:
    """Every assistant tool-call message is followed by exactly its tool results, and every
    tool result follows its call."""
    index = 0
    while index < len(messages):
        message = messages[index]
        assert message.role != "tool", f"tool result without its call at {index}"
        if message.tool_calls:
            ids = [c.id for c in message.tool_calls]
            results = messages[index + 1 : index + 1 + len(ids)]
            assert [r.tool_call_id for r in results if r.role == "tool"] == ids
            index += len(ids)
        index += 1


async def _converse(strategy: str, turns: int = 200) -> tuple[list[dict[str, Any]], list[Event], Agent]:
    async with ScriptedOpenAIServer(responder) as srv:
        config = ReActConfig(
            max_iterations=4,
            stream=False,
            max_tokens=None,  # the reply's room is reserve_tokens (llm.max_tokens would take it all)
            context=ContextConfig(
                window=WINDOW, reserve_tokens=RESERVE, strategy=strategy, tokenizer="estimate"
            ),
        )
        agent = Agent(create_react_node(model_client=srv.client(), tools=[lookup], config=config))
        events: list[Event] = []
        agent.telemetry.subscribe(events.append)
        for n in range(1, turns + 1):
            result = await agent.run({"messages": [human(f"q {n}")]})
            assert result.status == "success", result.error
        return srv.requests, events, agent


@pytest.mark.parametrize(("strategy", "turns"), [("drop", 200), ("summarize", 32)])
async def test_a_long_conversation_stays_within_the_budget(strategy: str, turns: int) -> None:
    requests, events, agent = await _converse(strategy, turns)
    summaries = [r for r in requests if r["messages"][0]["content"] == SUMMARY_PROMPT]
    asked = [r for r in requests if r["messages"][0]["content"] != SUMMARY_PROMPT]
    system_prompt = asked[0]["messages"][0]
    for body in asked:
        messages = _messages(body)
        tokens = ESTIMATE.messages(messages) + ESTIMATE.schemas(body["tools"])
        assert tokens <= BUDGET
        assert body["messages"][0] == system_prompt
        _check_pairing(messages)
    assert len(agent.state.messages) == 2 * turns + 2 * (turns // 4) + turns // 8  # the whole history
    compactions = [e.data for e in events if e.type == "context.compacted"]
    assert compactions and all(
        c["messages_after"] < c["messages_before"] for c in compactions if c["dropped"] or c["summarized"]
    )
    assert all(c["tokens_after"] <= c["budget"] == BUDGET for c in compactions)
    assert any(
        "characters cut: the context window is full" in (m["content"] or "")
        for b in asked
        for m in b["messages"]
    )
    assert len(asked) == sum(1 for e in events if e.type == "reply.started")
    if strategy == "summarize":
        # exactly one extra call per compaction that summarised turns
        assert len(summaries) == sum(1 for c in compactions if c["strategy"] == "summarize") > 0
        assert any(m["content"].startswith("[CONVERSATION SUMMARY]") for m in asked[-1]["messages"][1:3])
    else:
        assert summaries == []
        assert any("earlier messages were removed" in (m["content"] or "") for m in asked[-1]["messages"])


async def test_under_the_budget_the_request_is_sent_as_built() -> None:
    async with ScriptedOpenAIServer([reply("4")]) as srv:
        agent = Agent(create_react_node(model_client=srv.client(), config=ReActConfig(stream=False)))
        events: list[Event] = []
        agent.telemetry.subscribe(events.append)
        await agent.run({"messages": [human("2 + 2?")]})
    llm = next(n for n in agent.root.iterate() if isinstance(n, AgentLLMNode))
    assert isinstance(llm.request_transform, ContextGuard) and llm.request_transform.window == 32_768
    assert not [e for e in events if e.type == "context.compacted"]


def test_the_window_comes_from_the_yaml_model_section_and_the_agent_overrides_it(tmp_path: Path) -> None:
    from jianmu_like import load_agent
    from jianmu_like.testing import scripted_client

    def guard_of(text: str) -> Any:
        path = tmp_path / "agent.yaml"
        path.write_text(text)
        agent = load_agent(path, model_client=scripted_client(["x"]))
        return next(n for n in agent.root.iterate() if isinstance(n, AgentLLMNode)).request_transform

    model = "model:\n  name: m\n  context_window: 8192\n"
    assert guard_of(model).window == 8192
    guard = guard_of(model + "context:\n  window: 4096\n  strategy: drop\n")
    assert (guard.window, guard.config.strategy) == (4096, "drop")
    assert guard_of(model + "context: false\n") is None


def test_without_a_usable_tokenizer_the_estimate_counts() -> None:
    try:
        import tiktoken  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
    except ImportError:
        assert token_counter("auto").name == "estimate"
        with structlog.testing.capture_logs() as logs:
            assert token_counter("tiktoken").name == "estimate"  # falls back, with a warning
        [warning] = [entry for entry in logs if entry["event"] == "tokenizer.unavailable"]
        assert "ModuleNotFoundError" in warning["cause"] and "jianmu_like[tiktoken]" in warning["cause"]
    with pytest.raises(ValueError, match="unknown tokenizer"):
        token_counter("sentencepiece")
    assert ESTIMATE.message(human("x" * 40)) == 10 + 4


@tool
def archive(topic: str) -> str:
    """Read the archive on a topic.

    Args:
        topic: What to read about.
    """
    return f"{topic}: " + "record " * 70


@pytest.mark.parametrize("strategy", ["drop", "summarize"])
async def test_the_current_user_turn_and_the_system_prompt_always_stay(strategy: str) -> None:
    """The newest question and everything after it are kept whole when they fit (older turns
    leave instead), although the turn is larger than the room left for recent turns."""
    question = "Please read the archive about harbours and then tell me " + "in detail " * 48 + "ok?"
    history: list[Message] = []
    for n in range(6):
        history += [human(f"earlier question {n} " + "x" * 60), Message(role="assistant", content="y" * 60)]

    def model(body: dict[str, Any]) -> Any:
        messages = body["messages"]
        if messages[0]["content"] == SUMMARY_PROMPT:
            return reply("Summary: six earlier questions were answered.")
        if messages[-1]["role"] == "tool":
            return reply("Harbours: records found.")
        return call("archive", topic="harbours")

    async with ScriptedOpenAIServer(model) as srv:
        config = ReActConfig(
            max_tokens=None,  # the reply's room is reserve_tokens (llm.max_tokens would take it all)
            max_iterations=3,
            stream=False,
            context=ContextConfig(
                window=WINDOW, reserve_tokens=RESERVE, strategy=strategy, tokenizer="estimate"
            ),
        )
        agent = Agent(create_react_node(model_client=srv.client(), tools=[archive], config=config))
        events: list[Event] = []
        agent.telemetry.subscribe(events.append)
        result = await agent.run({"messages": [*history, human(question)]})
        asked = [r for r in srv.requests if r["messages"][0]["content"] != SUMMARY_PROMPT]
    assert result.status == "success"
    assert [e.data["over_budget"] for e in events if e.type == "context.compacted"]
    for body in asked:
        roles = [m["role"] for m in body["messages"]]
        assert roles[0] == "system" and body["messages"][0] == asked[0]["messages"][0]
        assert question in [m["content"] for m in body["messages"]]  # the current question stays
        assert ESTIMATE.messages(_messages(body)) + ESTIMATE.schemas(body["tools"]) <= BUDGET
    last = asked[-1]["messages"]
    assert [m["role"] for m in last[-3:]] == ["user", "assistant", "tool"]
    assert last[-1]["content"].startswith("harbours: record")
