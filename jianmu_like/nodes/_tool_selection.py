"""Tool selection: an agent with many tools shows the model only the few a task needs.

Twenty schemas on every call cost tokens and make the model pick worse. Once per run, before
the first model call of the loop, `ToolSelectionNode` asks the model (one `structured_llm_call`)
which tools the question needs, from a compact catalogue: each tool's name and the first line of
its description. The chosen names go to the run-scoped `selected_tools` key; `AgentLLMNode`
(given `selection_key`) then sends only those tools' schemas — and describes only those in its
system prompt — for the rest of the run (`ToolView`).

Selection can only narrow what the model is shown, never break a run: misspelt names in a pick
are dropped (the valid ones are kept, the dropped ones reported in the `completed` event); a
model error, a reply naming no known tool (after `structured_llm_call`'s own retries), or an
empty pick falls back to the full set. A tool forced by the agent's `tool_choice` is always
kept. A call the model makes to a tool outside the selection (it may know the tool from an
earlier turn of the conversation) still runs: the executor holds the full set, and forbidding
tools is the guard's job, not the selection's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from py_trees.common import Status
from pydantic import BaseModel, Field

from .._base.config import ToolSelectionConfig, get_config
from ..bt._async_behaviour import AsyncBehaviour
from ..models._client import ModelClient
from ..models._messages import Message, human, system
from ..models._structured import structured_llm_call
from ..telemetry import events as ev
from ..tools._toolset import ToolSet
from ._settings import ModelCallConfig

PHASE = "selecting_tools"
"""The `phase` of this node's `phase` events (status started | completed | failed)."""

DESCRIPTION_CHARS = 120
"""Each catalogue line keeps this much of a tool's description."""

SELECTION_PROMPT = (
    "You choose the tools an assistant will be given for a task. Below is the catalogue of "
    "available tools (name: what it does). Pick the tools that are needed or likely useful for "
    "the task, at most {max_tools}, most relevant first. Use the exact names from the catalogue."
)


class ToolPick(BaseModel):
    """The selection call's answer."""

    tools: list[str] = Field(description="Names of the chosen tools, exactly as in the catalogue.")


def catalogue(tools: ToolSet) -> str:
    """One line per tool: its name and the first line of its description, cut."""
    lines = []
    for item in tools:
        first = (item.description or "").strip().split("\n", 1)[0].strip()
        if len(first) > DESCRIPTION_CHARS:
            first = first[:DESCRIPTION_CHARS] + "…"
        lines.append(f"- {item.name}: {first}" if first else f"- {item.name}")
    return "\n".join(lines)


def selection_messages(question: str, tools: ToolSet, max_tools: int) -> list[Message]:
    """The selection request: the instructions with the catalogue, then the task."""
    prompt = SELECTION_PROMPT.format(max_tools=max_tools) + "\n\nTools:\n" + catalogue(tools)
    return [system(prompt), human(f"Task:\n{question}")]


def last_question(messages: Sequence[Message]) -> str:
    """The latest user message: what this run is asked to do."""
    for message in reversed(messages):
        if message.role == "user" and message.content:
            return message.content
    return ""


def forced_tool(config: ModelCallConfig) -> str | None:
    """The tool a `tool_choice` of the config forces, if it names one."""
    choice = config.tool_choice if config.tool_choice is not None else config.extra_params.get("tool_choice")
    function = choice.get("function") if isinstance(choice, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    return name if isinstance(name, str) else None


class _Picker:
    """`parse_fn` of the selection call: the chosen names that are in the catalogue (unknown
    ones are dropped and remembered in `ignored`; a pick with no known name is a ValueError,
    which `structured_llm_call` re-asks once in JSON and text)."""

    def __init__(self, names: Sequence[str], max_tools: int) -> None:
        self.names = set(names)
        self.max_tools = max_tools
        self.ignored: list[str] = []

    def __call__(self, raw: dict[str, Any]) -> list[str]:
        pick = ToolPick.model_validate(raw)
        self.ignored = [name for name in pick.tools if name not in self.names]
        chosen = list(dict.fromkeys(n for n in pick.tools if n in self.names))[: self.max_tools]
        if not chosen and self.ignored:
            raise ValueError(
                f"unknown tool name(s): {', '.join(map(repr, self.ignored))}; use catalogue names"
            )
        if not chosen:
            raise ValueError("no tool chosen")
        return chosen


class ToolSelectionNode(AsyncBehaviour):
    """Choose this run's tools once (module docstring); always SUCCESS.

    Writes the chosen names to `selected_tools` (every name when the agent has no more than
    `threshold` tools, when selection is off, or when it fails), adds the call's usage to the
    run's, and emits `phase` events: started (total), then completed (total, chosen, level,
    usage) or failed (total, chosen = every name, error). Later ticks of the run find the key
    set and return at once.
    """

    def __init__(
        self,
        name: str,
        model_client: ModelClient,
        tools: ToolSet,
        *,
        config: ModelCallConfig | None = None,
        namespace: str | None = None,
        selection: ToolSelectionConfig | None = None,
    ) -> None:
        super().__init__(name)
        self.config = config or ModelCallConfig()
        self.settings: ToolSelectionConfig = selection or get_config().tools.selection.model_copy()
        self.keys = self.config.keys
        self.namespace = namespace
        self.tools = tools
        resilience = self.config.resilience
        self.model_client = model_client.with_resilience(resilience) if resilience else model_client

    def update_sync(self) -> Status | None:
        if self.state_manager.get(self.keys.selected_tools, self.namespace) is not None:
            return Status.SUCCESS  # chosen earlier in this run
        return None

    async def update_async(self) -> Status:
        sm, keys, ns, settings = self.state_manager, self.keys, self.namespace, self.settings
        tools = self.tools
        if not tools.ready:
            await tools.ensure_ready()
        names = tools.names()
        if not settings.enabled or len(names) <= settings.threshold:
            sm.update({keys.selected_tools: names}, ns)
            return Status.SUCCESS
        self.emit(ev.Phase, phase=PHASE, status="started", total=len(names))
        config = self.config
        picker = _Picker(names, settings.max_tools)
        result = await structured_llm_call(
            self.model_client,
            selection_messages(last_question(sm.get(keys.messages, ns)), tools, settings.max_tools),
            ToolPick,
            parse_fn=picker,
            default_value=None,
            name="select_tools",
            model=config.model,
            temperature=config.temperature,
            timeout=config.timeout,
            on_event=self.emit,
        )
        chosen: list[str] | None = result.value
        forced = forced_tool(config)
        if chosen is not None and forced in names and forced not in chosen:
            chosen.append(forced)  # a `tool_choice` naming a tool must find it among the schemas
        if chosen is None:
            why = "; ".join(f"{level}: {error}" for level, error in result.failures.items())
            self.feedback_message = f"tool selection failed, every tool is offered: {why}"
            sm.update({keys.selected_tools: names, keys.usage: result.usage}, ns)
            self.emit(ev.Phase, phase=PHASE, status="failed", total=len(names), chosen=names, error=why)
            return Status.SUCCESS
        sm.update({keys.selected_tools: chosen, keys.usage: result.usage}, ns)
        self.emit(
            ev.Phase,
            phase=PHASE,
            status="completed",
            total=len(names),
            chosen=chosen,
            ignored=picker.ignored,
            level=result.level,
            usage=result.usage.model_dump(),
        )
        return Status.SUCCESS


class ToolView:
    """The tools a model call shows: the whole set, or the selected part of it.

    The part is built once per selection (and tool-set version) and reused, so the prompt
    builder's per-set cache keeps working across the iterations of a run."""

    __slots__ = ("_cached",)

    def __init__(self) -> None:
        self._cached: tuple[tuple[int, tuple[str, ...]], ToolSet] | None = None

    def visible(self, tools: ToolSet, selected: Sequence[str] | None) -> ToolSet:
        """`tools` restricted to `selected` (all of them when None, or when it names them all)."""
        if not selected or len(selected) >= len(tools):
            return tools
        key = (tools.version, tuple(selected))
        cached = self._cached
        if cached is not None and cached[0] == key:
            return cached[1]
        part = ToolSet([found for name in selected if (found := tools.get(name)) is not None])
        self._cached = (key, part)
        return part
