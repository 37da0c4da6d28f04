"""Agent files of kind plan_execute and research: their sections are checked with the file, and
a key the preset does not take is an error with its line, not silently ignored."""

from __future__ import annotations

from pathlib import Path

import pytest

from jianmu_like.agentfile._loader import AgentFileError, validate_agent_file


def problems(tmp_path: Path, text: str) -> str:
    path = tmp_path / "agent.yaml"
    path.write_text(text)
    with pytest.raises(AgentFileError) as info:
        validate_agent_file(path)
    return "\n".join(info.value.problems)


def test_sections_belong_to_their_kind(tmp_path: Path) -> None:
    found = problems(tmp_path, "kind: react\nname: A\nplan: {max_steps: 2}\n")
    assert "`plan:` is only for kind: plan_execute" in found
    found = problems(tmp_path, "kind: plan_execute\nname: A\nresearch: {max_tool_calls: 2}\n")
    assert "`research:` is only for kind: research" in found


def test_bad_options_name_the_line(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        "kind: tree\noutput: pe\ntree:\n  sequence:\n    children:\n"
        "      - plan_execute:\n          namespace: pe\n          plan: {max_step: 3}\n"
        "      - research:\n          namespace: r\n          research: {max_tool_calls: -1}\n",
    )
    assert "agent.yaml:8: tree.sequence.children[0].plan_execute.plan.max_step" in found
    assert "agent.yaml:11: tree.sequence.children[1].research.research.max_tool_calls" in found


def test_keys_the_presets_do_not_take_are_errors(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        "kind: tree\noutput: pe\ntree:\n  sequence:\n    children:\n"
        "      - plan_execute:\n          namespace: pe\n          output_schema: {type: object}\n",
    )
    assert "agent.yaml:8: output_schema: not supported by plan_execute agents" in found
    found = problems(tmp_path, "kind: research\nname: R\noutput_schema: {type: object}\n")
    assert "agent.yaml:3: output_schema: not supported by research agents" in found


def test_valid_files_of_both_kinds(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text("kind: plan_execute\nname: P\ntools: [calculator]\nplan: {models: {fast: m1}}\n")
    assert validate_agent_file(path).plan is not None
    path.write_text("kind: research\nname: R\ntools: [calculator]\nresearch: {max_tool_calls: 2}\n")
    assert validate_agent_file(path).kind == "research"
