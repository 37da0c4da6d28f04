"""The command line's small promises: `--help` everywhere, a quiet end on a closed pipe, one
printing of a synthesised answer."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from jianmu_like.testing import ScriptedOpenAIServer, call, calls, reply
from tests.cli.running import CLI, PRESETS, environment, jianmu

COMMANDS = ["run", "resume", "show", "validate", "approvals", "serve", "worker", "submit", "runs"]
COMMANDS += ["recover", "config", "models"]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_answers_help(tmp_path: Path, command: str) -> None:
    done = jianmu(tmp_path, command, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: jianmu-like {command}"), done.stdout


def test_models_passes_options_to_its_own_parser(tmp_path: Path) -> None:
    done = jianmu(tmp_path, "models", "pull", "--help")
    assert done.returncode == 0, done.stderr
    assert "--force" in done.stdout
    wrong = jianmu(tmp_path, "models", "--bogus")
    assert wrong.returncode == 2
    assert "usage: jianmu-like models" in wrong.stderr


def test_other_commands_still_refuse_unknown_options(tmp_path: Path) -> None:
    done = jianmu(tmp_path, "show", str(PRESETS / "react.yaml"), "--bogus")
    assert done.returncode == 2
    assert "unrecognized arguments: --bogus" in done.stderr


@pytest.mark.parametrize("json_lines", [True, False], ids=["json", "text"])
def test_a_closed_pipe_ends_the_run_quietly(tmp_path: Path, json_lines: bool) -> None:
    """`jianmu-like run ... | head -1`: the reader goes after one line, while the run still has
    far more to write than a pipe holds (so the write must fail): exit 141, nothing on stderr."""
    long_answer = "forty-two " * 30_000  # 300 kB: more than any pipe buffer
    with ScriptedOpenAIServer([reply(long_answer)]) as srv:
        args = [*CLI, "run", str(PRESETS / "react.yaml"), "q", *(["--json"] if json_lines else [])]
        with subprocess.Popen(
            args,
            cwd=tmp_path,
            env=environment(srv.base_url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as process:
            assert process.stdout is not None and process.stderr is not None
            assert process.stdout.readline()
            process.stdout.close()
            stderr = process.stderr.read().decode()
            code = process.wait(timeout=120)
    assert code == 141, stderr
    assert stderr == ""


def test_a_synthesised_answer_is_printed_once(tmp_path: Path) -> None:
    agent = tmp_path / "syn.yaml"
    agent.write_text("kind: react\nname: Syn\ntools: [calculator]\nsynthesize: true\n")
    script = [calls(call("calculator", expression="6 * 7")), "42", "Six fois sept font 42."]
    with ScriptedOpenAIServer(script) as srv:
        done = jianmu(tmp_path, "run", str(agent), "6*7?", base_url=srv.base_url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("Six fois sept font 42.") == 1, done.stdout
    assert "✓ success" in done.stdout
