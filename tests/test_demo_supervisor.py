"""The supervisor demo runs with one command against the scripted server (see test_demos.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DEMOS = Path(__file__).resolve().parent.parent / "demos"


def test_supervisor_demo_scripted() -> None:
    done = subprocess.run(
        [sys.executable, str(DEMOS / "supervisor_team.py"), "--scripted"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "[supervisor] plan: 2 sub-question(s)" in out
    assert "[supervisor.q2] critic rejected: 9 * 9 is a product, not a sum (re-run)" in out
    assert "[supervisor.q2] <- 81" in out
    assert "supervisor.q1    completed" in out and "supervisor.q2    completed" in out
    assert "answer: 12 * 7 = 84 is bigger than 9 * 9 = 81; their sum is 165." in out
    assert "[2 sub-agent(s), 150 tokens, 10 model call(s)]" in out
