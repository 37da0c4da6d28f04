"""Terminal views for the CLI: agent events as a transcript, and behaviour trees as rich Trees.

`EventRenderer` is fed one `Event` at a time (`handle`) and prints to a rich `Console`, so it
can be tested with a console writing into a string. With `live=True` it also serves as the
renderable of a `rich.live.Live`: the tree with every node's status, plus the answer being
streamed (printed above the live area once the reply is complete).

The model's reasoning (a reasoning server's `reasoning_content`) is part of the transcript in
both views, as the console shows it: dimmed, after a `thinking:` label (what tells it apart
where there are no colours: a pipe, `NO_COLOR`), streamed as it arrives or whole when the reply
was not streamed. Programs read `--json`, whose events carry it too (`reasoning.delta`,
`reply.completed.reasoning`).
"""

from __future__ import annotations

import json
from typing import Any

import py_trees
from py_trees.common import Status
from rich.console import Console, Group, RenderableType
from rich.text import Text
from rich.tree import Tree

from .._run.agent import AgentResult
from ..bt._hooks import hooks_of
from ..models._types import Usage
from ..telemetry import events as ev
from ..telemetry.events import AnyEvent
from ..tools._toolset import toolset_of

_STATUS_STYLE = {
    Status.RUNNING: ("◐", "yellow"),
    Status.SUCCESS: ("✓", "green"),
    Status.FAILURE: ("✗", "red"),
    Status.INVALID: ("·", "dim"),
}


def shorten(value: Any, limit: int = 160) -> str:
    """One line of at most `limit` characters (JSON for structured values)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _details(node: py_trees.behaviour.Behaviour) -> str:
    """What is worth knowing about a node when reading a tree: namespace, tools, loop limit."""
    parts: list[str] = []
    namespace = getattr(node, "namespace", None)
    if namespace:
        parts.append(f"ns={namespace}")
    tools = toolset_of(node)
    if tools is not None and type(node).__name__ == "ToolExecutor":
        try:
            names = tools.names()
        except Exception:  # MCP providers not started yet: the names are not known offline
            names = ["…"]
        parts.append(f"tools=[{', '.join(names)}]")
    limit = getattr(node, "max_iterations", None)
    if isinstance(limit, int):
        parts.append(f"max {limit} iterations")
    shown = hooks_of(node).show_details  # e.g. what a node builds at run time (bt._hooks)
    if shown is not None:
        details = shown(node)
        if details:
            parts.append(details)
    return "  ".join(parts)


def tree_view(root: py_trees.behaviour.Behaviour, *, statuses: bool = False) -> Tree:
    """A rich Tree of `root`: name, node class and details; with `statuses`, each node's
    current status (and a loop's iteration count)."""

    def label(node: py_trees.behaviour.Behaviour) -> Text:
        text = Text()
        if statuses:
            icon, style = _STATUS_STYLE.get(node.status, ("?", ""))
            text.append(f"{icon} ", style=style)
            text.append(node.name, style="bold" if node.status == Status.RUNNING else style)
            iterations = getattr(node, "iterations", None)
            limit = getattr(node, "max_iterations", None)
            if isinstance(iterations, int) and isinstance(limit, int):
                if node.status == Status.RUNNING:
                    text.append(f"  iteration {iterations + 1}/{limit}", style="dim")
                elif node.status != Status.INVALID:
                    text.append(f"  {iterations} iteration(s)", style="dim")
            return text
        text.append(node.name, style="bold")
        text.append(f"  {type(node).__name__}", style="cyan")
        details = _details(node)
        if details:
            text.append(f"  {details}", style="dim")
        return text

    def add(branch: Tree, node: py_trees.behaviour.Behaviour) -> None:
        for child in node.children:
            add(branch.add(label(child)), child)

    tree = Tree(label(root), guide_style="dim")
    add(tree, root)
    return tree


def dot_text(root: py_trees.behaviour.Behaviour, name: str) -> str:
    """Graphviz dot of the tree, as py_trees draws it (pydot is a dependency of py_trees), as a
    graph named `name` (py_trees names every graph "pastafarianism")."""
    graph = py_trees.display.dot_tree(root)
    graph.set_name(name)
    return str(graph.to_string())


class EventRenderer:
    """Prints agent events as a readable transcript: streamed answer text, tool calls and their
    results, retries, approvals. Events of namespaced agents (trees) are prefixed `[ns]`."""

    def __init__(
        self,
        console: Console,
        root: py_trees.behaviour.Behaviour | None = None,
        *,
        namespace: str | None = None,
        live: bool = False,
        models: list[str] | None = None,
    ) -> None:
        self.console = console
        self.models = list(models or [])
        """What answers (`models._describe`), said once, on the run's first line."""
        self.root = root
        self.namespace = namespace
        """The agent's own namespace: its events get no prefix."""
        self.live = live
        self.shown: set[str] = set()
        """Answers already displayed in full without a prefix (not repeated at the end)."""
        self._segment: str | None = None  # namespace of the text being streamed, if any
        self._streaming = False
        self._buffer = ""
        self._thinking: str | None = None
        """The reasoning being streamed (None: none is), and `_thinker` its namespace."""
        self._thinker: str | None = None
        self._reasoned = False
        """Reasoning was streamed for the current reply (its `reply.completed` repeats it whole)."""

    # ------------------------------------------------------------------ events
    def handle(self, event: AnyEvent) -> None:
        """Render one event (a type the catalogue does not declare renders nothing)."""
        typed = ev.typed(event)
        match typed:
            case ev.ReasoningDelta(delta=delta):
                self._think(typed.namespace, delta)
            case ev.ReplyStarted():
                self._reasoned = False
            case ev.TextDelta(delta=delta):
                self._end_thought()
                self._delta(typed.namespace, delta)
            case ev.TextReset(reasoning_discarded=discarded):
                self._end_thought(void=bool(discarded))
                self._void_segment(typed.namespace)
            case ev.ReplyCompleted(reasoning=reasoning):
                self._end_thought()
                self._end_segment()
                if reasoning and not self._reasoned:  # not streamed: the whole reasoning, once
                    self.console.print(self._prefixed(typed.namespace, _thought(reasoning.strip())))
                self._reasoned = False
            case None:
                pass
            case _:
                line = self._line(typed)
                if line is not None:
                    self._end_thought()
                    self._end_segment()
                    self.console.print(self._prefixed(typed.namespace, line))

    def _line(self, event: ev.CatalogueEvent) -> Text | None:
        """The transcript's line for `event` (None: it has none)."""
        match event:
            case ev.RunStarted() | ev.RunResumed():
                verb = "resumed" if isinstance(event, ev.RunResumed) else "started"
                thread = event.thread_id
                line = f"▶ run {verb}" + (f" (thread {thread})" if thread else "")
                if self.models:
                    line += " · model: " + "; ".join(self.models)
                    self.models = []
                return Text(line, style="dim")
            case ev.ToolCallStarted(tool=tool, arguments=arguments):
                return Text(f"→ {tool}({shorten(arguments)})", style="cyan")
            case ev.ToolCallCompleted(output=output):
                return Text(f"← {shorten(output)}", style="green")
            case ev.ToolCallFailed(tool=tool, denied=denied, error=error):
                return Text(f"✗ {tool} {'denied' if denied else 'failed'}: {shorten(error)}", style="red")
            case ev.ModelCallRetry(model=model, delay=delay, error=error):
                error = shorten(error.split("; ", 1)[0])  # its hint: in `error:`
                return Text(f"↻ retrying {model} in {delay:.1f}s: {error}", style="yellow")
            case ev.ModelCallFailure(attempts=attempts):  # why: once, in the run's `error:` line
                return Text(
                    f"✗ model call failed after {attempts} attempt{'s' if attempts != 1 else ''}", style="red"
                )
            case ev.InterruptionRequested():  # every kind's wait (approval.requested: the same, older)
                return _interruption_line(event)
            case ev.InterruptionDecided(kind="question", id=interruption_id, answer=answer):
                return Text(f"✓ answered {interruption_id}: {answer.get('action')}", style="yellow")
            case ev.InterruptionDecided(id=interruption_id, answer=answer):
                verdict = "✓ approved" if answer.get("approved") else "✗ denied"
                edited = answer.get("arguments")
                edits = f" with corrected arguments {shorten(edited)}" if edited is not None else ""
                return Text(f"{verdict}: {interruption_id}{edits}", style="yellow")
            case ev.SupervisorPlanned(sub_questions=questions):  # presets._supervisor
                return _plan_line(questions, "sub-question(s)")
            case ev.SupervisorFollowUps(follow_ups=questions):
                return _plan_line(questions, "follow-up(s)")
            case ev.CriticReview(accept=accept, critique=critique, rerun=rerun):
                verdict = "accepted" if accept else f"rejected: {shorten(critique)}"
                return Text(f"◆ critic {verdict}" + (" (re-run)" if rerun else ""), style="magenta")
            case _:
                return None

    def _prefix(self, namespace: str | None) -> str:
        return f"[{namespace}] " if namespace and namespace != self.namespace else ""

    def _prefixed(self, namespace: str | None, line: Text) -> Text:
        out = Text()
        out.append(self._prefix(namespace), style="dim")
        out.append_text(line)
        return out

    def _delta(self, namespace: str | None, delta: str) -> None:
        if self._streaming and self._segment != namespace:
            self._end_segment()
        if not self._streaming:
            self._streaming, self._segment, self._buffer = True, namespace, ""
            if not self.live and self._prefix(namespace):
                self.console.print(Text(self._prefix(namespace), style="dim"), end="")
        self._buffer += delta
        if not self.live:
            self.console.print(Text(delta), end="")
            self.console.file.flush()

    def _think(self, namespace: str | None, delta: str) -> None:
        """A piece of the model's reasoning: dimmed, after a `thinking:` label (see the module)."""
        if not delta:
            return
        self._end_segment()
        if self._thinking is not None and self._thinker != namespace:
            self._end_thought()
        self._reasoned = True
        if self._thinking is None:
            self._thinking, self._thinker = "", namespace
            if not self.live:
                self.console.print(self._prefixed(namespace, _thought("")), end="")
        self._thinking += delta
        if not self.live:
            self.console.print(Text(delta, style="dim"), end="")
            self.console.file.flush()

    def _end_thought(self, *, void: bool = False) -> None:
        """Finish the reasoning being streamed: end its line, or print it above the live view;
        `void` (the attempt was cut off): the live view drops it, printed text is marked."""
        thought, self._thinking = self._thinking, None
        if thought is None:
            return
        if self.live:
            if thought.strip() and not void:
                self.console.print(self._prefixed(self._thinker, _thought(thought.strip())))
            return
        if not thought.endswith("\n"):
            self.console.print()
        if void:
            note = Text("↺ cut off mid-stream: the reasoning above is discarded", style="yellow")
            self.console.print(self._prefixed(self._thinker, note))

    def _void_segment(self, namespace: str | None) -> None:
        """A model call's attempt failed mid-stream: its text is void (a retry streams anew).
        The live view drops it; printed text cannot be taken back, so it is marked as cut off."""
        if not self._streaming or self._segment != namespace:
            return
        printed = not self.live and bool(self._buffer)
        if self.live:
            self._buffer = ""  # never printed above the live view
        self._end_segment(void=True)
        if printed:
            note = Text("↺ cut off mid-stream: the text above is discarded", style="yellow")
            self.console.print(self._prefixed(namespace, note))

    def _end_segment(self, *, void: bool = False) -> None:
        """Finish the text being streamed: end its line, or print it above the live view. The
        agent's own streamed text counts as shown, whichever node streamed it (the loop's reply or
        the synthesis), so `finish` does not print the same answer again; `void` text does not."""
        if not self._streaming:
            return
        if not void and not self._prefix(self._segment):
            self.shown.add(self._buffer.strip())
        if self.live:
            if self._buffer.strip():
                self.console.print(self._prefixed(self._segment, Text(self._buffer.strip())))
        elif not self._buffer.endswith("\n"):
            self.console.print()
        self._streaming, self._segment, self._buffer = False, None, ""

    # ------------------------------------------------------------------ live view
    def __rich__(self) -> RenderableType:
        """The live area: the tree's node statuses and the reply being streamed."""
        parts: list[RenderableType] = []
        if self.root is not None:
            parts.append(tree_view(self.root, statuses=True))
        if self._thinking:
            parts.append(self._prefixed(self._thinker, _thought(self._thinking)))
        if self._streaming and self._buffer:
            parts.append(self._prefixed(self._segment, Text(self._buffer)))
        return Group(*parts)

    # ------------------------------------------------------------------ end of run
    def finish(self, result: AgentResult, usage: Usage) -> None:
        """The answer (unless already streamed) and one summary line."""
        self._end_thought()
        self._end_segment()
        answer = (result.final_answer or "").strip()
        if result.status == "success" and answer and answer not in self.shown:
            self.console.print(Text(answer, style="bold"))
        self.console.print(summary_line(result, usage))


def _interruption_line(event: ev.InterruptionRequested) -> Text:
    """`⏸` and what the run waits for: a call's approval (or a client's result), a breakpoint's
    pause, a question to a person."""
    payload, ident = event.request, event.id
    if event.kind == "question":
        return Text(
            f"⏸ {payload.get('server')} asks: {shorten(payload.get('message'))} (id {ident})", style="yellow"
        )
    if event.kind == "breakpoint":
        return Text(f"⏸ paused at a breakpoint: {payload.get('reason')} (id {ident})", style="yellow")
    reason = payload.get("reason")
    why = f": {reason}" if reason else ""
    call = f"{payload.get('tool')}({shorten(payload.get('arguments'))})"
    return Text(f"⏸ {call} needs approval (id {ident}){why}", style="yellow")


def _plan_line(questions: list[str], what: str) -> Text:
    return Text(f"◆ {len(questions)} {what}: " + " | ".join(questions), style="magenta")


def _thought(reasoning: str) -> Text:
    """The model's reasoning as the transcript shows it: a `thinking:` label, dimmed text."""
    text = Text("thinking: ", style="dim italic")
    text.append(reasoning, style="dim")
    return text


def summary_line(result: AgentResult, usage: Usage) -> Text:
    """`✓ success · 2 iterations · 30 tokens in 2 model calls · 0.05 s`."""
    icon, style = {"success": ("✓", "green"), "suspended": ("⏸", "yellow")}.get(result.status, ("✗", "red"))
    parts = [f"{icon} {result.status}"]
    termination = result.termination or {}
    if result.status == "failure" and termination.get("reason"):
        parts.append(str(termination["reason"]))
    iterations = termination.get("iterations")
    if isinstance(iterations, int):
        parts.append(f"{iterations} iteration{'s' if iterations != 1 else ''}")
    calls = f" in {usage.calls} model call{'s' if usage.calls != 1 else ''}" if usage.calls else ""
    parts.append(f"{usage.total_tokens} tokens{calls}")
    parts.append(f"{result.elapsed:.2f} s")
    return Text(" · ".join(parts), style=style)
