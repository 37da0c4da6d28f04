"""The ReAct agent end to end: real `openai` client, real HTTP, the scripted server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import py_trees
import pytest
from py_trees.common import Status

from jianmu_like import (
    Agent,
    AgentFileError,
    ReActConfig,
    ReActState,
    create_react_node,
    human,
    load_agent,
    tool,
)
from jianmu_like._base.config import ResilienceConfig
from jianmu_like.nodes._tool_executor import ToolExecutor
from jianmu_like.testing import (
    PATIENCE,
    Script,
    ScriptedOpenAIServer,
    ScriptedToolCall,
    await_within,
    call,
    calls,
    error_reply,
    reply,
    scripted_client,
)
from jianmu_like.tools.builtin import calculator


def roles(messages: list[Any]) -> list[str]:
    return [m.role for m in messages]


async def test_calculator_question_answered_in_two_rounds() -> None:
    with ScriptedOpenAIServer(
        [call("calculator", expression="25 * 4 + 10"), reply("25 * 4 + 10 = 110.")]
    ) as srv:
        root = create_react_node(
            model_client=srv.client(), tools=[calculator], config=ReActConfig(max_iterations=5)
        )
        agent = Agent(root, state_schema=ReActState)
        result = await agent.run(input_data={"messages": [human("What is 25 * 4 + 10?")]})

    assert result.status == "success"
    assert result.final_answer == "25 * 4 + 10 = 110."
    msgs = result.state.messages
    assert roles(msgs) == ["user", "assistant", "tool", "assistant"]
    assert msgs[1].tool_calls[0].name == "calculator"
    assert msgs[2].tool_call_id == msgs[1].tool_calls[0].id
    assert msgs[2].content == "110"
    assert result.state.rounds == 2
    assert result.usage.calls == 2 and result.usage.total_tokens == 30
    assert result.termination == {"reason": "completed", "iterations": 2}
    # What went over the wire: the second request carries the whole exchange, tool result included.
    second = srv.requests[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool"]
    assert second[3] == {"role": "tool", "content": "110", "tool_call_id": msgs[1].tool_calls[0].id}
    assert second[2]["tool_calls"][0]["function"]["name"] == "calculator"
    assert srv.requests[0]["tools"][0]["function"]["name"] == "calculator"


async def test_parallel_tool_calls_run_concurrently_and_answer_in_call_order() -> None:
    finished: list[str] = []
    b_started = asyncio.Event()

    @tool
    async def slow_a(x: int) -> str:
        """Slow tool A: finishes only once B has begun (run one after the other, it never would)."""
        await await_within(b_started.wait(), "slow_b to start while slow_a runs")
        finished.append("a")
        return f"a{x}"

    @tool
    async def slow_b(x: int) -> str:
        """Slow tool B (finishes first)."""
        b_started.set()
        finished.append("b")
        return f"b{x}"

    script = [calls(call("slow_a", x=1), call("slow_b", x=2)), reply("both done")]
    with ScriptedOpenAIServer(script) as srv:
        agent = Agent(create_react_node(model_client=srv.client(), tools=[slow_a, slow_b]))
        result = await agent.run(input_data={"messages": [human("run both")]})

    assert result.status == "success"
    assert finished == ["b", "a"]  # b completed first ...
    msgs = result.state.messages
    assert roles(msgs) == ["user", "assistant", "tool", "tool", "assistant"]
    assert [m.content for m in msgs[2:4]] == ["a1", "b2"]  # ... yet observations keep call order
    assert [m.tool_call_id for m in msgs[2:4]] == [tc.id for tc in msgs[1].tool_calls]


async def test_serial_mode_runs_one_after_another() -> None:
    order: list[str] = []

    @tool
    async def step(name: str) -> str:
        """Record a step."""
        order.append(f"start {name}")
        await asyncio.sleep(0.05)
        order.append(f"end {name}")
        return name

    script = [calls(call("step", name="1"), call("step", name="2")), reply("ok")]
    with ScriptedOpenAIServer(script) as srv:
        root = create_react_node(
            model_client=srv.client(), tools=[step], config=ReActConfig(execution_mode="serial")
        )
        result = await Agent(root).run(input_data={"messages": [human("go")]})
    assert result.status == "success"
    assert order == ["start 1", "end 1", "start 2", "end 2"]


FORCED = {"type": "function", "function": {"name": "calculator"}}


@pytest.mark.parametrize("where", ["field", "extra_params"])
async def test_tool_choice_only_in_first_round_and_kept_through_retry(where: str) -> None:
    config = (
        ReActConfig(tool_choice=FORCED)
        if where == "field"
        else ReActConfig(extra_params={"tool_choice": FORCED})
    )
    script = [error_reply(429, "slow down"), call("calculator", expression="2+2"), reply("4")]
    with ScriptedOpenAIServer(script) as srv:
        root = create_react_node(model_client=srv.client(), tools=[calculator], config=config)
        result = await Agent(root).run(input_data={"messages": [human("2+2?")]})
        requests = srv.requests
    assert result.status == "success" and result.final_answer == "4"
    assert len(requests) == 3
    assert requests[0]["tool_choice"] == FORCED  # first attempt (429)
    assert requests[1]["tool_choice"] == FORCED  # its retry: same logical round
    assert "tool_choice" not in requests[2]  # second round: the model decides


async def test_tool_choice_kept_on_fallback_model_in_first_round() -> None:
    script = Script([call("calculator", expression="1+1"), reply("2")], fail_models={"dead": 503})
    with ScriptedOpenAIServer(script) as srv:
        client = srv.client(
            model="dead",
            resilience=ResilienceConfig(max_retries=0, backoff_initial=0, fallback_models=["alive"]),
        )
        root = create_react_node(
            model_client=client, tools=[calculator], config=ReActConfig(tool_choice="required")
        )
        result = await Agent(root).run(input_data={"messages": [human("1+1")]})
        requests = srv.requests
    assert result.status == "success"
    models = [r["model"] for r in requests]
    assert models == ["dead", "alive", "dead", "alive"]
    assert [r.get("tool_choice") for r in requests] == ["required", "required", None, None]


async def test_token_budget_aborts_before_next_iteration() -> None:
    with ScriptedOpenAIServer(lambda body: call("calculator", expression="1+1")) as srv:
        config = ReActConfig(max_budget_tokens=30, max_iterations=10)  # 15 tokens per scripted call
        result = await Agent(
            create_react_node(model_client=srv.client(), tools=[calculator], config=config)
        ).run(input_data={"messages": [human("loop")]})
        n_requests = len(srv.requests)
    assert result.status == "failure"
    assert result.termination == {
        "reason": "budget_exhausted",
        "iterations": 2,
        "total_tokens": 30,
        "max_budget_tokens": 30,
    }
    assert n_requests == 2
    assert result.usage.total_tokens == 30
    # Every tool call of the last round got its observation: the history stays valid.
    assert roles(result.state.messages)[-1] == "tool"


async def test_max_iterations_termination() -> None:
    with ScriptedOpenAIServer(lambda body: call("calculator", expression="1+1")) as srv:
        result = await Agent(
            create_react_node(
                model_client=srv.client(), tools=[calculator], config=ReActConfig(max_iterations=3)
            )
        ).run(input_data={"messages": [human("loop")]})
        n_requests = len(srv.requests)
    assert result.status == "failure"
    assert result.termination == {"reason": "max_iterations", "iterations": 3, "max_iterations": 3}
    assert n_requests == 3 and result.state.rounds == 3
    assert result.final_answer is None


async def test_dead_primary_model_falls_back() -> None:
    script = Script([reply("from the fallback")], fail_models={"primary": 500})
    with ScriptedOpenAIServer(script) as srv:
        client = srv.client(
            model="primary",
            resilience=ResilienceConfig(max_retries=1, backoff_initial=0, fallback_models=["backup"]),
        )
        result = await Agent(create_react_node(model_client=client, tools=[calculator])).run(
            input_data={"messages": [human("hi")]}
        )
        models = [r["model"] for r in srv.requests]
    assert result.status == "success" and result.final_answer == "from the fallback"
    assert models == ["primary", "primary", "backup"]


async def test_model_error_after_retries_fails_without_extra_iteration() -> None:
    with ScriptedOpenAIServer(lambda body: error_reply(503, "overloaded")) as srv:
        client = srv.client(resilience=ResilienceConfig(max_retries=2, backoff_initial=0))
        result = await Agent(create_react_node(model_client=client, tools=[calculator])).run(
            input_data={"messages": [human("hi")]}
        )
        n_requests = len(srv.requests)
    assert result.status == "failure"
    assert n_requests == 3  # one logical call, three attempts, no second iteration
    assert result.termination is not None and result.termination["reason"] == "model_error"
    assert result.termination["iterations"] == 1
    assert result.error is not None and "503" in result.error and "overloaded" in result.error


async def test_tool_faults_become_observations_and_the_run_still_answers() -> None:
    @tool
    def explode(x: int) -> int:
        """Always fails."""
        raise ValueError(f"cannot handle {x}")

    @tool(timeout=0.2)
    async def sleepy() -> str:
        """Never finishes in time."""
        await asyncio.sleep(PATIENCE)
        return "late"

    faults = calls(
        ScriptedToolCall(name="calculator", arguments='{"expression": "1+1"'),  # malformed JSON
        call("no_such_tool", q="x"),
        call("explode", x=3),
        call("sleepy"),
        call("calculator", expression=5),  # wrong type
    )
    with ScriptedOpenAIServer([faults, reply("I recovered")]) as srv:
        root = create_react_node(model_client=srv.client(), tools=[calculator, explode, sleepy])
        result = await Agent(root).run(input_data={"messages": [human("break things")]})
        second_request = srv.requests[1]["messages"]

    assert result.status == "success" and result.final_answer == "I recovered"
    obs = [m.content for m in result.state.messages if m.role == "tool"]
    assert len(obs) == 5
    assert obs[0].startswith("Error: invalid arguments for tool 'calculator'")
    assert "not valid JSON" in obs[0] and '{"expression": "1+1"' in obs[0]
    assert obs[1].startswith("Error: unknown tool 'no_such_tool'") and "calculator" in obs[1]
    assert obs[2] == "Error: tool 'explode' raised ValueError: cannot handle 3"
    assert obs[3] == "Error: tool 'sleepy' timed out after 0.2 s"
    assert obs[4].startswith("Error: invalid arguments for tool 'calculator'") and "expression" in obs[4]
    assert obs[4].count("invalid arguments") == 1, obs[4]  # one prefix, not one per layer
    # The model saw every observation, paired with its call.
    assert [m["role"] for m in second_request].count("tool") == 5


async def test_long_output_cut_and_repeat_hint() -> None:
    @tool
    def big() -> str:
        """Returns a lot."""
        return "x" * 20_000

    script = [call("big"), call("big"), reply("done")]
    with ScriptedOpenAIServer(script) as srv:
        root = create_react_node(
            model_client=srv.client(), tools=[big], config=ReActConfig(max_output_chars=1000)
        )
        result = await Agent(root).run(input_data={"messages": [human("go")]})
    obs = [m.content for m in result.state.messages if m.role == "tool"]
    assert obs[0].startswith("x" * 666 + "\n\n[... 19000 of 20000 characters omitted ...]\n\n" + "x" * 334)
    assert "already made this exact call 1 time(s)" not in obs[0]
    assert "already made this exact call 1 time(s)" in obs[1]


class SetQuestion(py_trees.behaviour.Behaviour):
    """A plain py_trees behaviour: writes the question into the state."""

    def update(self) -> Status:
        self.state_manager.update({"messages": [human("What is 6 * 7?")], "task": "multiply"})
        return Status.SUCCESS


class Shout(py_trees.behaviour.Behaviour):
    """A plain py_trees behaviour reading the agent's answer."""

    def update(self) -> Status:
        answer = self.state_manager.get("final_answer")
        self.state_manager.update({"shouted": answer.upper()})
        return Status.SUCCESS


async def test_agent_embedded_in_a_larger_tree() -> None:
    with ScriptedOpenAIServer([call("calculator", expression="6*7"), reply("It is 42.")]) as srv:
        react = create_react_node("Solver", model_client=srv.client(), tools=[calculator])
        root = py_trees.composites.Sequence(
            "Pipeline", memory=True, children=[SetQuestion("ask"), react, Shout("shout")]
        )
        agent = Agent(root, state_schema=ReActState)
        result = await agent.run()
    assert result.status == "success"
    assert result.state.model_extra["shouted"] == "IT IS 42."
    assert result.state.task == "multiply"
    assert [c.name for c in react.children[0].children][:3] == ["Solver.LLM", "Solver.Tools", "Solver.Done"]


async def test_two_namespaced_agents_in_parallel_do_not_touch_each_other() -> None:
    begun = {"alpha": asyncio.Event(), "beta": asyncio.Event()}

    @tool
    async def lookup(key: str) -> str:
        """Look a key up, once the other agent's lookup has begun too: the two calls overlap, or
        the first never returns (a value, that is: it fails, and so does the test)."""
        begun[key].set()
        other = "beta" if key == "alpha" else "alpha"
        await await_within(begun[other].wait(), f"the {other} lookup to overlap the {key} lookup")
        return f"value-of-{key}"

    def responder(body: dict[str, Any]) -> Any:
        msgs = body["messages"]
        question = next(m["content"] for m in msgs if m["role"] == "user")
        key = "alpha" if "alpha" in question else "beta"
        if msgs[-1]["role"] == "tool":
            return reply(f"{key} is {msgs[-1]['content']}")
        return call("lookup", key=key)

    class Ask(py_trees.behaviour.Behaviour):
        def __init__(self, ns: str) -> None:
            super().__init__(f"ask-{ns}")
            self.ns = ns

        def update(self) -> Status:
            self.state_manager.update({"messages": [human(f"look up {self.ns}")]}, namespace=self.ns)
            return Status.SUCCESS

    with ScriptedOpenAIServer(responder) as srv:
        client = srv.client()
        branches = []
        for ns in ("alpha", "beta"):
            react = create_react_node(f"Agent-{ns}", namespace=ns, model_client=client, tools=[lookup])
            branches.append(
                py_trees.composites.Sequence(f"branch-{ns}", memory=True, children=[Ask(ns), react])
            )
        root = py_trees.composites.Parallel(
            "Both", policy=py_trees.common.ParallelPolicy.SuccessOnAll(), children=branches
        )
        agent = Agent(root, state_schema=ReActState)
        result = await agent.run()

    assert result.status == "success"
    sm = agent.state_manager
    for ns, other in (("alpha", "beta"), ("beta", "alpha")):
        msgs = sm.get("messages", namespace=ns)
        assert roles(msgs) == ["user", "assistant", "tool", "assistant"]
        assert all(other not in (m.content or "") for m in msgs)
        assert sm.get("final_answer", namespace=ns) == f"{ns} is value-of-{ns}"
        assert sm.get("rounds", namespace=ns) == 2
        assert sm.get("termination", namespace=ns)["reason"] == "completed"
    assert sm.get("messages") == []  # the top level was never written
    # ... and each answer holds its lookup's value: the two tool calls overlapped, truly concurrent


async def test_streaming_events_and_answer() -> None:
    with ScriptedOpenAIServer([call("calculator", expression="3*3"), reply("Nine is the answer.")]) as srv:
        root = create_react_node(
            model_client=srv.client(), tools=[calculator], config=ReActConfig(stream=True)
        )
        agent = Agent(root)
        events = [e async for e in agent.stream({"messages": [human("3*3")]})]
        requests = srv.requests
    types = [e.type for e in events]
    assert requests[0]["stream"] is True
    assert types[0] == "run.started" and types[-1] == "run.completed"
    for expected in (
        "reply.started",
        "model.call.started",
        "model.call.completed",
        "reply.completed",
        "tool.call.started",
        "tool.call.completed",
        "text.delta",
        "loop.iteration",
        "loop.terminated",
    ):
        assert expected in types, expected
    deltas = "".join(e.data["delta"] for e in events if e.type == "text.delta")
    assert deltas == "Nine is the answer."
    assert types.index("tool.call.started") < types.index("tool.call.completed") < types.index("text.delta")
    assert events[-1].data["final_answer"] == "Nine is the answer."
    assert all(e.node for e in events if e.type.startswith(("reply", "tool", "model")))
    assert agent.state_manager.get("streaming_output") == "Nine is the answer."


async def test_conversation_continues_across_runs() -> None:
    with ScriptedOpenAIServer([reply("Hi Ann."), reply("Your name is Ann.")]) as srv:
        agent = Agent(create_react_node(model_client=srv.client(), tools=[calculator]))
        first = await agent.run({"messages": [human("I am Ann")]})
        second = await agent.run({"messages": [human("Who am I?")]})
        sent = srv.requests[1]["messages"]
    assert first.final_answer == "Hi Ann." and second.final_answer == "Your name is Ann."
    assert [m["content"] for m in sent[1:]] == ["I am Ann", "Hi Ann.", "Who am I?"]
    assert second.state.rounds == 1  # run-scoped counters restart
    assert len(first.state.messages) == 2  # the first result is not changed by the second run


async def test_a_cancelled_run_leaves_a_history_the_next_run_can_send() -> None:
    started = asyncio.Event()

    @tool
    async def hang() -> str:
        """Never finishes."""
        started.set()
        await asyncio.sleep(60)
        return "never"

    with ScriptedOpenAIServer([call("hang"), reply("fresh start")]) as srv:
        agent = Agent(create_react_node(model_client=srv.client(), tools=[hang]))
        run = asyncio.create_task(agent.run({"messages": [human("hang please")]}))
        await await_within(started.wait(), "the tool to start")
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        result = await agent.run({"messages": [human("try again")]})
        sent = srv.requests[1]["messages"]
    assert result.status == "success" and result.final_answer == "fresh start"
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
    assert sent[3]["tool_call_id"] == sent[2]["tool_calls"][0]["id"]
    assert "interrupted" in sent[3]["content"]


async def test_a_tools_own_output_limit_and_rows_plus_total_reach_the_model(tmp_path: Path) -> None:
    rows = [{"id": n, "city": f"city {n}"} for n in range(500)]

    @tool(max_output_chars=400)
    def cities() -> str:
        """Every city."""
        return json.dumps(rows)

    @tool
    def log() -> str:
        """The build log."""
        return "compiling\n" + "ok\n" * 5000 + "FAILED: test_x"

    script = [calls(call("cities"), call("log")), reply("done")]
    with ScriptedOpenAIServer(script) as srv:
        root = create_react_node(
            model_client=srv.client(), tools=[cities, log], config=ReActConfig(max_output_chars=1000)
        )
        await Agent(root).run(input_data={"messages": [human("go")]})
        sent = [m["content"] for m in srv.requests[1]["messages"] if m["role"] == "tool"]
    body, note = sent[0].rsplit("\n", 1)
    assert json.loads(body) == rows[: len(json.loads(body))] and len(sent[0]) <= 400
    assert note == f"[showing the first {len(json.loads(body))} of 500 items]"
    assert sent[1].startswith("compiling\n") and sent[1].endswith("FAILED: test_x")  # head and tail
    assert "characters omitted" in sent[1] and len(sent[1]) < 1100

    path = tmp_path / "agent.yaml"
    path.write_text("name: A\ntools: [calculator]\ntool_output_chars: {calculator: 150, search: 200}\n")
    with pytest.raises(AgentFileError, match="tool_output_chars: 'search' is not one of this agent's tools"):
        load_agent(path, model_client=scripted_client([]))
    path.write_text("name: A\ntools: [calculator]\ntool_output_chars: {calculator: 150}\n")
    agent = load_agent(path, model_client=scripted_client([]))
    executor = next(n for n in agent.root.iterate() if isinstance(n, ToolExecutor))
    assert executor.tools.get("calculator").max_output_chars == 150  # type: ignore[union-attr]
