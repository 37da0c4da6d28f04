"""create_research_node: a researcher with a hard tool-call cap and a compressed, cited answer.

Sequence(memory=True)
  ├─ Selector(memory=True) <name>.Research
  │    ├─ LoopUntilSuccess   the ReAct loop, with `<name>.Cap` before its tool executor
  │    └─ <name>.CapReached  SUCCESS when the loop ended at the cap (termination `tool_cap`)
  └─ <name>.Compress    one structured call: {summary, sources} → `final_answer`

A limit written only in the prompt is a wish: a model may keep searching. `ToolCap` counts the
calls of this run in code (the history after the question; the `think` tool is free, it fetches
nothing) and answers every call beyond `max_tool_calls` with a refusal observation instead of
running it; that batch ends the loop (termination `tool_cap`, whatever the model asks next) and
the research goes on to the compress step with what it has. The compress step then turns the whole
transcript into a short summary citing its sources ([n]), which is what a parent tree reads
(`<namespace>.final_answer`): the raw tool output stays in the researcher's namespace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import py_trees
from py_trees.common import Status
from pydantic import BaseModel, Field

from ..bt import _composites as composites
from ..bt._hooks import rebound
from ..bt._node import Node
from ..guard._enforcer import GuardEnforcer
from ..models._client import ModelClient
from ..models._keys import StateKeys
from ..models._messages import Message, ToolCall, human, system
from ..nodes._context import with_date
from ..nodes._prompt_call import PromptCall
from ..nodes._results import attach_reader
from ..nodes._tool_outcome import ToolOutcome
from ..nodes._trace import read_trace, render_steps, run_start
from ..state._contract import StateContract, declare
from ..telemetry import events as ev
from ..tools._base import Tool
from ..tools._provider import ToolProvider
from ..tools.builtin import think
from .react import create_react_node
from .react._config import ReActConfig
from .react._state import react_reader

CAP_REFUSAL = "Tool call limit reached"
"""Opens the observation of a refused call (and marks it as not run when counting)."""

FREE_TOOLS = frozenset({"think"})
"""Tools that do not count against the cap: they record a reflection and fetch nothing."""

DEFAULT_RESEARCH_PROMPT = (
    "You are a careful researcher (today is {date}). Search for the facts the question needs; "
    "after each search, use the `think` tool to note what you learned and what is still "
    "missing. You have at most {max_tool_calls} tool calls (think is free): a simple question "
    "needs {simple_tool_calls} at most, use them all only for a complex one. Then answer with "
    "the facts found and where they come from."
)

DEFAULT_COMPRESS_PROMPT = (
    "Compress a research transcript into a concise answer for the person who asked. Keep only "
    "facts the findings support; cite them as [1], [2], ... and list those sources (a URL or "
    "title from the findings) in the same order."
)


class ResearchSummary(BaseModel):
    """The compressed result of a research run."""

    summary: str = Field(description="A concise answer to the question, citing sources as [1], [2], ...")
    sources: list[str] = Field(default_factory=list, description="The cited sources, in citation order.")

    def render(self) -> str:
        if not self.sources:
            return self.summary
        listed = "\n".join(f"[{n}] {source}" for n, source in enumerate(self.sources, 1))
        return f"{self.summary}\n\nSources:\n{listed}"


def create_research_node(
    name: str = "Research",
    namespace: str | None = None,
    *,
    model_client: ModelClient,
    tools: Sequence[Tool | Callable[..., Any]] | None = None,
    tool_providers: Sequence[ToolProvider] | None = None,
    max_tool_calls: int = 5,
    config: ReActConfig | None = None,
    constraints: GuardEnforcer | None = None,
    compress_prompt: str | None = None,
) -> composites.Sequence:
    """Build a research subtree (see the module docstring). The `think` tool is added to `tools`;
    `config.system_prompt` replaces the research prompt (`{max_tool_calls}` and
    `{simple_tool_calls}`, the simple questions' budget, about half, are filled in)."""
    if max_tool_calls < 0:
        raise ValueError(f"max_tool_calls must be >= 0, got {max_tool_calls}")
    config = config or ReActConfig()
    simple = max(1, (max_tool_calls + 1) // 2)  # document 004: 2-3 for simple, up to 5 for complex
    prompt = (
        (config.system_prompt or DEFAULT_RESEARCH_PROMPT)
        .replace("{max_tool_calls}", str(max_tool_calls))
        .replace("{simple_tool_calls}", str(min(simple, max_tool_calls)))
    )
    given = list(tools or ())
    if not any(getattr(t, "name", None) == think.name for t in given):
        given.append(think)
    loop = create_react_node(
        f"{name}.Agent",
        namespace,
        model_client=model_client,
        tools=given,
        tool_providers=tool_providers,
        constraints=constraints,
        config=config.model_copy(update={"system_prompt": prompt}),
    )
    body = loop.decorated
    cap = ToolCap(f"{name}.Agent.Cap", max_tool_calls, keys=config.keys, namespace=namespace)
    cap.parent = body
    body.children.insert(1, cap)  # between the model call and the tool executor
    compress = Compress(
        f"{name}.Compress",
        model_client,
        namespace=namespace,
        config=config,
        instructions=compress_prompt or DEFAULT_COMPRESS_PROMPT,
    )
    loop.abort_condition = CapAbort(loop, loop.abort_condition, max_tool_calls, config.keys, namespace)
    ended = CapReached(f"{name}.CapReached", keys=config.keys, namespace=namespace)
    research = py_trees.composites.Selector(f"{name}.Research", memory=True, children=[loop, ended])
    root = composites.Sequence(name, memory=True, children=[research, compress])
    root.namespace = namespace  # type: ignore[attr-defined]  # the Agent reads its input/answer here
    keys = config.keys
    needed = (keys.messages, keys.final_answer, keys.output, keys.usage, keys.error)
    owner = f"research agent {name!r}" + (f" (namespace {namespace!r})" if namespace else "")
    declare(root, StateContract(owner, needed, namespace, reads=(keys.messages,)))
    return attach_reader(root, react_reader(keys))


def calls_made(messages: Sequence[Message], free: frozenset[str] = FREE_TOOLS) -> int:
    """Tool calls of the latest run that ran and count against the cap."""
    start = run_start(messages) + 1
    names: dict[str, str] = {}
    count = 0
    for message in messages[start:]:
        for call in message.tool_calls or ():
            names[call.id] = call.name
        if message.role == "tool" and names.get(message.tool_call_id or "") not in free:
            count += not (message.content or "").startswith(CAP_REFUSAL)
    return count


class ToolCap(Node):
    """Refuses the calls of a batch beyond `max_tool_calls` for the run (see the module
    docstring): their outcome is written before the executor runs, so it runs only the rest."""

    def __init__(
        self,
        name: str,
        max_tool_calls: int,
        *,
        keys: StateKeys | None = None,
        namespace: str | None = None,
        free: frozenset[str] = FREE_TOOLS,
    ) -> None:
        super().__init__(name)
        self.max_tool_calls = max_tool_calls
        self.keys = keys or StateKeys()
        self.namespace = namespace
        self.free = free

    def show_details(self) -> str:
        return f"max {self.max_tool_calls} tool calls ({', '.join(sorted(self.free))} free)"

    def update(self) -> Status:
        sm, keys, ns = self.state_manager, self.keys, self.namespace
        actions: list[ToolCall] = sm.get(keys.actions, ns)
        if not actions:
            return Status.SUCCESS
        done: dict[str, ToolOutcome] = sm.get(keys.tool_results, ns)
        used = calls_made(sm.get(keys.messages, ns), self.free)
        used += sum(
            1
            for c in actions
            if c.id in done and c.name not in self.free and not done[c.id].content.startswith(CAP_REFUSAL)
        )
        refused: dict[str, ToolOutcome] = {}
        for call in actions:
            if call.id in done or call.name in self.free:
                continue
            if used < self.max_tool_calls:
                used += 1
                continue
            refused[call.id] = ToolOutcome(
                content=f"{CAP_REFUSAL} ({self.max_tool_calls} calls): {call.name} was not run; "
                "the research ends with what was found."
            )
        if refused:
            sm.update({keys.tool_results: refused}, ns)
            self.emit(ev.ToolCapReached, max_tool_calls=self.max_tool_calls, refused=sorted(refused))
        return Status.SUCCESS


CAP_REASON = "tool_cap"
"""The termination reason of a research loop ended by its tool-call cap."""


class CapAbort:
    """The research loop's abort condition: its ReAct one, then the cap — the latest batch of
    observations holds a refusal (the model asked beyond `max_tool_calls`). Only the tool
    messages after the last assistant message are read: per-iteration work stays flat."""

    __slots__ = ("inner", "keys", "loop", "max_tool_calls", "namespace")

    def __init__(
        self,
        loop: Node | Any,
        inner: Callable[[], Any] | None,
        max_tool_calls: int,
        keys: StateKeys,
        namespace: str | None,
    ) -> None:
        self.loop, self.inner, self.max_tool_calls = loop, inner, max_tool_calls
        self.keys, self.namespace = keys, namespace

    def for_node(self, loop: Any) -> CapAbort:
        return CapAbort(loop, rebound(self.inner, loop), self.max_tool_calls, self.keys, self.namespace)

    def __call__(self) -> Any:
        verdict = self.inner() if self.inner is not None else None
        if verdict:
            return verdict
        messages: list[Message] = self.loop.state_manager.get(self.keys.messages, self.namespace)
        for message in reversed(messages):
            if message.role != "tool":
                return None
            if (message.content or "").startswith(CAP_REFUSAL):
                return {"reason": CAP_REASON, "max_tool_calls": self.max_tool_calls}
        return None


class CapReached(Node):
    """SUCCESS when the research loop ended at its cap, so the compress step still runs; the
    research then completed (termination `completed`, with `tool_cap` saying where it stopped)."""

    def __init__(self, name: str, *, keys: StateKeys, namespace: str | None) -> None:
        super().__init__(name)
        self.keys, self.namespace = keys, namespace

    def update(self) -> Status:
        sm, key, ns = self.state_manager, self.keys.termination, self.namespace
        termination: dict[str, Any] = dict(sm.get(key, ns) or {})
        if termination.pop("reason", None) != CAP_REASON:
            return Status.FAILURE
        cap = termination.pop("max_tool_calls", None)
        sm.update({key: {"reason": "completed", **termination, CAP_REASON: cap}}, ns)
        return Status.SUCCESS


class Compress(PromptCall):
    """The compress step: the question, the tool calls and their results, and the researcher's
    answer become a `ResearchSummary`; its rendering replaces `final_answer` (`output` holds the
    structured value)."""

    def __init__(
        self,
        name: str,
        model_client: ModelClient,
        *,
        namespace: str | None,
        config: ReActConfig,
        instructions: str,
    ) -> None:
        super().__init__(name, model_client, namespace=namespace, config=config, schema=ResearchSummary)
        self.instructions = instructions

    def prompt(self) -> list[Message]:
        sm, keys, ns = self.state_manager, self.keys, self.namespace
        trace = read_trace(sm.get(keys.messages, ns))
        found = [step for step in trace.steps if step.name not in FREE_TOOLS]
        findings = render_steps(found, 2000) or "(none)"
        answer = sm.get(keys.final_answer, ns) or "(none: stopped at its tool-call limit)"
        text = (
            f"Question: {trace.request()}\n\nFindings (tool calls and results):\n{findings}"
            f"\n\nThe researcher's answer: {answer}"
        )
        return [system(with_date(self.instructions)), human(text)]

    def accept(self, value: Any, text: str) -> dict[str, Any]:
        keys = self.keys
        return {keys.final_answer: value.render(), keys.output: value}
