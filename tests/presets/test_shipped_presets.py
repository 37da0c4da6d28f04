"""The YAML presets are package data: a wheel ships them, and `jianmu-like run react "..."`
finds them by name from any folder, from a checkout and from the installed wheel."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from jianmu_like._base.sources import SourceError
from jianmu_like.agentfile._shipped import SHIPPED_DIR, agent_file_path, shipped_presets
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, reply
from tests.cli.running import environment, jianmu

ROOT = Path(__file__).resolve().parents[2]
NAMES = ["careful", "plan_execute", "react", "research", "supervisor"]


def test_the_presets_are_in_the_package() -> None:
    assert sorted(shipped_presets()) == NAMES
    assert SHIPPED_DIR == ROOT / "jianmu_like" / "presets"


def test_a_name_finds_a_shipped_preset_and_a_path_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert agent_file_path("react") == SHIPPED_DIR / "react.yaml"
    assert agent_file_path("supervisor.yaml") == SHIPPED_DIR / "supervisor.yaml"
    (tmp_path / "react.yaml").write_text("kind: react\n")
    assert agent_file_path("react.yaml") == Path("react.yaml")  # one's own file is never shadowed
    with pytest.raises(SourceError) as info:
        agent_file_path("reactt")
    assert info.value.problems == [
        "reactt: no such file (did you mean 'react'?) "
        "(shipped presets: careful, plan_execute, react, research, supervisor)"
    ]
    with pytest.raises(SourceError):
        agent_file_path("elsewhere/react")  # a path with a folder is a path, never a preset name


def test_run_react_by_name_from_an_empty_folder(tmp_path: Path) -> None:
    script = [call("calculator", expression="25 * 4 + 10"), reply("It is 110.")]
    with ScriptedOpenAIServer(script) as srv:
        done = jianmu(tmp_path, "run", "react", "What is 25 * 4 + 10?", base_url=srv.base_url)
    assert done.returncode == 0, done.stderr
    assert "← 110" in done.stdout and "✓ success" in done.stdout
    missing = jianmu(tmp_path, "validate", "react", "supervisr")
    assert missing.returncode == 2
    assert "react: ok" in missing.stdout
    assert "supervisr: no such file (did you mean 'supervisor'?)" in missing.stderr


def test_an_installed_wheel_ships_and_finds_the_presets(tmp_path: Path) -> None:
    """Build the wheel, unpack it (a pure-Python wheel unpacked is its installed layout) and run
    the CLI from it, in an empty folder, with no checkout on the path."""
    source = tmp_path / "source"  # built from a copy: setuptools writes build/ into the tree
    shutil.copytree(
        ROOT / "jianmu_like", source / "jianmu_like", ignore=shutil.ignore_patterns("__pycache__")
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(tmp_path / "dist")],
        capture_output=True,
        text=True,
        timeout=PATIENCE * 10,
    )
    if built.returncode != 0 and "satisfies the requirement setuptools" in built.stderr:
        pytest.skip("pip cannot fetch the build backend (setuptools>=77) here: no package index")
    assert built.returncode == 0, built.stderr
    [wheel] = (tmp_path / "dist").glob("jianmu_like-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = sorted(n for n in archive.namelist() if n.startswith("jianmu_like/presets/"))
        assert [n for n in shipped if n.endswith(".yaml")] == [f"jianmu_like/presets/{n}.yaml" for n in NAMES]
        archive.extractall(tmp_path / "site")
    work = tmp_path / "work"
    work.mkdir()
    env = environment(PYTHONPATH=str(tmp_path / "site"), PYTHONSAFEPATH="1")
    where = subprocess.run(
        [sys.executable, "-c", "import jianmu_like; print(jianmu_like.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    )
    assert where.stdout.strip() == str(tmp_path / "site" / "jianmu_like" / "__init__.py"), where.stderr
    shown = subprocess.run(
        [sys.executable, "-m", "jianmu_like", "show", "supervisor"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    )
    assert shown.returncode == 0, shown.stderr
    assert "Supervisor  (supervisor)" in shown.stdout
