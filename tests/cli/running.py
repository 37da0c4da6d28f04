"""Running `jianmu-like` as a subprocess, as a user would: from a folder of the test's choosing,
with none of the parent's model or jianmu settings (one copy for the CLI and preset tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

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


def in_process(
    base_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., tuple[int, str]]:
    """`cli(*args) -> (exit code, stdout + stderr)`: the CLI's `main` run in this process against
    the model at `base_url` (the seam tests: a subprocess per step would cost seconds)."""
    from jianmu_like.cli._main import main

    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("NO_COLOR", "1")

    def cli(*args: str) -> tuple[int, str]:
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return code, captured.out + captured.err

    return cli
