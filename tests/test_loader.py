"""YAML agent files: the shipped presets run end to end; every error points at its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from jianmu_like import human
from jianmu_like.agentfile._loader import AgentFileError, load_agent, validate_agent_file
from jianmu_like.testing import Responder, ScriptedOpenAIServer, call, reply

PRESETS = Path(__file__).resolve().parent.parent / "presets"


def agent_file(tmp_path: Path, text: str, name: str = "agent.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def problems_of(path: Path) -> list[str]:
    with pytest.raises(AgentFileError) as info:
        validate_agent_file(path)
    return info.value.problems


def test_shipped_presets_validate() -> None:
    for preset in sorted(PRESETS.glob("*.yaml")):
        validate_agent_file(preset)


async def test_react_preset_runs() -> None:
    with ScriptedOpenAIServer([call("calculator", expression="25 * 4 + 10"), reply("It is 110.")]) as srv:
        agent = load_agent(PRESETS / "react.yaml", model_client=srv.client())
        result = await agent.run({"messages": [human("What is 25 * 4 + 10?")]})
        first = srv.requests[0]
    assert result.status == "success" and result.final_answer == "It is 110."
    assert [t["function"]["name"] for t in first["tools"]] == ["calculator", "think"]
    assert first["messages"][0]["content"].startswith("You are a careful assistant.")
    assert first["temperature"] == 0.0


async def test_research_tree_preset_passes_data_between_agents(research_responder: Responder) -> None:
    with ScriptedOpenAIServer(research_responder) as srv:
        agent = load_agent(PRESETS / "research.yaml", model_client=srv.client())
        result = await agent.run({"task": "How many seconds in a leap year?"})
    assert result.status == "success" and result.final_answer == "31622400 seconds."
    sm = agent.state_manager
    writer_input = sm.get("messages", "write")[0].content
    assert "Question: How many seconds in a leap year?" in writer_input
    assert "Step 1: found 366" in writer_input and "Step 2: found 31622400" in writer_input
    assert sm.get("final_answer", "plan") == "1. days in a leap year 2. seconds in those days"
    assert sm.get("messages") == []  # each agent kept to its namespace


def test_errors_point_at_lines(tmp_path: Path) -> None:
    path = agent_file(
        tmp_path,
        "kind: react\n"
        "name: X\n"
        "tools: [calculator, no_such_tool, 'json:nothing_here']\n"
        "limits:\n"
        "  max_iteration: 3\n"
        "llm:\n"
        "  temperature: hot\n",
    )
    problems = problems_of(path)
    assert f"{path}:5: limits.max_iteration: unknown key (did you mean 'max_iterations'?)" in problems
    assert any(p.startswith(f"{path}:7: llm.temperature:") for p in problems)
    # Tool references are checked only once the schema is valid: fix it and look again.
    path.write_text("kind: react\ntools:\n  - calculator\n  - no_such_tool\n  - 'json:nothing_here'\n")
    problems = problems_of(path)
    assert problems[0].startswith(f"{path}:4: tools[1]: unknown tool 'no_such_tool' (built-in: ")
    assert problems[1].startswith(f"{path}:5: tools[2]: module 'json' (")
    assert "--allow-module json" in problems[1] and "agents.allowed_modules" in problems[1]
    with pytest.raises(AgentFileError) as info:
        validate_agent_file(path, allow_modules=["json"])
    assert info.value.problems[1] == f"{path}:5: tools[2]: module 'json' has no attribute 'nothing_here'"


def test_tree_errors(tmp_path: Path) -> None:
    path = agent_file(
        tmp_path,
        "kind: tree\n"
        "tree:\n"
        "  sequence:\n"
        "    children:\n"
        "      - react: {tools: [calculator]}\n"
        "        message: {content: hi}\n"
        "      - preset: {path: missing.yaml}\n",
    )
    problems = problems_of(path)
    assert any(":5: tree.sequence.children[0]: " in p and "exactly one of" in p for p in problems)
    path.write_text("kind: tree\ntree:\n  sequence:\n    children:\n      - preset: {path: missing.yaml}\n")
    [problem] = problems_of(path)
    assert problem.startswith(f"{path}:5: preset: no such file ") and problem.endswith("missing.yaml")


def test_guard_and_malformed_yaml_and_not_a_mapping(tmp_path: Path) -> None:
    path = agent_file(tmp_path, "kind: react\ntools: [calculator]\nguard:\n  alow: ['*']\n")
    [problem] = problems_of(path)
    assert problem == f"{path}:4: guard.alow: unknown key (did you mean 'allow'?)"  # at the key itself
    path.write_text("kind: react\ntools: [calculator\n")
    [problem] = problems_of(path)
    assert problem.startswith(f"{path}:") and "malformed YAML" in problem
    path.write_text("- just\n- a list\n")
    assert problems_of(path) == [f"{path}:1: an agent file must be a mapping (kind, name, tools, ...)"]
    assert problems_of(tmp_path / "nope.yaml") == [f"{tmp_path / 'nope.yaml'}: no such file"]


async def test_user_tool_by_module_reference_and_guard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "mytools.py").write_text(
        "def shout(text: str) -> str:\n    '''Upper-case text.'''\n    return text.upper()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    path = agent_file(tmp_path, "kind: react\ntools: ['mytools:shout']\nguard:\n  deny: ['shout']\n")
    with ScriptedOpenAIServer([call("shout", text="hi"), reply("denied, sorry")]) as srv:
        agent = load_agent(path, model_client=srv.client())
        result = await agent.run({"messages": [human("shout hi")]})
        observation = srv.requests[1]["messages"][-1]["content"]
    assert result.final_answer == "denied, sorry"
    assert observation.startswith("Error: denied by policy: tool 'shout' is in the deny-list")


async def test_model_section_points_at_the_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with ScriptedOpenAIServer(["hello from the file's server"]) as srv:
        monkeypatch.setenv("MY_KEY", "sk-test-secret-value-123")
        path = agent_file(
            tmp_path,
            "kind: react\nmodel:\n  name: tiny-model\n"
            f"  base_url: '{srv.base_url}'\n  api_key_env: MY_KEY\n  fallback: [backup]\n",
        )
        agent = load_agent(path)
        result = await agent.run({"messages": [human("hi")]})
        sent = srv.requests[0]
    assert result.final_answer == "hello from the file's server"
    assert sent["model"] == "tiny-model"


def test_message_templates() -> None:
    from jianmu_like import ReActState
    from jianmu_like.nodes._message import MessageNode, render
    from jianmu_like.state import StateManager

    sm = StateManager(ReActState)
    sm.update({"task": "find x"})
    sm.update({"final_answer": "x = 3"}, namespace="plan")
    assert (
        render("{task} / {plan.final_answer} / {missing.final_answer} / {nothing}", sm)
        == "find x / x = 3 /  / "
    )
    with pytest.raises(ValueError, match="malformed"):
        MessageNode("bad", "{unclosed")
