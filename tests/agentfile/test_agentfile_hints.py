"""Errors point at the faulty key, with the likely intended spelling: a misspelt key inside
`guard:` (not the `guard:` line), a misspelt built-in tool and a misspelt attribute of a local
tool module."""

from __future__ import annotations

from pathlib import Path

from tests.agentfile.test_agentfile_limits import problems_of, write


def test_a_misspelt_guard_key_is_named_at_its_own_line(tmp_path: Path) -> None:
    agent = write(
        tmp_path / "g.yaml",
        "kind: react\nname: G\ntools: [calculator]\nguard:\n  deny: [calculator]\n"
        "  require_approval:\n    tools: [calculator]\n    effect_tag: [x]\n",
    )
    assert problems_of(agent) == [
        f"{agent}:8: guard.require_approval.effect_tag: unknown key (did you mean 'effect_tags'?)"
    ]


def test_misspelt_tools_get_a_did_you_mean(tmp_path: Path) -> None:
    write(tmp_path / "hinted_tools.py", 'def lookup(city: str) -> str:\n    """A city."""\n    return city\n')
    agent = write(
        tmp_path / "a.yaml", "kind: react\nname: T\ntools:\n  - calculater\n  - hinted_tools:lookpu\n"
    )
    first, second = problems_of(agent)
    assert first.startswith(f"{agent}:4: tools[0]: unknown tool 'calculater' (did you mean 'calculator'?)")
    assert (
        second
        == f"{agent}:5: tools[1]: module 'hinted_tools' has no attribute 'lookpu' (did you mean 'lookup'?)"
    )


def test_key_typos_and_unknown_tools_are_reported_in_one_pass(tmp_path: Path) -> None:
    agent = write(
        tmp_path / "a.yaml",
        "kind: react\nname: Calc\ntools: [calculater]\nsytem_prompt: You add.\n"
        "limits:\n  max_iteration: 4\nmcp_servers:\n  - {name: files, command: x}\n"
        "guard:\n  deny: [calculator]\n  require_aproval: {tools: [calculator]}\n",
    )
    problems = problems_of(agent)
    assert [p.split(": ", 1)[0] for p in problems] == [f"{agent}:{n}" for n in (3, 4, 6, 11)]
    assert "unknown tool 'calculater' (did you mean 'calculator'?)" in problems[0]
    assert problems[1].endswith("sytem_prompt: unknown key (did you mean 'system_prompt'?)")
    assert problems[2].endswith("limits.max_iteration: unknown key (did you mean 'max_iterations'?)")
    assert "require_aproval" in problems[3]


def test_a_tree_node_s_key_typo_and_its_unknown_tool_come_together(tmp_path: Path) -> None:
    agent = write(
        tmp_path / "t.yaml",
        "kind: tree\nname: T\noutput: a\ntree:\n  react:\n    name: A\n    namespace: a\n"
        "    tools: [thinkk]\n    toolz: [x]\n",
    )
    problems = problems_of(agent)
    assert len(problems) == 2, problems
    assert problems[0].startswith(f"{agent}:8: tools[0]: unknown tool 'thinkk' (did you mean 'think'?)")
    assert problems[1] == f"{agent}:9: tree.react.toolz: unknown key (did you mean 'tools'?)"


def test_a_file_too_broken_to_check_references_reports_its_schema_errors_only(tmp_path: Path) -> None:
    agent = write(tmp_path / "b.yaml", "kind: react\ntools: [calculater, 3]\nsytem_prompt: x\n")
    problems = problems_of(agent)
    assert not any("calculater" in p for p in problems)  # a list item is bad: no second guess
    assert any("sytem_prompt" in p for p in problems)
