"""An agent file is data: YAML read within limits, tools only from allowed modules, presets
only from allowed directories, and nothing of a refused file echoed back."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from jianmu_like import human
from jianmu_like._base.sources import SourceError, YamlLimits, load_yaml
from jianmu_like.agentfile._loader import AgentFileError, load_agent, validate_agent_file
from jianmu_like.testing import ScriptedOpenAIServer, call, reply

BILLION_LAUGHS = (Path(__file__).parent / "billion_laughs.yaml").read_text()
"""342 bytes that expand to 387 million strings (9**9)."""


def problems_of(path: Path, **kwargs: list[str]) -> list[str]:
    with pytest.raises(AgentFileError) as info:
        validate_agent_file(path, **kwargs)
    return info.value.problems


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# ---------------------------------------------------------------------------- YAML limits
def test_billion_laughs_is_refused_while_composing(tmp_path: Path) -> None:
    assert len(BILLION_LAUGHS) < 400
    path = write(tmp_path / "bomb.yaml", BILLION_LAUGHS)
    [problem] = problems_of(path)
    assert problem.startswith(f"{path}:") and "YAML refused: the document expands to more than" in problem


def test_recursive_alias_depth_size_and_alias_count(tmp_path: Path) -> None:
    path = write(tmp_path / "rec.yaml", "kind: react\ntools: &x\n  - *x\n")
    assert problems_of(path) == [
        f"{path}:3: YAML refused: recursive alias *x (it is inside its own anchor &x, line 2)"
    ]
    deep = write(tmp_path / "deep.yaml", "a: " + "[" * 200 + "]" * 200 + "\n")
    [problem] = problems_of(deep)
    assert problem.startswith(f"{deep}:1: YAML refused: nested deeper than")
    big = write(tmp_path / "big.yaml", "a: [" + "1, " * 400_000 + "1]\n")
    assert problems_of(big) == [f"{big}: file is larger than 1000000 bytes (the limit for YAML files)"]
    many = write(tmp_path / "many.yaml", "a: &a 1\nb: [" + ", ".join(["*a"] * 20) + "]\n")
    with pytest.raises(SourceError, match=r"many.yaml:2: YAML refused: more than 10 aliases"):
        load_yaml(many, YamlLimits(max_aliases=10))


def test_duplicate_keys_are_reported_with_both_lines_in_one_pass(tmp_path: Path) -> None:
    path = write(
        tmp_path / "dup.yaml",
        "kind: react\nname: A\ntools: [calculator]\nname: B\nllm:\n  temperature: 0\n  temperature: hot\n",
    )
    problems = problems_of(path)
    assert problems[0] == f"{path}:4: name: duplicate key (first at line 2)"
    assert problems[1] == f"{path}:7: temperature: duplicate key (first at line 6)"
    assert problems[2].startswith(f"{path}:7: llm.temperature: ")


def test_the_configuration_is_read_with_the_same_limits(tmp_path: Path) -> None:
    from jianmu_like._base.config import ConfigError, load_config

    config = tmp_path / "jianmu.yaml"
    config.write_text("llm: &x\n  nested: *x\n")
    with pytest.raises(ConfigError) as info:
        load_config(config, env=False)
    assert info.value.problems == [
        f"{config}:2: YAML refused: recursive alias *x (it is inside its own anchor &x, line 1)"
    ]
    config.write_text("llm:\n  temperature: 0.1\n  temperature: 0.2\n  tempreature: 1\n")
    with pytest.raises(ConfigError) as info:
        load_config(config, env=False)
    assert info.value.problems == [
        f"{config}:3: temperature: duplicate key (first at line 2)",
        f"{config}:4: llm.tempreature: unknown key (did you mean 'temperature'?)",
    ]
    config.write_text(BILLION_LAUGHS)
    with pytest.raises(ConfigError, match="YAML refused: the document expands to more than"):
        load_config(config, env=False)


# ---------------------------------------------------------------------------- modules
def test_stdlib_and_foreign_modules_are_refused_without_importing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "site"
    marker = tmp_path / "imported.txt"
    effect = f"open({str(marker)!r}, 'a').write('imported\\n')\n"
    write(elsewhere / "loud_module_x1.py", effect + "def f() -> str:\n    return 'x'\n")
    write(elsewhere / "loud_pkg_x1" / "__init__.py", effect)
    write(elsewhere / "loud_pkg_x1" / "sub.py", effect + "def f() -> str:\n    return 'x'\n")
    monkeypatch.syspath_prepend(str(elsewhere))
    path = write(
        tmp_path / "agent" / "agent.yaml",
        "kind: react\ntools:\n  - 'os:system'\n  - 'loud_module_x1:f'\n"
        "  - 'loud_pkg_x1.sub:f'\n  - 'no_such_mod_x1:f'\n",
    )
    problems = problems_of(path)
    assert [p.split(": ", 2)[:2] for p in problems] == [
        [f"{path}:3", "tools[0]"],
        [f"{path}:4", "tools[1]"],
        [f"{path}:5", "tools[2]"],
        [f"{path}:6", "tools[3]"],
    ]
    for problem, name in zip(problems, ["os", "loud_module_x1", "loud_pkg_x1.sub"], strict=False):
        assert f"module {name!r} (" in problem and "is not under the agent file's directory" in problem
        assert f"--allow-module {name}" in problem and "agents.allowed_modules" in problem
    assert "cannot find module 'no_such_mod_x1'" in problems[3]
    assert not marker.exists()
    assert "loud_module_x1" not in sys.modules and "loud_pkg_x1" not in sys.modules
    # Allowed by name, the module is imported and its function is the tool.
    path.write_text("kind: react\ntools: ['loud_module_x1:f']\n")
    assert validate_agent_file(path, allow_modules=["loud_module_x1"]).tools == ["loud_module_x1:f"]
    assert marker.read_text() == "imported\n"


async def test_a_module_next_to_the_agent_file_is_allowed(tmp_path: Path) -> None:
    write(
        tmp_path / "mine" / "nearby_tools_x2.py",
        "def shout(text: str) -> str:\n    '''Upper-case text.'''\n    return text.upper()\n",
    )
    path = write(
        tmp_path / "mine" / "agent.yaml", "kind: react\ntools: [calculator, 'nearby_tools_x2:shout']\n"
    )
    assert str(tmp_path / "mine") not in sys.path
    with ScriptedOpenAIServer([call("shout", text="hi"), reply("HI it is")]) as srv:
        agent = load_agent(path, model_client=srv.client())
        result = await agent.run({"messages": [human("shout hi")]})
        observation = srv.requests[1]["messages"][-1]["content"]
    assert result.final_answer == "HI it is" and observation == "HI"
    assert str(tmp_path / "mine") not in sys.path


# ---------------------------------------------------------------------------- presets
SECRET = "password: hunter2-secret\nkind: hunter2-kind\n"


def test_presets_are_confined_and_foreign_files_never_echoed(tmp_path: Path) -> None:
    write(tmp_path / "secret.yaml", SECRET)
    write(tmp_path / "agent" / "inside.yaml", SECRET)
    write(tmp_path / "agent" / "broken.yaml", "key: [hunter2-broken\n")
    os.symlink(tmp_path / "secret.yaml", tmp_path / "agent" / "link.yaml")
    path = write(
        tmp_path / "agent" / "tree.yaml",
        "kind: tree\noutput: a\ntree:\n  sequence:\n    children:\n"
        "      - preset: {path: ../secret.yaml, namespace: a}\n"
        "      - preset: {path: link.yaml}\n"
        "      - preset: {path: inside.yaml}\n"
        "      - preset: {path: broken.yaml}\n"
        "      - preset: {path: /etc/passwd}\n",
    )
    problems = problems_of(path)
    assert all("hunter2" not in p and "root:" not in p for p in problems), problems
    assert [p.split(": ")[0] for p in problems] == [f"{path}:{n}" for n in (6, 7, 8, 9, 10)]
    assert "'../secret.yaml' is outside the directories presets may be read from" in problems[0]
    assert "agents.preset_roots" in problems[0]
    assert "'link.yaml' is outside" in problems[1]
    assert problems[2].endswith(
        "inside.yaml is not an agent file "
        "(a mapping with kind: react, supervisor, plan_execute, research, tree)"
    )
    assert problems[3].endswith("broken.yaml is not a readable agent file")
    assert "'/etc/passwd' is outside" in problems[4]


def test_shipped_presets_may_be_referenced_from_anywhere(tmp_path: Path) -> None:
    shipped = Path(__file__).resolve().parents[2] / "presets" / "react.yaml"
    path = write(
        tmp_path / "tree.yaml",
        "kind: tree\noutput: calc\ntree:\n"
        f"  preset: {{path: '{shipped}', namespace: calc, input: '{{task}}'}}\n",
    )
    assert validate_agent_file(path).kind == "tree"
