"""Document 004's supervisor routes after every step (004-34): with `max_rounds` > 1 it decides
after each follow-up round whether to answer or ask again, each round's sub-agents in fresh
namespaces, and the last round ends with the answer — over real HTTP against the scripted server."""

from __future__ import annotations

from typing import Any

import pytest

from jianmu_like import Agent, SupervisorConfig, create_supervisor_node, human
from jianmu_like.testing import ScriptedOpenAIServer, call, error_reply, reply

POPULATION = {"Paris": "2.1 million", "Rome": "2.8 million", "Oslo": "0.7 million"}


class Model:
    """Plans Paris; then asks about the first city whose result it has not seen, one per round."""

    def __init__(self, *, fail_route: bool = False) -> None:
        self.decisions = 0
        self.fail_route = fail_route

    def __call__(self, body: dict[str, Any]) -> Any:
        names = {t["function"]["name"] for t in body.get("tools") or []}
        users = [str(m.get("content")) for m in body["messages"] if m["role"] == "user"]
        if "SupervisorPlan" in names:
            return reply(tool_calls=[call("SupervisorPlan", sub_questions=["Population of Paris?"])])
        seen = [c for c in POPULATION if f"{c} has" in users[-1]]
        supervisor = str(body["messages"][0]["content"]).startswith("You are a supervisor")
        if self.fail_route and supervisor and self.decisions >= 1:
            return error_reply(400, "bad request")  # every level of the routing call fails
        if "SupervisorDecision" in names:
            self.decisions += 1
            missing = [c for c in POPULATION if c not in seen]
            if missing:
                return reply(
                    tool_calls=[call("SupervisorDecision", follow_ups=[f"Population of {missing[0]}?"])]
                )
            return reply(tool_calls=[call("SupervisorDecision", answer="all: " + ", ".join(seen))])
        if users[-1].endswith("Write the final answer to the task."):
            return reply("final: " + ", ".join(seen))
        city = next(c for c in POPULATION if c in users[0])
        return reply(f"{city} has {POPULATION[city]}.")


@pytest.mark.parametrize(
    ("rounds", "answer", "decisions"), [(3, "all: Paris, Rome, Oslo", 3), (2, "final: Paris, Rome, Oslo", 2)]
)
async def test_the_supervisor_decides_after_every_round(rounds: int, answer: str, decisions: int) -> None:
    model = Model()
    async with ScriptedOpenAIServer(model) as srv:
        root = create_supervisor_node(
            model_client=srv.client(), supervisor=SupervisorConfig(max_follow_ups=1, max_rounds=rounds)
        )
        agent = Agent(root)
        for _ in range(2):  # a second run starts its rounds afresh
            model.decisions = 0
            result = await agent.run({"messages": [human("Paris, Rome and Oslo?")]})
            assert result.status == "success", result.error
            assert result.final_answer == answer
            assert model.decisions == decisions
            assert result.agents["supervisor.f1"].final_answer == "Rome has 2.8 million."
            assert result.agents["supervisor.f2"].final_answer == "Oslo has 0.7 million."
            assert result.termination == {"reason": "completed", "sub_agents": 1, "follow_ups": 2}


async def test_a_failed_routing_call_ends_the_rounds() -> None:
    model = Model(fail_route=True)
    async with ScriptedOpenAIServer(model) as srv:
        root = create_supervisor_node(
            model_client=srv.client(), supervisor=SupervisorConfig(max_follow_ups=1, max_rounds=3)
        )
        result = await Agent(root).run({"messages": [human("Paris, Rome and Oslo?")]})
        firsts = [next(m["content"] for m in r["messages"] if m["role"] == "user") for r in srv.requests]
    assert result.status == "failure" and "bad request" in (result.error or "")
    assert firsts.count("Population of Rome?") == 1  # the round's sub-agent is not run again
