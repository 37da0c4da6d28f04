"""Every demo runs with one command (here against the scripted server, no model needed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DEMOS = Path(__file__).resolve().parent.parent / "demos"


def test_calculator_demo_scripted() -> None:
    done = subprocess.run(
        [sys.executable, str(DEMOS / "calculator_agent.py"), "--scripted"],
        capture_output=True,
        text=True,
        timeout=60,
    )
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
        timeout=60,
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
    approve = subprocess.run(
        [sys.executable, str(DEMOS / "approval_flow.py")], capture_output=True, text=True, timeout=60
    )
    assert approve.returncode == 0, approve.stderr
    assert "run 1: suspended" in approve.stdout and "operator: approved" in approve.stdout
    assert "files left: []" in approve.stdout
    deny = subprocess.run(
        [sys.executable, str(DEMOS / "approval_flow.py"), "--deny"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert deny.returncode == 0, deny.stderr
    assert "files left: ['old.log']" in deny.stdout


def test_mcp_agent_demo_scripted() -> None:
    """The demo starts its own MCP server over stdio; the canned model calls its tool."""
    done = subprocess.run(
        [sys.executable, str(DEMOS / "mcp_agent.py"), "--scripted"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "-> units_convert({'value': 42.195, 'from_unit': 'km', 'to_unit': 'mi'})" in done.stdout
    assert "<- 26.22 mi" in done.stdout
    assert "[MCP server 'units': 1 tool(s), pid " in done.stdout
    assert "answer: About 26.22 miles." in done.stdout
