"""Two-phase answers and loop safeguards over real HTTP (real `openai` client, the scripted
server), asserted on the requests the server received."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jianmu_like import Agent, ReActConfig, create_react_node, human, load_agent, tool
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import ScriptedOpenAIServer, call, calls, error_reply, reply
from jianmu_like.tools.builtin import calculator


@tool
def lookup(city: str) -> str:
    """Population of a city.

    Args:
        city: The city's English name.
    """
    return {"Paris": "2.1 million"}.get(city, "unknown") + " " + "x" * 3000


@tool
def flaky(q: str) -> str:
    """Always fails.

    Args:
        q: Anything.
    """
    raise RuntimeError("backend down")


def _agent(
    srv: ScriptedOpenAIServer, tools: list[Any], retries: int = 2, **config: Any
) -> tuple[Agent, list[Event]]:
    settings: dict[str, Any] = {"max_iterations": 6, "stream": False, **config}
    client = srv.client(max_retries=retries)
    root = create_react_node(model_client=client, tools=tools, config=ReActConfig(**settings))
    agent = Agent(root)
    events: list[Event] = []
    agent.telemetry.subscribe(events.append)
    return agent, events


async def test_synthesis_streams_the_answer_from_the_trace() -> None:
    script = [
        calls(call("lookup", city="Paris")),
        reply("2.1 million"),
        reply("Paris compte 2,1 millions d'habitants."),
    ]
    async with ScriptedOpenAIServer(script) as srv:
        agent, events = _agent(srv, [lookup], synthesize=True, stream=True)
        result = await agent.run({"messages": [human("Combien d'habitants à Paris ?")]})
    assert result.status == "success"
    assert result.final_answer == "Paris compte 2,1 millions d'habitants."
    synthesis = srv.requests[2]
    assert synthesis["stream"] is True and "tools" not in synthesis
    prompt = synthesis["messages"][1]["content"]
    assert "Combien d'habitants à Paris ?" in prompt and "Draft answer:\n2.1 million" in prompt
    assert '1. lookup({"city": "Paris"}) -> 2.1 million' in prompt
    assert "[... 1012 more characters cut]" in prompt  # the 3,012-character result cut to 2,000
    assert "same language as the question" in synthesis["messages"][0]["content"]
    deltas = "".join(e.data["delta"] for e in events if e.type == "text.delta")
    assert deltas == result.final_answer  # its tokens were streamed, and only its tokens
    assert [r.get("stream", False) for r in srv.requests] == [False, False, True]
    phases = [e.data["status"] for e in events if e.type == "phase"]
    assert phases == ["started", "completed"]
    assert result.state.messages[-1].content == result.final_answer
    assert result.usage.calls == 3


async def test_failed_synthesis_keeps_the_loops_answer() -> None:
    script = [reply("It is 42."), error_reply(500, "synthesis exploded")]
    async with ScriptedOpenAIServer(script) as srv:
        agent, events = _agent(srv, [calculator], retries=0, synthesize=True)
        result = await agent.run({"messages": [human("What is 6 * 7?")]})
    assert result.status == "success" and result.final_answer == "It is 42."
    assert len(srv.requests) == 2 and srv.requests[1]["stream"] is True
    failed = [e for e in events if e.type == "phase" and e.data["status"] == "failed"]
    assert len(failed) == 1 and "synthesis exploded" in failed[0].data["error"]


async def test_fallback_answer_at_max_iterations() -> None:
    script = [calls(call("calculator", expression="6 * 7")), calls(call("calculator", expression="6 * 8"))]
    async with ScriptedOpenAIServer(script) as srv:
        agent, events = _agent(srv, [calculator], max_iterations=2)
        result = await agent.run({"messages": [human("Keep computing")]})
    assert result.status == "failure" and result.final_answer is None
    assert result.termination == {"reason": "max_iterations", "iterations": 2, "max_iterations": 2}
    assert result.fallback_answer == (
        "No final answer: the run stopped because it reached its limit of 2 iterations. Tools run (2):\n"
        '1. calculator({"expression": "6 * 7"}) -> 42\n'
        '2. calculator({"expression": "6 * 8"}) -> 48'
    )
    assert len(srv.requests) == 2
    assert [e.data["reason"] for e in events if e.type == "answer.fallback"] == ["max_iterations"]


async def test_three_failing_tool_calls_stop_the_run() -> None:
    script = [calls(call("flaky", q=str(n))) for n in range(5)]
    async with ScriptedOpenAIServer(script) as srv:
        agent, _ = _agent(srv, [flaky])
        result = await agent.run({"messages": [human("Try it")]})
    assert result.status == "failure"
    assert result.termination == {
        "reason": "tool_failures",
        "iterations": 3,
        "consecutive_failures": 3,
        "max_tool_failures": 3,
    }
    assert len(srv.requests) == 3  # no fourth model call
    assert result.fallback_answer is not None and "3 tool calls failed in a row" in result.fallback_answer
    assert "RuntimeError: backend down" in result.fallback_answer


async def test_a_success_resets_the_failure_count() -> None:
    script = [
        calls(call("flaky", q="1")),
        calls(call("flaky", q="2")),
        calls(call("calculator", expression="1 + 1")),
        calls(call("flaky", q="3")),
        calls(call("flaky", q="4")),
        reply("Gave up on flaky: 2."),
    ]
    async with ScriptedOpenAIServer(script) as srv:
        agent, _ = _agent(srv, [flaky, calculator], max_iterations=8)
        result = await agent.run({"messages": [human("Try it")]})
    assert result.status == "success" and result.final_answer == "Gave up on flaky: 2."


async def test_empty_answer_is_re_asked_once() -> None:
    async with ScriptedOpenAIServer([reply(""), reply("It is 42.")]) as srv:
        agent, events = _agent(srv, [calculator])
        result = await agent.run({"messages": [human("What is 6 * 7?")]})
    assert result.status == "success" and result.final_answer == "It is 42."
    assert len(srv.requests) == 2
    correction = srv.requests[1]["messages"][-1]
    assert correction["role"] == "user" and correction["content"].startswith("Your final answer was empty")
    rejected = [e.data for e in events if e.type == "answer.rejected"]
    assert [(d["problem"], d["retry"]) for d in rejected] == [("empty", True)]


async def test_a_second_poor_answer_is_accepted_and_the_check_can_be_off() -> None:
    async with ScriptedOpenAIServer([reply(""), reply("")]) as srv:
        agent, _ = _agent(srv, [calculator])
        result = await agent.run({"messages": [human("What is 6 * 7?")]})
    assert result.status == "success" and result.final_answer == "" and len(srv.requests) == 2
    async with ScriptedOpenAIServer([reply("")]) as srv:
        agent, _ = _agent(srv, [calculator], answer_check=False)
        result = await agent.run({"messages": [human("What is 6 * 7?")]})
    assert result.status == "success" and len(srv.requests) == 1


async def test_too_short_and_repeated_answers_are_re_asked() -> None:
    same = "The population of Paris is 2.1 million."
    script = [
        reply(same),
        reply(same),
        reply("Lyon has about 0.5 million inhabitants."),
        reply("No"),
        reply("Yes"),
    ]
    async with ScriptedOpenAIServer(script) as srv:
        agent, _ = _agent(srv, [lookup], answer_check={"min_chars": 3})
        first = await agent.run({"messages": [human("Population of Paris?")]})
        second = await agent.run({"messages": [human("Population of Lyon?")]})
        third = await agent.run({"messages": [human("Is it big?")]})
    assert first.final_answer == same
    assert second.final_answer == "Lyon has about 0.5 million inhabitants."
    assert srv.requests[2]["messages"][-1]["content"].startswith(
        "Your final answer repeats an earlier answer"
    )
    assert third.final_answer == "Yes"  # accepted after one re-ask
    assert srv.requests[4]["messages"][-1]["content"].startswith("Your final answer is too short")


async def test_a_bare_i_dont_know_is_re_asked_in_any_common_language() -> None:
    script = [reply("我不知道。"), reply("It is 42."), reply("I don’t know!"), reply("Keine Ahnung")]
    async with ScriptedOpenAIServer(script) as srv:
        agent, events = _agent(srv, [calculator])
        first = await agent.run({"messages": [human("6 乘以 7 是多少？")]})
        second = await agent.run({"messages": [human("And 6 * 8?")]})
    assert first.final_answer == "It is 42." and len(srv.requests) == 4
    assert srv.requests[1]["messages"][-1]["content"].startswith(
        "Your final answer only says that you do not know"
    )
    assert second.final_answer == "Keine Ahnung"  # accepted after one re-ask
    rejected = [e.data["problem"] for e in events if e.type == "answer.rejected"]
    assert rejected == ["non_answer", "non_answer", "non_answer"]
    async with ScriptedOpenAIServer([reply("I don't know")]) as srv:
        agent, _ = _agent(srv, [calculator], answer_check={"non_answers": []})
        result = await agent.run({"messages": [human("6 * 7?")]})
    assert result.final_answer == "I don't know" and len(srv.requests) == 1


async def test_tool_call_written_as_text_gets_the_protocol_correction() -> None:
    script = [reply('{"tool": "calculator", "arguments": {"expression": "6 * 7"}}'), reply("It is 42.")]
    async with ScriptedOpenAIServer(script) as srv:
        agent, _ = _agent(srv, [calculator])
        result = await agent.run({"messages": [human("What is 6 * 7?")]})
    assert result.final_answer == "It is 42."
    assert srv.requests[1]["messages"][-1]["content"].startswith("Your last reply could not be read")


async def test_yaml_synthesize_and_safeguards(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(
        "kind: react\nname: Helper\ntools: [calculator]\nsynthesize: true\n"
        "answer_check: {min_chars: 2}\nlimits: {max_iterations: 4, max_tool_failures: 2}\n"
    )
    async with ScriptedOpenAIServer([reply("42"), reply("Six times seven is 42.")]) as srv:
        agent = load_agent(path, model_client=srv.client())
        names = [c.name for c in agent.root.children[0].children]
        result = await agent.run({"messages": [human("What is 6 * 7?")]})
    assert names == [
        "Helper.LLM",
        "Helper.Tools",
        "Helper.Done",
        "Helper.AnswerCheck",
        "Helper.Output",
        "Helper.Synthesize",
    ]
    assert result.final_answer == "Six times seven is 42."
    config = agent.root.children[0].children[0].config
    assert config.max_tool_failures == 2 and config.answer_check.min_chars == 2


async def test_pooled_conversations_get_their_own_fallback_and_budget_fallback() -> None:
    from jianmu_like import AgentTemplate

    script = [calls(call("calculator", expression="2 + 2"))]
    async with ScriptedOpenAIServer(script * 2) as srv:
        config = ReActConfig(max_iterations=5, max_budget_tokens=1, stream=False)
        root = create_react_node(model_client=srv.client(), tools=[calculator], config=config)
        template = AgentTemplate.from_prototype(root)
        alice, bob = template.conversation("alice"), template.conversation("bob")
        a = await alice.run({"messages": [human("Sum?")]})
        b = await bob.run({"messages": [human("Sum again?")]})
    for result in (a, b):
        assert result.status == "failure" and result.termination is not None
        assert result.termination["reason"] == "budget_exhausted"
        assert result.fallback_answer is not None
        assert result.fallback_answer.startswith(
            "No final answer: the run stopped because it spent its token budget"
        )
        assert '1. calculator({"expression": "2 + 2"}) -> 4' in result.fallback_answer


async def test_reflect_after_n_tool_calls_adds_the_verdict_as_an_observation() -> None:
    def model(body: dict[str, Any]) -> Any:
        system_text = body["messages"][0]["content"]
        if system_text.startswith("You check the work of an AI assistant"):
            return reply("Inconsistent. Paris was looked up twice; answer now.")
        tools_done = sum(1 for m in body["messages"] if m["role"] == "tool")
        if tools_done < 3:
            return call("lookup", city="Paris")
        return reply("Paris has 2.1 million people.")

    async with ScriptedOpenAIServer(model) as srv:
        agent, events = _agent(srv, [lookup], reflect_after=2)
        result = await agent.run({"messages": [human("Population of Paris?")]})
        requests = srv.requests
    assert result.status == "success" and result.final_answer == "Paris has 2.1 million people."
    reflections = [r for r in requests if r["messages"][0]["content"].startswith("You check the work")]
    assert len(reflections) == 1 and "tools" not in reflections[0]  # at 2 calls, not again at 3
    assert '2. lookup({"city": "Paris"})' in reflections[0]["messages"][1]["content"]
    roles = [m.role for m in result.state.messages]
    assert roles == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    note = result.state.messages[5].content or ""
    assert note.startswith("[Reflection] after 2 tool calls: Inconsistent.")
    assert [e.data["tool_calls"] for e in events if e.type == "reflection.completed"] == [2]
    assert result.usage.calls == 5  # four loop rounds and the reflection
    async with ScriptedOpenAIServer(model) as srv:
        agent, _ = _agent(srv, [lookup])
        await agent.run({"messages": [human("Population of Paris?")]})
        assert len(srv.requests) == 4  # off by default
