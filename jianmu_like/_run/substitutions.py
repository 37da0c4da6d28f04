"""Substitution without code: a node's result forced, a model's reply or a tool's output
scripted, by rules.

BehaviorTree.CPP lets a robot developer swap a node for a test double from a JSON file, without
rebuilding the tree; this is that for an agent. A rule names a node (its index path "0.1.2", its
name or its slash path, as breakpoints do) and either the `status` it reports — SUCCESS or
FAILURE — without being ticked (no `initialise()`, so no model or tool call starts under it), or,
for a model node (an `AgentLLMNode`), the `reply` its calls get without asking the model (a text,
tool calls, or both); or a rule names a tool (optionally with `arguments` a call must contain)
and the `output` its calls return without calling it.

Rules apply to the agent's next runs and resumes, and to replays. A rule naming a node the tree
lacks, or a tool no tool node of the tree offers, is refused when set (`UnknownTarget`, a
ValueError naming it), never kept as a rule that silently never fires. Each substitution is
published as a `debug.substituted` event, so the console and recordings see what was scripted.
The hooks answer inside the recorder's: a recording holds no model or tool call for a scripted
one, only its events, and keeps the rules on its run lines, so a replay applies them and answers
the same (a replay's agent with rules of its own applies those instead).

A node is forced through the breakpoints' watched class (`_run.breakpoints`): its `tick()` asks
first, so only forced nodes are swapped, and a tree without rules ticks exactly as before. A
tool is scripted through the tool-call hook (`tools._hooks`), a reply through the model-call hook
(`models._hooks`): the seams durable runs and the replay player use.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import py_trees
from py_trees.common import Status
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from .._base.sources import Loc, SourceError, describe_errors, load_yaml
from ..models._hooks import ModelCall, model_call_hook, use_model_call_hook
from ..models._messages import Message, ToolCall, ai
from ..models._types import ModelEventCallback, ModelRequest, ModelResponse
from ..nodes._llm import AgentLLMNode
from ..telemetry import events as ev
from ..telemetry._hub import TelemetryHub
from ..tools._base import Tool
from ..tools._call_context import current_tool_call
from ..tools._hooks import ToolInvoke, tool_call_hook, use_tool_call_hook
from .breakpoints import UnknownTarget as UnknownTarget
from .breakpoints import _tool_names, any_marked, node_ids, unmark, watch
from .recording import node_of


class ScriptedCall(BaseModel):
    """A tool call a scripted reply asks for."""

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, Any] = {}


class SubstitutedReply(BaseModel):
    """A model's scripted reply: a text answer, tool calls, or both."""

    model_config = ConfigDict(extra="forbid")

    content: str | None = None
    tool_calls: list[ScriptedCall] = []

    @model_validator(mode="after")
    def _something(self) -> SubstitutedReply:
        if self.content is None and not self.tool_calls:
            raise ValueError("a scripted reply gives content, tool_calls, or both")
        return self

    def message(self) -> Message:
        calls = [
            ToolCall(id=f"sub_{i + 1}", name=call.name, arguments=call.arguments)
            for i, call in enumerate(self.tool_calls)
        ]
        return ai(self.content, calls)


class Substitution(BaseModel):
    """One rule: `{node, status}` (the node reports `status` unticked) or `{tool, output,
    arguments?}` (a call of `tool` whose arguments contain `arguments` returns `output`)."""

    model_config = ConfigDict(extra="forbid")

    node: str | None = None
    """A node's index path ("0.0.1", as `GET /api/agent` names it), its name, or its slash path."""
    status: Literal["SUCCESS", "FAILURE"] | None = None
    """What the node reports instead of ticking."""
    tool: str | None = None
    """A tool's name: its calls (those matching `arguments`) return `output` uncalled."""
    arguments: dict[str, Any] | None = None
    """Only calls whose arguments hold these keys with these values (None: every call)."""
    output: str | None = None
    """The tool's scripted output, as the model reads it."""
    reply: str | SubstitutedReply | None = None
    """What the model node's calls answer, uncalled: a text answer, or `{content?, tool_calls:
    [{name, arguments}]}`."""

    @model_validator(mode="before")
    @classmethod
    def _upper_status(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("status"), str):
            data = {**data, "status": data["status"].upper()}
        return data

    @model_validator(mode="after")
    def _one_target(self) -> Substitution:
        if (self.node is None) == (self.tool is None):
            raise ValueError("a substitution names exactly one of node= or tool=")
        if self.node is not None:
            if (self.status is None) == (self.reply is None):
                raise ValueError(
                    f"substitution of node {self.node!r} gives exactly one of status: (SUCCESS or "
                    "FAILURE, forced unticked) or reply: (its model's scripted answer)"
                )
            if self.output is not None or self.arguments is not None:
                raise ValueError("output= and arguments= belong to a tool substitution, not a node's")
        else:
            if self.output is None:
                raise ValueError(f"substitution of tool {self.tool!r} needs output: the text it returns")
            if self.status is not None or self.reply is not None:
                raise ValueError("status= and reply= belong to a node substitution; a tool's gives output=")
        return self

    def matches(self, tool: str, arguments: dict[str, Any]) -> bool:
        """Whether a call of `tool` with `arguments` is this rule's."""
        wanted = self.arguments or {}
        return tool == self.tool and all(k in arguments and arguments[k] == v for k, v in wanted.items())


class Substitutions:
    """An agent's substitution rules (`set([...])`), applied to its runs and replays."""

    def __init__(self, root: py_trees.behaviour.Behaviour, telemetry: TelemetryHub) -> None:
        self._root = root
        self._hub = telemetry
        self.items: list[Substitution] = []

    def set(self, items: Iterable[Substitution | dict[str, Any]]) -> None:
        """Replace the rules (each validated against the tree: a rule naming a node or a tool it
        lacks is a ValueError naming it, and nothing changes)."""
        checked = [Substitution.model_validate(item) for item in items]
        ids = {key for node_id, path, node in node_ids(self._root) for key in (node_id, path, node.name)}
        tools, complete = _tool_names(self._root)
        for i, rule in enumerate(checked):
            if rule.node is not None and rule.node not in ids:
                raise UnknownTarget(i, f"no node {rule.node!r} in tree {self._root.name!r}")
            if rule.reply is not None and not any(
                isinstance(node, AgentLLMNode) and rule.node in (node_id, path, node.name)
                for node_id, path, node in node_ids(self._root)
            ):
                raise UnknownTarget(
                    i, f"node {rule.node!r} is not a model node (AgentLLMNode): no reply to script"
                )
            if rule.tool is not None and complete and rule.tool not in tools:
                offered = ", ".join(sorted(tools)) or "none"
                raise UnknownTarget(i, f"no tool {rule.tool!r} in the tree (tools: {offered})")
        self.items = checked

    def forced(self) -> dict[str, str]:
        """Index path -> forced status of each node a rule names (for the console's drawing)."""
        found: dict[str, str] = {}
        for node_id, path, node in node_ids(self._root):
            for rule in self.items:
                if rule.node in (node_id, path, node.name) and rule.status is not None:
                    found[node_id] = rule.status
        return found

    def install(self, root: py_trees.behaviour.Behaviour) -> None:
        """Mark the nodes a rule forces (watched, so their `tick()` asks first); clear the others.
        Runs after the breakpoints' `install`, which unwatches every node it has no use for."""
        if not self.items and not any_marked():
            return  # no live node carries a forced result: nothing to clear
        for node_id, path, node in node_ids(root):
            status = next(
                (
                    r.status
                    for r in self.items
                    if r.status is not None and r.node in (node_id, path, node.name)
                ),
                None,
            )
            if status is None:
                if getattr(node, "_jianmu_forced", None) is not None:
                    node._jianmu_forced = None  # type: ignore[attr-defined]
                    if getattr(type(node), "_jianmu_watched", None) is None:
                        unmark(node)  # unwatched by the breakpoints' install just before
                continue
            node._jianmu_forced = (Status[status], path, self._hub)  # type: ignore[attr-defined]
            watch(node)

    @contextmanager
    def model(self) -> Iterator[None]:
        """Answer the model calls of the nodes a `reply` rule names with the scripted reply
        (around the hooks already there)."""
        replies: dict[str, SubstitutedReply] = {}
        for rule in self.items:
            if rule.reply is not None:
                for node_id, path, node in node_ids(self._root):
                    if rule.node in (node_id, path, node.name):
                        reply = rule.reply
                        replies[path] = (
                            reply if isinstance(reply, SubstitutedReply) else SubstitutedReply(content=reply)
                        )
        if not replies:
            yield
            return
        outer = model_call_hook()
        hub = self._hub

        async def hook(
            call: ModelCall, request: ModelRequest, on_event: ModelEventCallback | None
        ) -> ModelResponse:
            path = node_of(on_event)
            reply = replies.get(path) if path is not None else None
            if reply is None:
                return await (
                    outer(call, request, on_event) if outer is not None else call(request, on_event)
                )
            if hub.active:
                hub.emit(
                    ev.Substituted,
                    node=path,
                    target="model",
                    name=path or "",
                    output=reply.content,
                    tool_calls=[c.model_dump() for c in reply.tool_calls] or None,
                )
            return ModelResponse(message=reply.message(), model="substituted", finish_reason="stop")

        with use_model_call_hook(hook):
            yield

    @contextmanager
    def tools(self) -> Iterator[None]:
        """Answer matching tool calls made inside with the rules' outputs (around the hooks
        already there: a replay's or a durable run's)."""
        rules = [r for r in self.items if r.tool is not None]
        if not rules:
            yield
            return
        outer = tool_call_hook()
        hub = self._hub

        async def hook(invoke: ToolInvoke, tool: Tool, arguments: dict[str, Any]) -> Any:
            for rule in rules:
                if rule.matches(tool.name, arguments):
                    call = current_tool_call()
                    if call is not None and call.emit is not None:  # as the calling node's event
                        call.emit(
                            ev.Substituted,
                            target="tool",
                            name=tool.name,
                            output=rule.output,
                            arguments=arguments,
                        )
                    elif hub.active:
                        hub.emit(
                            ev.Substituted,
                            target="tool",
                            name=tool.name,
                            output=rule.output,
                            arguments=arguments,
                        )
                    return rule.output
            return await (outer(invoke, tool, arguments) if outer is not None else invoke(tool, arguments))

        with use_tool_call_hook(hook):
            yield

    def load(self, path: str | Path) -> None:
        """Replace the rules with a rules file's (YAML or JSON, like BehaviorTree.CPP's
        substitution files): a list of rules, or a mapping whose `substitutions:` key holds
        one. Every problem is a `SourceError` at its line (`rules.yaml:4: substitutions.1: ...`),
        a rule naming a node or a tool the tree lacks included; nothing changes then."""
        doc = load_yaml(path)
        data = doc.data
        prefix: Loc = ()
        if isinstance(data, dict) and set(data) == {"substitutions"}:
            data, prefix = data["substitutions"], ("substitutions",)
        if not isinstance(data, list):
            raise SourceError(
                [f"{doc.where(())}: a rules file holds a list of rules, or `substitutions:` and one"]
            )
        rules: list[Substitution] = []
        problems = list(doc.problems)
        for i, item in enumerate(data):
            try:
                rules.append(Substitution.model_validate(item))
            except ValidationError as exc:
                problems += describe_errors(exc, where=doc.where, model=Substitution, prefix=(*prefix, i))
        if problems:
            raise SourceError(problems)
        try:
            self.set(rules)
        except UnknownTarget as exc:
            where = doc.where((*prefix, exc.index))
            raise SourceError([f"{where}: substitutions.{exc.index}: {exc.problem}"]) from None
