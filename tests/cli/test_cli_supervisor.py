"""`jianmu-like show` and `run` on the supervisor preset (a subprocess against the scripted server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jianmu_like.testing import ScriptedOpenAIServer, call, reply
from tests.cli.running import PRESETS, jianmu


def _model(body: dict[str, Any]) -> Any:
    tools = {t["function"]["name"] for t in body.get("tools") or []}
    users = [str(m.get("content")) for m in body["messages"] if m["role"] == "user"]
    if "SupervisorPlan" in tools:
        return call("SupervisorPlan", sub_questions=["What is 12 * 7?", "What is 9 * 9?"])
    if "CriticVerdict" in tools:
        return call("CriticVerdict", accept=True)
    if "SupervisorDecision" in tools:
        return call("SupervisorDecision", answer="84 and 81.")
    if body["messages"][-1]["role"] == "tool":
        return reply(f"It is {body['messages'][-1]['content']}.")
    return call("calculator", expression="12 * 7" if "12 * 7" in users[0] else "9 * 9")


def test_show_describes_the_sub_agents_built_per_run(tmp_path: Path) -> None:
    done = jianmu(tmp_path, "show", str(PRESETS / "supervisor.yaml"))
    assert done.returncode == 0, done.stderr
    assert "Supervisor  (supervisor)" in done.stdout
    assert "Supervisor.Agents  DynamicParallel" in done.stdout
    assert "built per run: ≤4 ReAct sub-agents (tools=[calculator, think]) + critic" in done.stdout


def test_run_shows_the_plan_each_sub_agent_and_the_critic(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(_model) as srv:
        done = jianmu(
            tmp_path, "run", str(PRESETS / "supervisor.yaml"), "12 * 7 and 9 * 9?", base_url=srv.base_url
        )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "◆ 2 sub-question(s): What is 12 * 7? | What is 9 * 9?" in out
    assert '[supervisor.q1] → calculator({"expression": "12 * 7"})' in out
    assert "[supervisor.q2] ← 81" in out
    assert "[supervisor.q2] ◆ critic accepted" in out
    assert "84 and 81." in out
    assert "✓ success" in out
