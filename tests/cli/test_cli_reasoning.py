"""The model's reasoning in `jianmu-like run`'s transcript: dimmed after a `thinking:` label, in
the plain view (a pipe) and the live one, streamed or whole, withdrawn when its attempt is cut
off; end to end as a subprocess against a scripted reasoning server, and fed by hand-made
events for the views a pipe cannot show."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from rich.console import Console

from jianmu_like import AgentResult, Usage
from jianmu_like.cli._render import EventRenderer
from jianmu_like.telemetry import events as ev
from jianmu_like.testing import ScriptedOpenAIServer, call, calls, reply
from tests.cli.running import PRESETS, jianmu
from tests.telemetry.event_kit import sample

THINK_1 = "Twenty-five times four, plus ten: the calculator."
THINK_2 = "The tool said 110."


def _console(*, color: bool = False) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    con = Console(
        file=out,
        width=200,
        highlight=False,
        soft_wrap=True,
        force_terminal=color,
        color_system="standard" if color else None,
    )
    return con, out


def _event(kind: str, namespace: str | None = None, **data: Any) -> ev.CatalogueEvent:
    return sample(kind, namespace, **data)


def test_run_shows_the_reasoning_before_each_reply(tmp_path: Path) -> None:
    script = [
        calls(call("calculator", expression="25 * 4 + 10"), reasoning_content=THINK_1),
        reply("25 * 4 + 10 = 110.", reasoning_content=THINK_2),
    ]
    with ScriptedOpenAIServer(script) as srv:
        done = jianmu(
            tmp_path, "run", str(PRESETS / "react.yaml"), "What is 25 * 4 + 10?", base_url=srv.base_url
        )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert f"thinking: {THINK_1}" in lines and f"thinking: {THINK_2}" in lines, done.stdout
    order = [
        lines.index(f"thinking: {THINK_1}"),
        next(i for i, line in enumerate(lines) if line.startswith("→ calculator")),
        lines.index(f"thinking: {THINK_2}"),
        lines.index("25 * 4 + 10 = 110."),
    ]
    assert order == sorted(order), done.stdout
    assert done.stdout.count(THINK_2) == 1  # streamed, not repeated whole on reply.completed


def test_a_reply_not_streamed_shows_its_reasoning_whole_once() -> None:
    con, out = _console()
    renderer = EventRenderer(con)
    renderer.handle(_event("reply.started", round=1))
    renderer.handle(_event("reply.completed", content="It is 42.", final=True, reasoning="Six sevens."))
    renderer.finish(AgentResult(status="success", final_answer="It is 42."), Usage())
    assert out.getvalue().splitlines()[:2] == ["thinking: Six sevens.", "It is 42."]


def test_the_reasoning_is_dimmed_on_a_terminal() -> None:
    con, out = _console(color=True)
    renderer = EventRenderer(con)
    renderer.handle(_event("reasoning.delta", delta="Six"))
    renderer.handle(_event("reasoning.delta", delta=" sevens."))
    renderer.handle(_event("text.delta", delta="42"))
    renderer.handle(_event("reply.completed", content="42", final=True, reasoning="Six sevens."))
    printed = out.getvalue()
    assert "\x1b[2mSix\x1b[0m" in printed and "\x1b[2m sevens.\x1b[0m" in printed, repr(printed)
    assert "\x1b[2m" not in printed.split("\n", 1)[1], repr(printed)  # the answer is not dimmed


def test_namespaced_reasoning_is_prefixed() -> None:
    con, out = _console()
    renderer = EventRenderer(con)
    renderer.handle(_event("reasoning.delta", "r1", delta="About Paris."))
    renderer.handle(_event("reasoning.delta", "r2", delta="About Rome."))
    renderer.handle(_event("reply.completed", "r2", content="", final=False, reasoning="About Rome."))
    assert out.getvalue().splitlines() == ["[r1] thinking: About Paris.", "[r2] thinking: About Rome."]


def test_a_cut_off_attempts_reasoning_is_marked_in_a_pipe_and_dropped_live() -> None:
    con, out = _console()
    renderer = EventRenderer(con)
    renderer.handle(_event("reasoning.delta", delta="lost"))
    renderer.handle(_event("text.reset", discarded=0, reasoning_discarded=4))
    renderer.handle(_event("reasoning.delta", delta="kept"))
    renderer.handle(_event("reply.completed", content="x", final=True, reasoning="kept"))
    assert out.getvalue().splitlines() == [
        "thinking: lost",
        "↺ cut off mid-stream: the reasoning above is discarded",
        "thinking: kept",
    ]
    con, out = _console()
    live = EventRenderer(con, live=True)
    live.handle(_event("reasoning.delta", delta="lost"))
    assert out.getvalue() == ""
    con.print(live)  # the live area shows the reasoning being streamed
    assert out.getvalue().strip() == "thinking: lost"
    out.truncate(0)
    out.seek(0)
    live.handle(_event("text.reset", discarded=0, reasoning_discarded=4))
    live.handle(_event("reasoning.delta", delta="kept"))
    live.handle(_event("reply.completed", content="x", final=True, reasoning="kept"))
    assert out.getvalue().splitlines() == ["thinking: kept"]
