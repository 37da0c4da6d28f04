"""An agent file names only its own code: modules under its folder that are not part of a Python
installation (standard library, site-packages, a virtual environment beside it), unless allowed
with --allow-module; and it is read as text only (a NUL byte or invalid UTF-8 is a `file:line`
error, exit 2)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_agentfile_limits import problems_of, write

from jianmu_like.agentfile._loader import load_agent, validate_agent_file
from jianmu_like.testing import ScriptedOpenAIServer, reply

CLI = [sys.executable, "-m", "jianmu_like"]


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=env, check=False
    )


LOUD = "open({marker!r}, 'a').write('imported\\n')\ndef run(cmd: str) -> str:\n    return cmd\n"
"""A module that leaves a mark when its code runs (so a test sees whether it was imported)."""


# ---------------------------------------------------------------------------- installations
@pytest.mark.parametrize(
    ("venv_dir", "packages_dir"),
    [(".venv", "lib/python3.11/site-packages"), ("env", "lib/modules")],
    ids=["site-packages", "pyvenv.cfg"],
)
def test_a_package_of_a_virtualenv_beside_the_agent_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, venv_dir: str, packages_dir: str
) -> None:
    marker = tmp_path / "imported.txt"
    module = f"evilpkg_c1_{venv_dir.strip('.')}"
    venv = tmp_path / "project" / venv_dir
    write(venv / "pyvenv.cfg", "home = /usr/bin\n")
    packages = venv / packages_dir
    write(packages / module / "__init__.py", LOUD.format(marker=str(marker)))
    monkeypatch.syspath_prepend(str(packages))  # as when the agent runs with that venv's Python
    path = write(tmp_path / "project" / "agent.yaml", f"kind: react\ntools: ['{module}:run']\n")
    [problem] = problems_of(path)
    assert problem.startswith(f"{path}:2: tools[0]: module {module!r} (")
    assert "is part of a Python installation" in problem
    expected = "a site-packages folder" if "site-packages" in packages_dir else f"virtual environment {venv}"
    assert expected in problem
    assert f"--allow-module {module}" in problem
    assert not marker.exists() and module not in sys.modules
    # The escape hatch is the one rule for every refused module.
    assert validate_agent_file(path, allow_modules=[module]).tools == [f"{module}:run"]
    assert marker.read_text() == "imported\n"


@pytest.fixture
def file_above_the_stdlib() -> Iterator[Path]:
    """An agent file in the deepest writable folder that contains this interpreter's real
    standard library (with pyenv: the home directory or the pyenv root)."""
    stdlib = Path(os.path.realpath(sysconfig.get_paths()["stdlib"]))
    folder = next((p for p in stdlib.parents if os.access(p, os.W_OK)), None)
    if folder is None:
        pytest.skip(f"no writable folder above the standard library {stdlib}")
    handle, name = tempfile.mkstemp(prefix="jianmu-confine-", suffix=".yaml", dir=folder)
    os.close(handle)
    try:
        yield Path(name)
    finally:
        os.unlink(name)


def test_the_standard_library_is_refused_even_when_the_agent_folder_contains_it(
    file_above_the_stdlib: Path,
) -> None:
    path = file_above_the_stdlib
    path.write_text("kind: react\ntools: ['subprocess:getoutput', 'json:dumps']\n")
    problems = problems_of(path)
    stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"])
    for problem, name in zip(problems, ["subprocess", "json"], strict=True):
        assert problem.startswith(f"{path}:2: tools[")
        assert f"module {name!r} ({stdlib}" in problem
        assert "is part of a Python installation (the standard library" in problem
        assert f"--allow-module {name}" in problem
    # The command line says the same and exits 2; with --allow-module the file is valid.
    refused = cli("validate", str(path))
    assert refused.returncode == 2, refused.stderr
    assert "is part of a Python installation (the standard library" in refused.stderr
    assert "--allow-module subprocess" in refused.stderr
    allowed = cli("validate", str(path), "--allow-module", "subprocess", "--allow-module", "json")
    assert allowed.returncode == 0, allowed.stderr


def test_a_symlink_into_the_agent_folder_does_not_make_an_installed_package_local(tmp_path: Path) -> None:
    """`pydantic_core` linked beside the agent file is still the installed package (realpath)."""
    import pydantic_core

    installed = Path(pydantic_core.__file__).parent
    (tmp_path / "pydantic_core").symlink_to(installed, target_is_directory=True)
    path = write(tmp_path / "agent.yaml", "kind: react\ntools: ['pydantic_core:to_json']\n")
    [problem] = problems_of(path)
    assert (
        f"({os.path.realpath(installed)}" in problem and "is not under the agent file's directory" in problem
    )


async def test_a_local_tools_module_beside_the_agent_file_is_still_allowed(tmp_path: Path) -> None:
    write(tmp_path / "proj" / ".venv" / "pyvenv.cfg", "home = /usr/bin\n")  # a venv beside it
    write(
        tmp_path / "proj" / "tools_c3.py",
        "def shout(text: str) -> str:\n    '''Upper-case text.'''\n    return text.upper()\n",
    )
    path = write(tmp_path / "proj" / "agent.yaml", "kind: react\ntools: ['tools_c3:shout']\n")
    assert validate_agent_file(path).tools == ["tools_c3:shout"]
    with ScriptedOpenAIServer([reply("done")]) as srv:
        agent = load_agent(path, model_client=srv.client())
        result = await agent.run({"task": "hi"})
        assert result.final_answer == "done"
        assert [t["function"]["name"] for t in srv.requests[0]["tools"]] == ["shout"]


# ---------------------------------------------------------------------------- bytes
@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"kind: react\nname: a\x00b\n", ":2: YAML refused: the character U+0000 is not allowed in YAML"),
        (b"kind: react\n\nname: caf\xe9\n", ":3: not UTF-8 text (byte 22)"),
    ],
    ids=["nul", "latin-1"],
)
def test_a_file_that_is_not_yaml_text_is_a_file_line_error_with_exit_2(
    tmp_path: Path, content: bytes, expected: str
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_bytes(content)
    assert problems_of(path) == [f"{path}{expected}"]
    for command in (["validate", str(path)], ["run", str(path), "hi"], ["show", str(path)]):
        proc = cli(*command)
        assert proc.returncode == 2, (command, proc.stderr)
        assert f"{path}{expected}" in proc.stderr and "Traceback" not in proc.stderr
