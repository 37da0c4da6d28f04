"""The CLI's event renderer and tree views, fed by hand-made events (no terminal, no model)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from py_trees.common import Status
from rich.console import Console

from jianmu_like import AgentResult, ModelClient, Usage
from jianmu_like.agentfile._loader import load_agent
from jianmu_like.cli._render import EventRenderer, dot_text, summary_line, tree_view
from jianmu_like.telemetry import events as ev
from jianmu_like.testing import ScriptedProvider
from tests.telemetry.event_kit import sample

PRESET = Path(__file__).resolve().parents[2] / "presets" / "react.yaml"


def console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=100, highlight=False, soft_wrap=True, force_terminal=False), out


def event(kind: str, namespace: str | None = None, **data: Any) -> ev.CatalogueEvent:
    return sample(kind, namespace, **data)


def test_transcript_of_a_react_run() -> None:
    con, out = console()
    renderer = EventRenderer(con)
    for e in [
        event("run.started", thread_id="t1"),
        event("text.delta", delta="Let me "),
        event("text.delta", delta="compute."),
        event("reply.completed", content="Let me compute.", final=False),
        event("tool.call.started", tool="calculator", call_id="c1", arguments={"expression": "2+2"}),
        event("tool.call.completed", tool="calculator", call_id="c1", output="4"),
        event("tool.call.failed", tool="think", error="boom", denied=False),
        event("model.call.retry", model="m", delay=0.5, error="HTTP 503"),
        event("text.delta", delta="It is 4."),
        event("reply.completed", content="It is 4.", final=True),
    ]:
        renderer.handle(e)
    result = AgentResult(
        status="success", final_answer="It is 4.", termination={"iterations": 2}, elapsed=0.5
    )
    renderer.finish(result, Usage(total_tokens=30, calls=2))
    assert out.getvalue().splitlines() == [
        "▶ run started (thread t1)",
        "Let me compute.",
        '→ calculator({"expression": "2+2"})',
        "← 4",
        "✗ think failed: boom",
        "↻ retrying m in 0.5s: HTTP 503",
        "It is 4.",
        "✓ success · 2 iterations · 30 tokens in 2 model calls · 0.50 s",
    ]


def test_namespaced_agents_are_prefixed_and_the_answer_is_printed_at_the_end() -> None:
    con, out = console()
    renderer = EventRenderer(con)
    renderer.handle(event("text.delta", "plan", delta="1. a"))
    renderer.handle(event("tool.call.started", "r1", tool="calculator", arguments={}))
    renderer.handle(event("text.delta", "write", delta="Done."))
    renderer.handle(event("reply.completed", "write", content="Done."))
    renderer.finish(AgentResult(status="success", final_answer="Done."), Usage())
    lines = out.getvalue().splitlines()
    assert lines[:4] == ["[plan] 1. a", "[r1] → calculator({})", "[write] Done.", "Done."]


def test_live_mode_buffers_the_streamed_reply() -> None:
    con, out = console()
    root = load_agent(PRESET, model_client=ModelClient(ScriptedProvider([]), model="m")).root
    renderer = EventRenderer(con, root, live=True)
    renderer.handle(event("text.delta", delta="Hel"))
    renderer.handle(event("text.delta", delta="lo"))
    assert out.getvalue() == ""
    con.print(renderer)  # what the Live area shows: the tree, then the partial reply
    assert "· Calculator.LLM" in out.getvalue() and out.getvalue().rstrip().endswith("Hello")
    out.truncate(0)
    out.seek(0)
    renderer.handle(event("reply.completed", content="Hello"))
    assert out.getvalue() == "Hello\n"


def test_tree_views() -> None:
    root = load_agent(PRESET, model_client=ModelClient(ScriptedProvider([]), model="m")).root
    con, out = console()
    con.print(tree_view(root))
    assert "Calculator.Tools  ToolExecutor  tools=[calculator, think]" in out.getvalue()
    root.status = Status.RUNNING
    out.truncate(0)
    out.seek(0)
    con.print(tree_view(root, statuses=True))
    assert out.getvalue().splitlines()[0] == "◐ Calculator  iteration 1/8"
    assert dot_text(root, "My agent").startswith('digraph "My agent" {')


def test_summary_of_a_failure() -> None:
    result = AgentResult(status="failure", termination={"reason": "model_error", "iterations": 1}, elapsed=1)
    assert str(summary_line(result, Usage())) == "✗ failure · model_error · 1 iteration · 0 tokens · 1.00 s"


def test_every_kind_of_interruption_has_its_lines_from_one_pair_of_events() -> None:
    con, out = console()
    renderer = EventRenderer(con)
    approval = {"tool": "rm", "arguments": {"path": "/x"}, "reason": "deleting needs a human"}
    for e in [
        ev.InterruptionRequested(id="c1", kind="approval", tool="rm", call_id="c1", request=approval),
        ev.ApprovalRequested(approval_id="c1", tool="rm", arguments={"path": "/x"}),  # the older: no line
        ev.InterruptionDecided(
            id="c1", kind="approval", answer={"approved": True, "arguments": {"path": "/y"}}
        ),
        ev.InterruptionRequested(
            id="bp_1", kind="breakpoint", request={"reason": "breakpoint before Tools (0.1)"}
        ),
        ev.InterruptionDecided(id="bp_1", kind="breakpoint", answer={"approved": False}),
        ev.InterruptionRequested(id="ev-1", kind="question", request={"server": "ev", "message": "name?"}),
        ev.InterruptionDecided(id="ev-1", kind="question", answer={"action": "decline"}),
    ]:
        renderer.handle(e)
    assert out.getvalue().splitlines() == [
        '⏸ rm({"path": "/x"}) needs approval (id c1): deleting needs a human',
        '✓ approved: c1 with corrected arguments {"path": "/y"}',
        "⏸ paused at a breakpoint: breakpoint before Tools (0.1) (id bp_1)",
        "✗ denied: bp_1",
        "⏸ ev asks: name? (id ev-1)",
        "✓ answered ev-1: decline",
    ]
