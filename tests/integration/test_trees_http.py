"""Trees over real HTTP (openai client → scripted server): per-namespace results and total usage,
input addressed to namespaces and refused when no node reads it, the single-call LLM node and the
tool node in a sequence, and a tool that ends the ReAct loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import py_trees
import pytest
from pydantic import BaseModel

from jianmu_like import (
    Agent,
    InputError,
    ReActState,
    Usage,
    create_react_node,
    finish,
    human,
    load_agent,
    tool,
)
from jianmu_like.bt import _composites as composites
from jianmu_like.nodes import LLMCallNode, ToolNode
from jianmu_like.testing import ScriptedOpenAIServer, call, error_reply, reply
from jianmu_like.tools.builtin import calculator

PRESETS = Path(__file__).resolve().parents[2] / "presets"


@tool
async def lookup(city: str) -> str:
    """Population of a city.

    Args:
        city: The city's English name.
    """
    return {"Paris": "2.1 million", "Rome": "2.8 million"}.get(city, "unknown")


def _question(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def _both(client: Any) -> py_trees.composites.Parallel:
    return py_trees.composites.Parallel(
        "Both",
        policy=py_trees.common.ParallelPolicy.SuccessOnAll(),
        children=[
            create_react_node("A", namespace="a", model_client=client, tools=[lookup]),
            create_react_node("B", namespace="b", model_client=client, tools=[lookup]),
        ],
    )


def _population_script(body: dict[str, Any]) -> Any:
    """Each agent looks its city up, then answers; usages differ per city and step."""
    city = "Paris" if "Paris" in _question(body) else "Rome"
    observed = [m for m in body["messages"] if m["role"] == "tool"]
    base = 100 if city == "Paris" else 1000
    if not observed:
        usage = Usage(prompt_tokens=base, completion_tokens=1, total_tokens=base + 1)
        return reply(tool_calls=[call("lookup", city=city)], usage=usage)
    usage = Usage(prompt_tokens=2 * base, completion_tokens=2, total_tokens=2 * base + 2)
    return reply(f"{city}: {observed[0]['content']}", usage=usage)


async def test_parallel_agents_answer_per_namespace_and_usage_is_the_sum() -> None:
    async with ScriptedOpenAIServer(_population_script) as srv:
        agent = Agent(_both(srv.client()), output_namespace="b")
        result = await agent.run(
            {"a.messages": [human("Population of Paris?")], "b.messages": [human("Population of Rome?")]}
        )
        reported = [r for r in srv.requests]
    assert result.status == "success"
    assert set(result.agents) == {"a", "b"}
    a, b = result.agents["a"], result.agents["b"]
    assert (a.status, a.final_answer) == ("success", "Paris: 2.1 million")
    assert (b.status, b.final_answer) == ("success", "Rome: 2.8 million")
    assert a.termination == {"reason": "completed", "iterations": 2}
    assert (a.usage.total_tokens, b.usage.total_tokens) == (101 + 202, 1001 + 2002)
    assert len(reported) == 4
    assert result.usage.total_tokens == 101 + 202 + 1001 + 2002
    assert result.usage.calls == 4
    assert result.usage.prompt_tokens == a.usage.prompt_tokens + b.usage.prompt_tokens
    # The headline answer is the output namespace's.
    assert (result.output_namespace, result.final_answer) == ("b", "Rome: 2.8 million")


async def test_input_no_node_reads_is_an_error_before_any_model_call() -> None:
    async with ScriptedOpenAIServer(_population_script) as srv:
        agent = Agent(_both(srv.client()))
        with pytest.raises(InputError) as caught:
            await agent.run({"messages": [human("Population of Paris?")]})
        with pytest.raises(InputError) as typo:
            await agent.run({"c.messages": [human("Population of Paris?")]})
        with pytest.raises(InputError) as nested:
            await agent.run({"a": {"messages": [human("Population of Paris?")]}})
        assert srv.requests == []
    message = str(caught.value)
    assert "'messages'" in message and "top level" in message and "'a.messages'" in message
    assert "no namespace 'c'" in str(typo.value) and "namespaces: a, b" in str(typo.value)
    assert "'a.messages'" in str(nested.value)
    assert agent.state_manager.namespaces() == frozenset()  # nothing was written


async def test_llm_call_node_and_tool_node_in_a_sequence() -> None:
    async with ScriptedOpenAIServer(["It is 110."]) as srv:
        pipeline = composites.Sequence(
            "Pipeline",
            memory=True,
            children=[
                ToolNode("Compute", calculator, arguments={"expression": "expr"}, output_key="result"),
                LLMCallNode(
                    "Say",
                    srv.client(),
                    namespace="w",
                    system_prompt="Be brief.",
                    prompt="The calculator says {result} for {expr}. Say it.",
                ),
            ],
        )
        agent = Agent(pipeline, ReActState, output_namespace="w")
        result = await agent.run({"expr": "25 * 4 + 10"})
        (body,) = srv.requests
    assert result.status == "success" and result.final_answer == "It is 110."
    assert "tools" not in body
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][1]["content"] == "The calculator says 110 for 25 * 4 + 10. Say it."
    assert result.state.model_extra["result"] == "110"
    assert result.agents["w"].usage.total_tokens == result.usage.total_tokens == 15
    assert [m.role for m in result.state.model_extra["w.messages"]] == ["user", "assistant"]
    assert result.state.model_extra["w.text_output"] == "It is 110."  # the state contract's key


async def test_tool_node_failure_fails_the_node() -> None:
    agent = Agent(ToolNode("Compute", calculator, arguments={"expression": "expr"}), ReActState)
    result = await agent.run({"expr": "1 / 0"})
    assert result.status == "failure"


class Verdict(BaseModel):
    label: str
    confidence: float


async def test_llm_call_node_writes_a_structured_value() -> None:
    async with ScriptedOpenAIServer([call("Verdict", label="spam", confidence=0.9)]) as srv:
        node = LLMCallNode("Classify", srv.client(), prompt="Classify: {text}", output_schema=Verdict)
        result = await Agent(node, ReActState).run({"text": "WIN A PRIZE"})
    assert result.status == "success"
    assert result.output == Verdict(label="spam", confidence=0.9)
    assert result.final_answer == '{"label": "spam", "confidence": 0.9}'


async def test_a_structured_call_that_fails_everywhere_still_counts_its_calls() -> None:
    # native (no tool call), JSON mode and text (each with its one retry): five paid replies
    usages = [Usage(prompt_tokens=10 + i, completion_tokens=i + 1, total_tokens=11 + 2 * i) for i in range(5)]
    replies = [reply(f"not a verdict {i}", usage=usage) for i, usage in enumerate(usages)]
    async with ScriptedOpenAIServer(replies, ignores_response_format=True) as srv:
        node = LLMCallNode("Classify", srv.client(), prompt="Classify: {text}", output_schema=Verdict)
        result = await Agent(node, ReActState).run({"text": "WIN A PRIZE"})
        assert len(srv.requests) == 5
    assert result.status == "failure" and "structured output failed at every level" in (result.error or "")
    assert result.usage.total_tokens == sum(u.total_tokens for u in usages)
    assert result.usage.calls == 5


@tool
def submit(answer: str) -> str:
    """Submit the final answer.

    Args:
        answer: The answer to hand in.
    """
    finish(answer)
    return "submitted"


async def test_a_tool_can_end_the_loop_with_the_answer() -> None:
    async with ScriptedOpenAIServer([call("submit", answer="42")]) as srv:
        root = create_react_node(model_client=srv.client(), tools=[submit, calculator])
        result = await Agent(root, ReActState).run({"messages": [human("What is 6 * 7? Submit it.")]})
        assert len(srv.requests) == 1  # no last round to restate the answer
    assert result.status == "success" and result.final_answer == "42"
    assert result.termination == {"reason": "completed", "iterations": 1}
    assert result.state.messages[-1].content == "submitted"


def test_finish_outside_a_tool_call_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="inside a tool"):
        finish("x")


async def test_yaml_tree_reports_the_usage_of_every_agent() -> None:
    question = "How many seconds are there in a leap year?"
    async with ScriptedOpenAIServer(["1. days 2. seconds", "366", "86400", "31622400"]) as srv:
        agent = load_agent(PRESETS / "research.yaml", model_client=srv.client())
        result = await agent.run({"task": question, "messages": [human(question)]})
        assert len(srv.requests) == 4
    assert result.status == "success" and result.final_answer == "31622400"
    assert set(result.agents) == {"plan", "r1", "r2", "write"}
    assert all(a.usage.total_tokens == 15 for a in result.agents.values())
    assert result.usage.total_tokens == 60 and result.usage.calls == 4


async def test_llm_call_node_model_error_fails_with_the_reason() -> None:
    async with ScriptedOpenAIServer([error_reply(400, "no such model")]) as srv:
        node = LLMCallNode("Say", srv.client(), namespace="w", prompt="Hello")
        result = await Agent(node, ReActState).run()
    assert result.status == "failure"
    outcome = result.agents["w"]
    assert outcome.status == "failure" and outcome.error is not None and "no such model" in outcome.error
