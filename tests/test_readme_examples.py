"""Every Python example of the README runs as written.

A block that is a whole program runs in a fresh interpreter, from an empty folder holding a copy
of `presets/`, with no model settings in the environment: `ModelClient.resolve()` then picks the
embedded local model (those blocks are skipped, saying why, where it is not installed), and the
scripted ones start their own server. A block that continues the example before it (top-level
`await`, names defined above) cannot run alone: each is listed in FRAGMENTS by the start of its
first line, so a new fragment is a decision, not an accident; one taken out of the README must
leave the list.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jianmu_like.models import weights
from jianmu_like.models.local_backends import DEFAULT_BACKEND, backend_problem

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

FRAGMENTS = {
    'async for event in agent.stream({"messages": [human("What is 2**10?")]}):',
    "from jianmu_like import AgentTemplate",
    "import py_trees",
    'both = py_trees.composites.Parallel("Both",',
    "from jianmu_like.nodes import LLMCallNode, ToolNode",
    "from jianmu_like import load_agent",
    "from jianmu_like.durable import DurableClient, DurableWorker",
    "from jianmu_like.tools import MCPToolProvider",  # `client`, `token`, `async with` from the text
    'agent = Agent(root, checkpointer=SQLiteCheckpointer("runs.db"))',
    "from jianmu_like.telemetry.otel_setup import enable_otel",
}
"""Starts of the first lines of the blocks that continue an example (they use names or an event loop of the
text around them)."""


def _blocks() -> list[tuple[int, str]]:
    text = README.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, match.start()) + 2, match.group(1))
        for match in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M)
    ]


def _fragment(code: str) -> str | None:
    first = code.strip().splitlines()[0]
    return next((start for start in FRAGMENTS if first.startswith(start)), None)


def _local_model_problem() -> str | None:
    problem = backend_problem(DEFAULT_BACKEND, import_it=False)
    if problem is None and weights.local_model_path() is None:
        problem = f"the {weights.DEFAULT} weights are not pulled (jianmu-like models pull)"
    return problem


BLOCKS = _blocks()


def test_the_readme_has_examples_and_every_listed_fragment_is_in_it() -> None:
    assert len(BLOCKS) >= 20
    listed = {_fragment(code) for _, code in BLOCKS}
    assert listed >= FRAGMENTS, f"listed fragments no longer in the README: {FRAGMENTS - listed}"


@pytest.mark.parametrize(
    "line,code",
    [block for block in BLOCKS if _fragment(block[1]) is None],
    ids=[f"README.md:{line}" for line, code in BLOCKS if _fragment(code) is None],
)
def test_readme_example_runs(tmp_path: Path, line: int, code: str) -> None:
    if "ModelClient.resolve()" in code and (problem := _local_model_problem()) is not None:
        pytest.skip(f"needs the embedded local model: {problem}")
    shutil.copytree(ROOT / "presets", tmp_path / "presets")
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "JIANMU"))}
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"README.md:{line} failed:\n{done.stderr[-3000:]}"
