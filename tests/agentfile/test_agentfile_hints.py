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
