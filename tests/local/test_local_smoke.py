"""Smoke test of the embedded local model on the README's main job.

Runs on the default backend (xllamacpp) where it is installed (`pip install -e '.[local]'`) and the default
weights are pulled (`python -m jianmu_like.models.weights pull`); skipped otherwise. At
temperature 0 the model is deterministic, so the answer itself is asserted: the calculator was
called with the whole expression and the answer says 110 (bench/LOCAL_MODELS.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from jianmu_like import ModelClient, human, load_agent
from jianmu_like._base.config import get_config
from jianmu_like.models import weights
from jianmu_like.models._local_provider import LlamaCppProvider
from jianmu_like.models.local_backends import DEFAULT_BACKEND, backend_problem
from jianmu_like.testing import PATIENCE

PRESET = Path(__file__).resolve().parents[2] / "presets" / "react.yaml"
QUESTION = "What is 25 * 4 + 10?"
MAX_ITERATIONS = 8  # presets/react.yaml: limits.max_iterations
TIMEOUT_ENV, PATIENT_TIMEOUT = "JIANMU__LLM__TIMEOUT", f"{2 * PATIENCE:g}"
"""One generation on a loaded 2-core CI machine can outlast the default 60 s model-call timeout."""


def _unavailable() -> str | None:
    problem = backend_problem(DEFAULT_BACKEND, import_it=True)
    if problem is not None:
        return problem
    if weights.local_model_path() is None:
        return f"the {weights.DEFAULT} weights are not pulled (python -m jianmu_like.models.weights pull)"
    return None


REASON = _unavailable()
pytestmark = [pytest.mark.local, pytest.mark.skipif(REASON is not None, reason=REASON or "")]


@pytest.fixture
def patient_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(TIMEOUT_ENV, PATIENT_TIMEOUT)
    get_config(reload=True)
    yield
    monkeypatch.undo()
    get_config(reload=True)


@pytest.mark.usefixtures("patient_calls")
async def test_main_job_in_process() -> None:
    spec = weights.spec_of(None)
    path = weights.local_model_path()
    assert path is not None
    provider = LlamaCppProvider(path, chat_format=spec.chat_format, system_role=spec.system_role)
    async with ModelClient(provider, model=f"local/{spec.name}") as client:
        agent = load_agent(PRESET, model_client=client)
        result = await agent.run(input_data={"task": QUESTION, "messages": [human(QUESTION)]})
    calls = [c.name for m in result.state.messages for c in (m.tool_calls or ())]
    assert result.status == "success", result.termination
    assert "calculator" in calls
    assert "110" in (result.final_answer or ""), result.final_answer
    assert result.termination["iterations"] <= MAX_ITERATIONS


def test_main_job_command_line(tmp_path: Path) -> None:
    """`jianmu-like run presets/react.yaml ...` with no server configured uses the local model."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "JIANMU"))}
    env.update({"PYTHONIOENCODING": "utf-8", "NO_COLOR": "1", TIMEOUT_ENV: PATIENT_TIMEOUT})
    done = subprocess.run(
        [sys.executable, "-m", "jianmu_like", "run", str(PRESET), QUESTION, "--no-live"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=5 * PATIENCE,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "calculator(" in done.stdout
    assert "success" in done.stdout
    lines = done.stdout.splitlines()
    status = next(i for i, line in enumerate(lines) if "success" in line)
    assert "110" in lines[status - 1], done.stdout  # the answer, printed just above the status line
