"""Every demo runs with one command (here against the scripted server, no model needed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from jianmu_like.testing import PATIENCE

DEMOS = Path(__file__).resolve().parent.parent / "demos"


def run_demo(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `demos/<name>` with `args` (e.g. `--scripted`: against its own scripted server)."""
    return subprocess.run(
        [sys.executable, str(DEMOS / name), *args], capture_output=True, text=True, timeout=PATIENCE
    )


def test_calculator_demo_scripted() -> None:
    done = run_demo("calculator_agent.py", "--scripted")
    assert done.returncode == 0, done.stderr
    assert "-> calculator({'expression': '25 * 4 + 10'})" in done.stdout
    assert "<- 110" in done.stdout
    assert "answer: 25 * 4 + 10 = 110." in done.stdout


def run_isolated(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run a demo with a minimal environment, from an empty folder (no stray configuration)."""
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=PATIENCE,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "JIANMU_NO_LOCAL_MODEL": "1", **env},
        cwd=tmp_path,
    )


def test_calculator_demo_without_server_says_what_to_set(tmp_path: Path) -> None:
    done = run_isolated(tmp_path, str(DEMOS / "calculator_agent.py"), "1+1")
    assert done.returncode == 2
    assert "OPENAI_BASE_URL" in done.stderr
    assert "Traceback" not in done.stderr


def test_calculator_demo_unreachable_server_names_the_url(tmp_path: Path) -> None:
    done = run_isolated(
        tmp_path,
        str(DEMOS / "calculator_agent.py"),
        "1+1",
        OPENAI_BASE_URL="http://127.0.0.1:9/v1",
        JIANMU__RESILIENCE__BACKOFF_INITIAL="0",
    )
    assert done.returncode == 1
    assert "model_error" in done.stderr and "127.0.0.1:9" in done.stderr
    assert "Traceback" not in done.stderr


def test_approval_demo_approve_and_deny() -> None:
    approve = run_demo("approval_flow.py")
    assert approve.returncode == 0, approve.stderr
    assert "run 1: suspended" in approve.stdout and "operator: approved" in approve.stdout
    assert "files left: []" in approve.stdout
    deny = run_demo("approval_flow.py", "--deny", "--scripted")  # --scripted, as every demo takes
    assert deny.returncode == 0, deny.stderr
    assert "files left: ['old.log']" in deny.stdout


def test_mcp_agent_demo_scripted() -> None:
    """The demo starts its own MCP server over stdio; the canned model calls its tool."""
    done = run_demo("mcp_agent.py", "--scripted")
    assert done.returncode == 0, done.stderr
    assert "-> units_convert({'value': 42.195, 'from_unit': 'km', 'to_unit': 'mi'})" in done.stdout
    assert "<- 26.22 mi" in done.stdout
    assert "[MCP server 'units': 1 tool(s), pid " in done.stdout
    assert "answer: About 26.22 miles." in done.stdout


def test_plan_execute_demo_scripted() -> None:
    """The canned planner sends step 2 to a model that is down: one re-plan, then the answer."""
    done = run_demo("plan_execute_agent.py", "--scripted")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "2. Multiply the days by 86400 seconds  [model: strong]" in out
    assert "step 2 (strong-model)" in out and "step 2 -> FAILED: model_error" in out
    assert "re-plan:\n  3. Multiply 366 days by 86400 seconds" in out
    assert "<- 31622400" in out
    assert "answer: A leap year has 31,622,400 seconds" in out
    assert "step2: failure, 0 tokens" in out and "[90 tokens in 6 model calls]" in out


def test_research_demo_scripted() -> None:
    """Three searches run, the fourth is refused by the cap; the writer gets the cited summary."""
    done = run_demo("research_agent.py", "--scripted")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.count("-> search(") == 3
    assert "tool-call cap (3) reached: 1 call(s) refused" in out
    assert "Sources:\n[1] https://example.org/eiffel\n[2] https://example.org/liberty" in out
    assert "answer: The Eiffel Tower was built 1887-1889 [1]" in out


def test_supervisor_demo_scripted() -> None:
    done = run_demo("supervisor_team.py", "--scripted")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "[supervisor] plan: 2 sub-question(s)" in out
    assert "[supervisor.q2] critic rejected: 9 * 9 is a product, not a sum (re-run)" in out
    assert "[supervisor.q2] <- 81" in out
    assert "supervisor.q1    completed" in out and "supervisor.q2    completed" in out
    assert "answer: 12 * 7 = 84 is bigger than 9 * 9 = 81; their sum is 165." in out
    assert "[2 sub-agent(s), 150 tokens, 10 model call(s)]" in out
