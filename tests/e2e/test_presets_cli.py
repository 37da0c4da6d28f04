"""`jianmu-like` with the plan-and-execute and research kinds: `show` describes what is built at
run time and the cap (in process), `run` drives a plan_execute file against the scripted server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jianmu_like.cli._main import main
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, reply

ROOT = Path(__file__).resolve().parents[2]
PRESETS, DEMOS = ROOT / "presets", ROOT / "demos"


def jianmu(cwd: Path, *args: str, base_url: str | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI from an empty folder, without the parent's model or jianmu settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JIANMU", "OPENAI_", "FORCE_COLOR"))}
    env.update(PYTHONIOENCODING="utf-8", NO_COLOR="1")
    if base_url is not None:
        env.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="x")
    return subprocess.run(
        [sys.executable, "-m", "jianmu_like", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    )


def test_show_plan_execute_and_research(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["show", str(PRESETS / "plan_execute.yaml")]) == 0
    planned = capsys.readouterr().out
    assert "PlanExecute  (plan_execute)" in planned
    assert "PlanExecute.Rounds  LoopUntilSuccess  max 2 iterations" in planned
    assert (
        "PlanExecute.Steps  PlanSteps  a ReAct subtree per planned step (tools=[calculator, think])"
        in planned
    )
    assert main(["show", str(DEMOS / "research.yaml")]) == 0
    research = capsys.readouterr().out
    assert "Researcher.Agent.Cap  ToolCap  max 3 tool calls (think free)" in research
    assert "Researcher.Agent.Tools  ToolExecutor  tools=[search, think]" in research
    assert "Researcher.Compress  Compress" in research


def test_run_plan_execute_file(tmp_path: Path) -> None:
    script = [
        reply(tool_calls=[call("Plan", steps=[{"task": "compute 2**10", "tools": ["calculator"]}])]),
        call("calculator", expression="2**10"),
        reply("1024"),
        reply("2**10 is 1024."),
    ]
    with ScriptedOpenAIServer(script) as srv:
        done = jianmu(tmp_path, "run", str(PRESETS / "plan_execute.yaml"), "2**10?", base_url=srv.base_url)
    assert done.returncode == 0, done.stderr
    assert "2**10 is 1024." in done.stdout
