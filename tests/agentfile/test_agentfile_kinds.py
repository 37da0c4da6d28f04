"""Every agent kind (`agentfile.kinds`) works the same way in every place that reads kinds: as a
whole file, as a tree node and behind a `preset:` reference (the reference used to refuse a
supervisor file as "not an agent file")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jianmu_like import human
from jianmu_like.agentfile._kinds import AGENT_KINDS
from jianmu_like.agentfile._loader import AgentFileError, load_agent, validate_agent_file
from jianmu_like.testing import ScriptedOpenAIServer, call, reply

BODIES = {
    "react": "tools: [calculator]\n",
    "supervisor": "tools: [calculator]\nsupervisor: {max_agents: 2}\n",
    "plan_execute": "tools: [calculator]\nplan: {max_steps: 2}\n",
    "research": "tools: [calculator]\nresearch: {max_tool_calls: 2}\n",
}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_every_kind_has_a_sample() -> None:
    assert set(BODIES) == set(AGENT_KINDS)


@pytest.mark.parametrize("kind", sorted(AGENT_KINDS))
def test_every_kind_may_be_referenced_as_a_preset(tmp_path: Path, kind: str) -> None:
    write(tmp_path / f"{kind}.yaml", f"kind: {kind}\nname: Part\n{BODIES[kind]}")
    tree = write(
        tmp_path / "tree.yaml",
        "kind: tree\noutput: part\ntree:\n"
        f"  preset: {{path: {kind}.yaml, namespace: part, input: '{{task}}'}}\n",
    )
    assert validate_agent_file(tree).kind == "tree"


def test_a_referenced_supervisor_writes_its_default_namespace(tmp_path: Path) -> None:
    """A supervisor file without `namespace:` answers in `supervisor` (its kind's default), so
    `output: supervisor` is right and any other namespace is reported with a suggestion."""
    write(tmp_path / "sup.yaml", "kind: supervisor\nname: S\ntools: [calculator]\n")
    good = write(
        tmp_path / "good.yaml", "kind: tree\noutput: supervisor\ntree:\n  preset: {path: sup.yaml}\n"
    )
    assert validate_agent_file(good).output == "supervisor"
    bad = write(tmp_path / "bad.yaml", "kind: tree\noutput: superviser\ntree:\n  preset: {path: sup.yaml}\n")
    with pytest.raises(AgentFileError) as info:
        validate_agent_file(bad)
    assert "did you mean 'supervisor'?" in "\n".join(info.value.problems)


def _supervised(body: dict[str, Any]) -> Any:
    tools = {t["function"]["name"] for t in body.get("tools") or []}
    users = [str(m.get("content")) for m in body["messages"] if m["role"] == "user"]
    if "SupervisorPlan" in tools:
        return call("SupervisorPlan", sub_questions=["What is 12 * 7?", "What is 9 * 9?"])
    if "SupervisorDecision" in tools:
        return call("SupervisorDecision", answer="84 and 81.")
    if body["messages"][-1]["role"] == "tool":
        return reply(f"It is {body['messages'][-1]['content']}.")
    return call("calculator", expression="12 * 7" if "12 * 7" in users[0] else "9 * 9")


async def test_a_tree_runs_a_referenced_supervisor_file(tmp_path: Path) -> None:
    write(tmp_path / "parts" / "supervisor.yaml", "kind: supervisor\nname: Sup\ntools: [calculator]\n")
    tree = write(
        tmp_path / "tree.yaml",
        "kind: tree\noutput: team\ntree:\n  sequence:\n    children:\n"
        "      - preset: {path: parts/supervisor.yaml, namespace: team, input: 'Answer: {task}'}\n",
    )
    with ScriptedOpenAIServer(_supervised) as srv:
        agent = load_agent(tree, model_client=srv.client())
        result = await agent.run({"task": "12 * 7 and 9 * 9?", "messages": [human("12 * 7 and 9 * 9?")]})
        plan_request = next(b for b in srv.requests if "SupervisorPlan" in str(b.get("tools")))
    assert result.status == "success" and result.final_answer == "84 and 81."
    assert "Answer: 12 * 7 and 9 * 9?" in str(plan_request["messages"])


def test_sections_of_another_kind_are_errors_at_their_line(tmp_path: Path) -> None:
    path = write(
        tmp_path / "a.yaml", "kind: react\nname: A\ntools: [calculator]\nsupervisor: {critic: true}\n"
    )
    with pytest.raises(AgentFileError) as info:
        validate_agent_file(path)
    assert info.value.problems == [f"{path}:4: supervisor: `supervisor:` is only for kind: supervisor"]


def test_the_cli_validates_a_tree_referencing_the_shipped_supervisor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from jianmu_like.agentfile._shipped import SHIPPED_DIR
    from jianmu_like.cli._main import main

    tree = write(
        tmp_path / "team.yaml",
        "kind: tree\noutput: supervisor\ntree:\n"
        f"  preset: {{path: '{SHIPPED_DIR / 'supervisor.yaml'}', input: '{{task}}'}}\n",
    )
    assert main(["validate", str(tree)]) == 0, capsys.readouterr().err
    assert f"{tree}: ok" in capsys.readouterr().out
