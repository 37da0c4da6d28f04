"""A model stream cut off mid-answer and retried, as the CLI shows it: the `jianmu-like run`
process against the scripted server (which drops the connection mid-body), and the renderer's
live view fed the same events."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from jianmu_like import ModelClient
from jianmu_like.agentfile._loader import load_agent
from jianmu_like.cli._render import EventRenderer
from jianmu_like.telemetry import events as ev
from jianmu_like.testing import ScriptedOpenAIServer, ScriptedProvider, fault_reply
from tests.telemetry.event_kit import sample

PRESET = Path(__file__).resolve().parents[2] / "presets" / "react.yaml"
ANSWER = "The capital of France is Paris."
NOTE = "↺ cut off mid-stream: the text above is discarded"


def test_the_cli_marks_a_cut_off_stream_and_prints_the_retried_answer(tmp_path: Path) -> None:
    skip = ("JIANMU", "OPENAI_", "FORCE_COLOR", "TTY_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
    with ScriptedOpenAIServer([fault_reply("dropped_stream", "The capital of"), ANSWER]) as srv:
        env.update(PYTHONIOENCODING="utf-8", NO_COLOR="1", OPENAI_BASE_URL=srv.base_url, OPENAI_API_KEY="x")
        done = subprocess.run(
            [sys.executable, "-m", "jianmu_like", "run", str(PRESET), "Capital of France?"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert len(srv.requests) == 2  # the cut attempt, then the retry
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    cut = lines.index("The capital of")  # streamed live before the connection dropped
    assert lines[cut + 1] == NOTE
    assert lines[cut + 2].startswith("↻ retrying")
    assert lines[cut + 3] == ANSWER  # streamed once, not repeated at the end
    assert done.stdout.count(ANSWER) == 1


def _event(kind: str, **data: Any) -> ev.CatalogueEvent:
    return sample(kind, **data)


def test_the_live_view_drops_the_text_of_a_cut_off_stream() -> None:
    out = io.StringIO()
    console = Console(file=out, width=100, highlight=False, soft_wrap=True, force_terminal=False)
    root = load_agent(PRESET, model_client=ModelClient(ScriptedProvider([]), model="m")).root
    renderer = EventRenderer(console, root, live=True)
    renderer.handle(_event("text.delta", delta="The capital of"))
    renderer.handle(_event("text.reset", model="m", attempt=1, discarded=14, error="cut"))
    renderer.handle(_event("text.delta", delta=ANSWER))
    assert out.getvalue() == ""  # nothing printed above the live view for the void text
    console.print(renderer)
    assert out.getvalue().rstrip().endswith(ANSWER) and "The capital of\n" not in out.getvalue()
    out.truncate(0)
    out.seek(0)
    renderer.handle(_event("reply.completed", content=ANSWER, final=True))
    assert out.getvalue() == ANSWER + "\n"
