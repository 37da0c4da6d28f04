"""Document 004's supervisor delegates to researchers (004-37): with `worker="research"` each
sub-agent has its own tool-call cap, the `think` tool and a compress step, and the supervisor
gathers the cited summaries — over real HTTP against the scripted server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jianmu_like import (
    Agent,
    AgentFileError,
    ReActConfig,
    SupervisorConfig,
    create_supervisor_node,
    human,
    tool,
    validate_agent_file,
)
from jianmu_like.testing import ScriptedOpenAIServer, call, reply

POPULATION = {"Paris": "2.1 million", "Rome": "2.8 million"}
SEARCHED: list[str] = []


@tool
def census(city: str) -> str:
    """Census figure of a city.

    Args:
        city: The city's English name.
    """
    SEARCHED.append(city)
    return f"{city}: {POPULATION[city]} (census.example/{city})"


def respond(body: dict[str, Any]) -> Any:
    names = {t["function"]["name"] for t in body.get("tools") or []}
    users = [str(m.get("content")) for m in body["messages"] if m["role"] == "user"]
    if "SupervisorPlan" in names:
        return reply(
            tool_calls=[call("SupervisorPlan", sub_questions=[f"Population of {c}?" for c in POPULATION])]
        )
    if "SupervisorDecision" in names:
        return reply(tool_calls=[call("SupervisorDecision", answer=users[-1].split("\n\n", 1)[1][:400])])
    city = next(c for c in POPULATION if c in users[0])
    if "ResearchSummary" in names:
        summary = call(
            "ResearchSummary",
            summary=f"{city} has {POPULATION[city]} [1].",
            sources=[f"census.example/{city}"],
        )
        return reply(tool_calls=[summary])
    return reply(tool_calls=[call("census", city=city)])  # it keeps searching: the cap stops it


async def test_sub_agents_are_researchers_with_a_cap_and_a_cited_summary() -> None:
    SEARCHED.clear()
    async with ScriptedOpenAIServer(respond) as srv:
        root = create_supervisor_node(
            model_client=srv.client(),
            tools=[census],
            supervisor=SupervisorConfig(max_follow_ups=0, worker="research", worker_max_tool_calls=1),
            worker_config=ReActConfig(max_iterations=4),
        )
        result = await Agent(root).run({"messages": [human("Populations of Paris and Rome?")]})
        gather = next(r for r in srv.requests if "SupervisorDecision" in str(r.get("tools")))
        worker_prompts = [
            r["messages"][0]["content"] for r in srv.requests if "census" in str(r.get("tools"))
        ]
    assert sorted(SEARCHED) == ["Paris", "Rome"]  # one call each: the cap refused the second
    for city in POPULATION:
        answer = result.agents[f"supervisor.q{list(POPULATION).index(city) + 1}"].final_answer
        assert answer == f"{city} has {POPULATION[city]} [1].\n\nSources:\n[1] census.example/{city}"
    gathered = str(gather["messages"][-1]["content"])
    assert "Sources:\n[1] census.example/Paris" in gathered and "[1] census.example/Rome" in gathered
    assert all("at most 1 tool calls" in p for p in worker_prompts)
    assert result.status == "success"


def test_the_agent_file_takes_the_worker_kind(tmp_path: Path) -> None:
    path = tmp_path / "team.yaml"
    path.write_text("kind: supervisor\nsupervisor:\n  worker: research\n  worker_max_tool_calls: 2\n")
    assert validate_agent_file(path).supervisor.worker == "research"  # type: ignore[union-attr]
    path.write_text("kind: supervisor\nsupervisor:\n  worker: researcher\n")
    with pytest.raises(AgentFileError, match=r"team.yaml:3: supervisor.worker: .*'react' or 'research'"):
        validate_agent_file(path)
