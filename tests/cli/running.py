"""Running `jianmu-like` as a subprocess, as a user would: from a folder of the test's choosing,
with none of the parent's model or jianmu settings (one copy for the CLI and preset tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from jianmu_like.testing import PATIENCE

PRESETS = Path(__file__).resolve().parents[2] / "presets"
CLI = [sys.executable, "-m", "jianmu_like"]


def environment(base_url: str | None = None, **extra: str) -> dict[str, str]:
    """The parent's environment without any model or jianmu settings, plus `extra`."""
    skip = ("JIANMU", "OPENAI_", "FORCE_COLOR", "TTY_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
    env.update(PYTHONIOENCODING="utf-8", NO_COLOR="1")
    if base_url is not None:
        env.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="x")
    env.update(extra)
    return env


def jianmu(
    cwd: Path, *args: str, base_url: str | None = None, **extra: str
) -> subprocess.CompletedProcess[str]:
    """Run the CLI from `cwd` (an empty folder: no stray jianmu.yaml)."""
    return subprocess.run(
        [*CLI, *args],
        cwd=cwd,
        env=environment(base_url, **extra),
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    )
