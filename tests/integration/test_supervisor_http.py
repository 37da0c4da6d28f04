"""The supervisor preset over real HTTP (openai client → scripted server): the fan-out follows
the model's plan per run, sub-agents run concurrently in namespaces of their own, the critic
re-runs a rejected answer once, a follow-up round, and usage adds up to what the server returned."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from jianmu_like import (
    Agent,
    ReActConfig,
    SupervisorConfig,
    ToolCall,
    Usage,
    create_supervisor_node,
    human,
    load_agent,
    tool,
)
from jianmu_like.cli._render import tree_view
from jianmu_like.guard import GuardDecision, GuardEnforcer
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, reply

PRESETS = Path(__file__).resolve().parents[2] / "presets"

CITIES = {"Paris": 2, "Rome": 3, "Oslo": 5, "Lima": 7}
"""City → a per-city factor, so every reply's usage is distinct."""


@tool
async def population(city: str) -> str:
    """Population of a city.

    Args:
        city: The city's English name.
    """
    return {"Paris": "2.1 million", "Rome": "2.8 million", "Oslo": "0.7 million", "Lima": "10 million"}[city]


def _tool_names(body: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools") or []}


def _user_texts(body: dict[str, Any]) -> list[str]:
    return [str(m.get("content")) for m in body["messages"] if m["role"] == "user"]


class Model:
    """A responder playing supervisor, sub-agents and critic; it records every reply's usage
    by the namespace it belongs to, and when each request arrived and was answered."""

    def __init__(self, plans: list[list[str]], *, reject: set[str] = frozenset()) -> None:
        self.plans = list(plans)
        self.direct = False
        """Sub-agents answer without calling the population tool (agent files without it)."""
        self.follow_ups: list[str] = []
        """Cities the first gather call asks about in a follow-up round."""
        self.barrier: threading.Barrier | None = None
        """When set: each sub-agent's first request is held until all of them have arrived —
        sub-agents run one after the other would break it (timeout) and the test would fail."""
        self.reject = set(reject)
        self.lock = threading.Lock()
        self.usage: dict[str, Usage] = {}
        self.agent_calls: list[tuple[str, float, float]] = []  # (city, received, answered)
        self.critiqued: list[str] = []
        self.agent_bodies: dict[str, list[dict[str, Any]]] = {}

    def _count(self, namespace: str, usage: Usage) -> Usage:
        with self.lock:
            self.usage[namespace] = self.usage.get(namespace, Usage()) + usage
        return usage

    def __call__(self, body: dict[str, Any]) -> Any:
        names = _tool_names(body)
        if "SupervisorPlan" in names:
            questions = [f"What is the population of {city}?" for city in self.plans.pop(0)]
            usage = self._count("supervisor", Usage(prompt_tokens=30, completion_tokens=11, total_tokens=41))
            return reply(tool_calls=[call("SupervisorPlan", sub_questions=questions)], usage=usage)
        if "SupervisorDecision" in names:
            results = _user_texts(body)[-1]
            found = [f"{c}: {p}" for c, p in population_table().items() if c in results]
            usage = self._count("supervisor", Usage(prompt_tokens=50, completion_tokens=13, total_tokens=63))
            if self.follow_ups:
                asked = [f"What is the population of {city}?" for city in self.follow_ups]
                self.follow_ups = []
                return reply(tool_calls=[call("SupervisorDecision", follow_ups=asked)], usage=usage)
            return reply(tool_calls=[call("SupervisorDecision", answer="; ".join(found))], usage=usage)
        if "Write the final answer to the task." in _user_texts(body)[-1]:
            results = _user_texts(body)[-1]
            found = [f"{c}: {p}" for c, p in population_table().items() if c in results]
            usage = self._count("supervisor", Usage(prompt_tokens=70, completion_tokens=17, total_tokens=87))
            return reply("; ".join(found), usage=usage)
        if "CriticVerdict" in names:
            text = _user_texts(body)[-1]
            city = next(c for c in CITIES if c in text)
            accept = city not in self.reject or "(revised)" in text
            with self.lock:
                self.critiqued.append(city)
            usage = self._count("supervisor", Usage(prompt_tokens=20, completion_tokens=3, total_tokens=23))
            verdict = call("CriticVerdict", accept=accept, critique="" if accept else "cite the source")
            return reply(tool_calls=[verdict], usage=usage)
        question = _user_texts(body)[0]
        city = next(c for c in CITIES if c in question)
        factor = CITIES[city]
        with self.lock:
            self.agent_bodies.setdefault(city, []).append(body)
            namespace = self._namespace_of(city)
        received = time.monotonic()
        first = len(body["messages"]) <= 2
        if first and self.barrier is not None:
            self.barrier.wait(timeout=PATIENCE)
        if body["messages"][-1]["role"] == "tool" or self.direct:
            revised = " (revised)" if any("rejected" in t for t in _user_texts(body)) else ""
            answer = reply(
                f"{city} has {population_table()[city]}{revised}.",
                usage=Usage(prompt_tokens=10 * factor, completion_tokens=factor, total_tokens=11 * factor),
            )
        else:
            answer = reply(
                tool_calls=[call("population", city=city)],
                usage=Usage(prompt_tokens=9 * factor, completion_tokens=2, total_tokens=9 * factor + 2),
            )
        self._count(namespace, answer.usage or Usage())
        with self.lock:
            self.agent_calls.append((city, received, time.monotonic()))
        return answer

    def _namespace_of(self, city: str) -> str:
        raise NotImplementedError  # set per test: which namespace asks about which city


def population_table() -> dict[str, str]:
    return {"Paris": "2.1 million", "Rome": "2.8 million", "Oslo": "0.7 million", "Lima": "10 million"}


def _bind_namespaces(model: Model, plan: list[str]) -> None:
    mapping = {city: f"supervisor.q{i + 1}" for i, city in enumerate(plan)}
    model._namespace_of = mapping.__getitem__  # type: ignore[method-assign]


def _supervisor(client: Any, **settings: Any) -> Any:
    return create_supervisor_node(
        model_client=client,
        tools=[population],
        supervisor=SupervisorConfig(max_agents=4, max_follow_ups=0, **settings),
        worker_config=ReActConfig(max_iterations=4, max_budget_tokens=10_000),
    )


async def test_fan_out_follows_the_plan_and_sub_agents_overlap() -> None:
    plans = [["Paris", "Rome"], ["Paris", "Rome", "Oslo", "Lima"]]
    model = Model([list(p) for p in plans])
    async with ScriptedOpenAIServer(model) as server:
        agent = Agent(_supervisor(server.client()))
        for plan in plans:
            model.usage.clear()
            model.agent_calls.clear()
            model.agent_bodies.clear()
            _bind_namespaces(model, plan)
            model.barrier = threading.Barrier(len(plan))
            result = await agent.run({"messages": [human("How many people live in these cities?")]})
            assert result.status == "success", result.error
            subs = sorted(ns for ns in result.agents if ns.startswith("supervisor."))
            assert subs == [f"supervisor.q{i + 1}" for i in range(len(plan))]  # no stale ones
            # Every sub-agent answered its own city, from its own namespace's messages only.
            for i, city in enumerate(plan):
                outcome = result.agents[f"supervisor.q{i + 1}"]
                assert outcome.status == "success"
                assert outcome.final_answer == f"{city} has {population_table()[city]}."
                assert outcome.termination is not None and outcome.termination["reason"] == "completed"
                for body in model.agent_bodies[city]:
                    text = str(body["messages"])
                    assert all(other not in text for other in plan if other != city)
                messages = result.state.model_extra[f"supervisor.q{i + 1}.messages"]
                assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
            for city in plan:
                assert city in (result.final_answer or "")
            # The sub-agents' first model calls overlap: all arrived before any was answered.
            firsts = {}
            for city, received, answered in model.agent_calls:
                firsts.setdefault(city, (received, answered))
            assert len(firsts) == len(plan)
            assert max(r for r, _ in firsts.values()) < min(a for _, a in firsts.values())
            # Usage: per namespace and in total, the sums of what the server returned.
            for namespace, usage in model.usage.items():
                got = result.agents[namespace].usage
                assert (got.prompt_tokens, got.completion_tokens, got.total_tokens) == (
                    usage.prompt_tokens,
                    usage.completion_tokens,
                    usage.total_tokens,
                ), namespace
            total = sum(model.usage.values(), Usage())
            assert result.usage.total_tokens == total.total_tokens
            assert result.usage.prompt_tokens == total.prompt_tokens
            assert result.usage.calls == 2 + 2 * len(plan)


async def test_critic_reruns_a_rejected_sub_agent_once() -> None:
    model = Model([["Paris", "Rome"]], reject={"Rome"})
    _bind_namespaces(model, ["Paris", "Rome"])
    async with ScriptedOpenAIServer(model) as server:
        agent = Agent(_supervisor(server.client(), critic=True, max_critic_retries=1))
        result = await agent.run({"messages": [human("Paris and Rome?")]})
    assert result.status == "success", result.error
    assert sorted(model.critiqued) == ["Paris", "Rome", "Rome"]
    rome = result.agents["supervisor.q2"]
    assert rome.final_answer == "Rome has 2.8 million (revised)."
    reviews = result.state.model_extra["supervisor.q2.critic_reviews"]
    assert [r["accept"] for r in reviews] == [False, True]
    # The critique reached the re-run as a user message in Rome's namespace only.
    rome_users = [m.content for m in result.state.model_extra["supervisor.q2.messages"] if m.role == "user"]
    assert any("cite the source" in (c or "") for c in rome_users)
    paris_users = [m.content for m in result.state.model_extra["supervisor.q1.messages"] if m.role == "user"]
    assert paris_users == ["What is the population of Paris?"]
    assert len(model.agent_bodies["Rome"]) == 4 and len(model.agent_bodies["Paris"]) == 2
    total = sum(model.usage.values(), Usage())
    assert result.usage.total_tokens == total.total_tokens
    for namespace, usage in model.usage.items():
        assert result.agents[namespace].usage.total_tokens == usage.total_tokens, namespace


def _rome_needs_approval(call: ToolCall, _tool: Any, _ctx: Any) -> GuardDecision | None:
    if call.arguments.get("city") == "Rome":
        return GuardDecision.pending("Rome needs a human")
    return None


def _guarded(client: Any) -> Any:
    return create_supervisor_node(
        model_client=client,
        tools=[population],
        supervisor=SupervisorConfig(max_follow_ups=0),
        constraints=GuardEnforcer([_rome_needs_approval]),
    )


async def test_approval_inside_a_sub_agent_suspends_and_resumes_from_a_checkpoint(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    model = Model([["Paris", "Rome"]])
    _bind_namespaces(model, ["Paris", "Rome"])
    async with ScriptedOpenAIServer(model) as server:
        first = Agent(_guarded(server.client()), checkpointer=db)
        suspended = await first.run({"messages": [human("Paris and Rome?")]}, thread_id="t1")
        assert suspended.status == "suspended"
        assert suspended.agents["supervisor.q1"].status == "success"  # the other sub-agent finished
        assert suspended.agents["supervisor.q2"].status == "suspended"
        [approval] = suspended.pending_approvals
        await first.aclose()
        # A new agent (a fresh tree, as in another process) rebuilds the sub-agents and goes on.
        second = Agent(_guarded(server.client()), checkpointer=db)
        result = await second.resume({approval.id: True}, thread_id="t1")
        await second.aclose()
    assert result.status == "success", result.error
    assert result.agents["supervisor.q2"].final_answer == "Rome has 2.8 million."
    assert "Paris: 2.1 million" in (result.final_answer or "")
    assert len(model.agent_bodies["Paris"]) == 2  # nothing of the finished sub-agent ran again
    assert len(model.agent_bodies["Rome"]) == 2
    assert result.usage.total_tokens == sum(model.usage.values(), Usage()).total_tokens


async def test_one_follow_up_round_runs_new_sub_agents_then_answers() -> None:
    model = Model([["Paris", "Rome"]])
    model.follow_ups = ["Oslo"]
    model._namespace_of = {  # type: ignore[method-assign]
        "Paris": "supervisor.q1",
        "Rome": "supervisor.q2",
        "Oslo": "supervisor.f1",
    }.__getitem__
    async with ScriptedOpenAIServer(model) as server:
        root = create_supervisor_node(
            model_client=server.client(), tools=[population], supervisor=SupervisorConfig(max_follow_ups=1)
        )
        result = await Agent(root).run({"messages": [human("Paris and Rome?")]})
    assert result.status == "success", result.error
    assert result.final_answer == "Paris: 2.1 million; Rome: 2.8 million; Oslo: 0.7 million"
    assert result.agents["supervisor.f1"].final_answer == "Oslo has 0.7 million."
    assert result.termination == {"reason": "completed", "sub_agents": 2, "follow_ups": 1}
    for namespace, usage in model.usage.items():
        assert result.agents[namespace].usage.total_tokens == usage.total_tokens, namespace
    assert result.usage.total_tokens == sum(model.usage.values(), Usage()).total_tokens


def _text(renderable: Any) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


async def test_yaml_preset_runs_and_its_live_tree_shows_the_sub_agents_of_the_run() -> None:
    model = Model([["Paris", "Rome", "Oslo"]])
    model.direct = True
    _bind_namespaces(model, ["Paris", "Rome", "Oslo"])
    async with ScriptedOpenAIServer(model) as server:
        agent = load_agent(PRESETS / "supervisor.yaml", model_client=server.client())
        before = _text(tree_view(agent.root))
        assert "built per run: ≤4 ReAct sub-agents (tools=[calculator, think]) + critic" in before
        assert "Supervisor.q1" not in before
        result = await agent.run({"task": "Three cities?", "messages": [human("Three cities?")]})
    assert result.status == "success", result.error
    assert sorted(model.critiqued) == ["Oslo", "Paris", "Rome"]  # the preset turns the critic on
    assert [ns for ns in result.agents if ns.startswith("supervisor.")] == [
        "supervisor.q1",
        "supervisor.q2",
        "supervisor.q3",
    ]
    after = _text(tree_view(agent.root, statuses=True))
    for label in ("q1", "q2", "q3"):
        assert f"✓ Supervisor.{label}" in after
        assert f"Supervisor.{label}.Critic" in after


async def test_supervisor_as_a_tree_node(tmp_path: Path) -> None:
    file = tmp_path / "team.yaml"
    file.write_text(
        """kind: tree
name: Team
output: team
tree:
  sequence:
    name: Main
    children:
      - supervisor:
          name: Lead
          namespace: team
          input: "{task}"
          supervisor: {max_agents: 2, max_follow_ups: 0}
"""
    )
    model = Model([["Paris", "Rome", "Oslo"]])  # a plan of three, capped at two
    model.direct = True
    model._namespace_of = {"Paris": "team.q1", "Rome": "team.q2"}.__getitem__  # type: ignore[method-assign]
    async with ScriptedOpenAIServer(model) as server:
        agent = load_agent(file, model_client=server.client())
        result = await agent.run({"task": "Paris and Rome?", "messages": [human("Paris and Rome?")]})
    assert result.status == "success", result.error
    assert result.output_namespace == "team"
    assert result.final_answer == "Paris: 2.1 million; Rome: 2.8 million"
    assert sorted(ns for ns in result.agents if ns.startswith("team.")) == ["team.q1", "team.q2"]
    for namespace, usage in model.usage.items():
        target = "team" if namespace == "supervisor" else namespace
        assert result.agents[target].usage.total_tokens == usage.total_tokens, namespace


async def test_each_sub_agent_has_its_own_budget_and_a_spent_one_does_not_fail_the_supervisor() -> None:
    model = Model([["Paris", "Lima"]])
    _bind_namespaces(model, ["Paris", "Lima"])
    gathered: list[str] = []
    original = model.__call__

    def spy(body: dict[str, Any]) -> Any:
        if "SupervisorDecision" in _tool_names(body):
            gathered.append(_user_texts(body)[-1])
        return original(body)

    async with ScriptedOpenAIServer(spy) as server:
        root = create_supervisor_node(
            model_client=server.client(),
            tools=[population],
            supervisor=SupervisorConfig(max_follow_ups=0),
            worker_config=ReActConfig(max_iterations=4, max_budget_tokens=30),  # Lima's first call: 65
        )
        result = await Agent(root).run({"messages": [human("Paris and Lima?")]})
    assert result.status == "success", result.error
    paris, lima = result.agents["supervisor.q1"], result.agents["supervisor.q2"]
    assert paris.status == "success" and paris.usage.total_tokens == 20 + 22
    assert lima.status == "failure" and lima.termination is not None
    assert lima.termination["reason"] == "budget_exhausted" and lima.usage.total_tokens == 65
    [prompt] = gathered
    assert (
        "[supervisor.q2] question: What is the population of Lima?\nanswer: (no answer: budget_exhausted)"
        in prompt
    )
    assert result.usage.total_tokens == sum(model.usage.values(), Usage()).total_tokens


async def test_a_supervisor_model_answering_in_prose_still_plans_and_answers() -> None:
    """A model that ignores the forced schema tool: the plan's list items are the sub-questions
    and the gather reply is the answer, instead of a failed run (`model_error`)."""
    sizes = {"Alphaville": "120,000", "Betatown": "450,000"}
    seen: list[str] = []

    def model(body: dict[str, Any]) -> Any:
        names = _tool_names(body)
        if "SupervisorPlan" in names:
            return reply("1. How many people live in Alphaville?\n2. How many people live in Betatown?")
        if "SupervisorDecision" in names:
            seen.append(_user_texts(body)[-1])
            return reply("Betatown is bigger.")
        city = next(c for c in sizes if c in _user_texts(body)[0])
        return reply(f"{city} has {sizes[city]} people.")

    async with ScriptedOpenAIServer(model) as server:
        agent = Agent(_supervisor(server.client()))
        result = await agent.run({"messages": [human("Which is bigger, Alphaville or Betatown?")]})
    assert result.status == "success", result.error
    assert result.final_answer == "Betatown is bigger."
    assert result.agents["supervisor.q2"].final_answer == "Betatown has 450,000 people."
    assert "Alphaville has 120,000 people." in seen[0]
    assert len(server.requests) == 4  # plan, two sub-agents, gather: no re-asks


async def test_the_context_pruner_drops_raw_sub_agent_notes_and_keeps_their_answers() -> None:
    plan = ["Paris", "Rome"]
    model = Model([list(plan)])
    _bind_namespaces(model, plan)
    async with ScriptedOpenAIServer(model) as server:
        root = _supervisor(server.client(), prune_notes_above=60)
        agent = Agent(root)
        events: list[Any] = []
        agent.telemetry.subscribe(events.append)
        result = await agent.run({"messages": [human("How many people live in Paris and Rome?")]})
    assert result.status == "success", result.error
    for i, city in enumerate(plan):
        notes = result.state.model_extra[f"supervisor.q{i + 1}.messages"]
        assert [m.role for m in notes] == ["user", "assistant"]  # the tool call and result went
        assert notes[1].content == f"{city} has {population_table()[city]}."
        assert result.agents[f"supervisor.q{i + 1}"].final_answer == notes[1].content
    [pruned] = [e.data for e in events if e.type == "supervisor.pruned"]
    assert sorted(pruned["notes"]) == ["supervisor.q1", "supervisor.q2"]
    for city in plan:
        assert city in (result.final_answer or "")
    again = Model([list(plan)])
    _bind_namespaces(again, plan)
    async with ScriptedOpenAIServer(again) as server:
        kept = await Agent(_supervisor(server.client(), prune_notes_above=100_000)).run(
            {"messages": [human("How many people live in Paris and Rome?")]}
        )
    assert len(kept.state.model_extra["supervisor.q1.messages"]) == 4  # under the size: untouched
