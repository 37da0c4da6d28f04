"""Breakpoints: a run pauses before a node ticks, as Groot2 pauses a BehaviorTree.CPP tree.

A breakpoint names a node (its index path "0.1.2", its name, or its slash path) or a tool (the run
pauses before the tool node that would call it). When a matching node is about to be entered
(ticked while not RUNNING: before its `initialise()`, so before it starts any model or tool call),
it does not tick: it reports RUNNING and the run waits on an `Approval` of kind `breakpoint` —
the one interruption path every wait of a run takes, so the run suspends, is checkpointed (a
paused run with a store survives a restart paused), is listed and decided like an approval, and
nothing is held open meanwhile. Its ancestors that run one child at a time (a memory sequence, a
loop) tick nothing else; below a parallel, the siblings of the paused node still tick.

The decision says how to go on: approve continues (with `arguments` `{"step": true}` the run
pauses again at the next node entered, and `{"state": {...}}` first replaces those state keys,
checked against the state schema when the decision is made); deny skips the node as a FAILURE.

Nodes are watched by swapping their class for a subclass whose `tick()` asks first (the class
keeps its name), and only while the agent has breakpoints or a paused node: a run without
breakpoints ticks exactly as before, at no cost.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from typing import Any

import py_trees
from py_trees.common import Status
from pydantic import BaseModel, ConfigDict, Field, model_validator

from .._keys import StateKeys
from ..guard._approvals import Approval, ApprovalDecision
from ..nodes._tool_executor import ToolExecutor
from ..state._manager import StateManager
from ..telemetry import events as ev
from ..telemetry._hub import TelemetryHub

KIND = "breakpoint"


class BreakpointRule(BaseModel):
    """Where a run pauses: before `node` ticks, or before the tool node that would call `tool`."""

    model_config = ConfigDict(extra="forbid")

    node: str | None = None
    """A node's index path ("0.0.1", as `GET /api/agent` names it), its name, or its slash path."""
    tool: str | None = None
    """A tool's name: the run pauses before the node that would call it."""
    status: str | None = Field(default=None, exclude=True)
    event: str | None = Field(default=None, exclude=True)

    @model_validator(mode="after")
    def _one_target(self) -> BreakpointRule:
        if self.status is not None or self.event is not None:
            field = "status" if self.status is not None else "event"
            raise ValueError(
                f"breakpoints on a node's {field} are not implemented: "
                "break on a node (node=) or a tool (tool=)"
            )
        if (self.node is None) == (self.tool is None):
            raise ValueError("a breakpoint names exactly one of node= or tool=")
        return self


def node_ids(root: py_trees.behaviour.Behaviour) -> Iterator[tuple[str, str, py_trees.behaviour.Behaviour]]:
    """(index path, slash path, node) of every node, parents first."""
    pending = [("0", root.name, root)]
    while pending:
        node_id, path, node = pending.pop()
        yield node_id, path, node
        for i in range(len(node.children) - 1, -1, -1):
            child = node.children[i]
            pending.append((f"{node_id}.{i}", f"{path}/{child.name}", child))


_WATCHED: dict[type, type] = {}


def _watched_class(cls: type[py_trees.behaviour.Behaviour]) -> type:
    """`cls` with a `tick()` that asks the node's breakpoints first (same name, cached)."""
    found = _WATCHED.get(cls)
    if found is not None:
        return found
    original = cls.tick

    def tick(self: Any) -> Iterator[py_trees.behaviour.Behaviour]:
        gate: Breakpoints | None = getattr(self, "_jianmu_breakpoints", None)
        verdict = gate.ask(self) if gate is not None else "tick"
        if verdict == "hold":
            self.status = Status.RUNNING
            yield self
            return
        if verdict == "skip":
            self.status = Status.FAILURE
            yield self
            return
        if _forced(self):  # a substitution rule's result (`_run.substitutions`)
            yield self
            return
        yield from original(self)

    watched = type(cls.__name__, (cls,), {"tick": tick, "__module__": cls.__module__, "_jianmu_watched": cls})
    watched.__qualname__ = cls.__qualname__
    _WATCHED[cls] = watched
    return watched


def _forced(node: Any) -> bool:
    """If a substitution rule forces `node` (`_run.substitutions`), report its status unticked,
    publish it as a `debug.substituted` event, and say so."""
    forced = getattr(node, "_jianmu_forced", None)
    if forced is None:
        return False
    status, path, hub = forced
    node.status = status
    if hub.active:
        hub.emit(ev.Substituted, node=path, target="node", name=path, status=status.name)
    return True


class Breakpoints:
    """An agent's breakpoints, and the pauses they made (`Approval`s of kind `breakpoint`)."""

    def __init__(
        self, state_manager: StateManager, keys: StateKeys, telemetry: TelemetryHub | None = None
    ) -> None:
        self._sm = state_manager
        self._keys = keys
        self._telemetry = telemetry
        """Where a pause and its decision are published (`interruption.requested`/`decided`)."""
        self.items: list[BreakpointRule] = []
        self.stepping = False
        """Pause at the next node entered (a `step` decision)."""
        self._ids: dict[int, tuple[str, str]] = {}

    def set(self, items: Iterable[BreakpointRule | dict[str, Any]]) -> None:
        """Replace the breakpoints (each validated: a bad one is a ValueError, nothing changes)."""
        checked = [BreakpointRule.model_validate(item) for item in items]
        if checked:
            keys = (self._keys.pending_approvals, self._keys.approval_decisions)
            try:
                for key in keys:
                    self._sm.get(key)
            except KeyError:
                raise ValueError(
                    f"breakpoints need a state that keeps approvals ({', '.join(keys)}): a pause is "
                    f"one; state schema {self._sm.schema.__name__} has no such fields"
                ) from None
        self.items = checked

    def paused(self) -> list[Approval]:
        """The pauses waiting for a decision (top-level state)."""
        try:
            pending: list[Approval] = self._sm.get(self._keys.pending_approvals) or []
        except KeyError:  # a state without approvals (a plain tree's own schema): never paused
            return []
        return [a for a in pending if a.kind == KIND]

    def install(self, root: py_trees.behaviour.Behaviour) -> None:
        """Watch every node of `root` while there is anything to break on (else unwatch)."""
        # Walked at every run, even with nothing to break on: a pooled tree (a Conversation's)
        # may come back watched by another conversation's breakpoints, and is unwatched here.
        active = bool(self.items or self.stepping or self.paused())
        for node_id, path, node in node_ids(root):
            cls = type(node)
            base = getattr(cls, "_jianmu_watched", None)
            if active:
                self._ids[id(node)] = (node_id, path)
                node._jianmu_breakpoints = self  # type: ignore[attr-defined]
                if base is None:
                    node.__class__ = _watched_class(cls)
            else:
                node._jianmu_breakpoints = None  # type: ignore[attr-defined]  # a pooled tree's old gate
                if base is not None:
                    node.__class__ = base

    def ask(self, node: py_trees.behaviour.Behaviour) -> str:
        """ "tick", "hold" (paused, waiting) or "skip" (denied: the node fails unticked)."""
        node_id, path = self._ids.get(id(node), ("", node.name))
        mine = [a for a in self.paused() if a.tool == path]
        if mine:
            approval = mine[0]
            decisions: dict[str, ApprovalDecision] = self._sm.get(self._keys.approval_decisions) or {}
            decision = decisions.get(approval.id)
            if decision is None:
                return "hold"
            self._release(approval.id)
            if self._telemetry is not None:
                answer = decision.model_dump(mode="json")
                self._telemetry.emit(
                    ev.InterruptionDecided,
                    node=path,
                    id=approval.id,
                    kind=KIND,
                    tool=None,
                    call_id=None,
                    answer=answer,
                )
            if not decision.approved:
                return "skip"
            edits = decision.arguments or {}
            self._edit(edits.get("state") or {})
            self.stepping = bool(edits.get("step"))
            node.status = Status.INVALID  # held without initialise(): enter it now
            return "tick"
        if node.status == Status.RUNNING or not self._matches(node, node_id, path):
            return "tick"
        self.stepping = False
        self._pause(node, node_id, path)
        return "hold"

    def _matches(self, node: py_trees.behaviour.Behaviour, node_id: str, path: str) -> bool:
        if self.stepping:
            return True
        for item in self.items:
            if item.node is not None and item.node in (node_id, node.name, path):
                return True
            if item.tool is not None and isinstance(node, ToolExecutor):
                actions = self._sm.get(self._keys.actions, getattr(node, "namespace", None)) or []
                if any(getattr(call, "name", None) == item.tool for call in actions):
                    return True
        return False

    def _pause(self, node: py_trees.behaviour.Behaviour, node_id: str, path: str) -> None:
        schema = self._sm.schema.model_json_schema()
        parameters = {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "step": {"type": "boolean"},
                "state": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": schema.get("properties", {}),
                },
            },
            "$defs": schema.get("$defs", {}),
        }
        approval = Approval(
            id=f"bp_{uuid.uuid4().hex[:12]}",
            tool=path,
            arguments={"node": node_id, "type": type(node).__name__},
            reason=f"breakpoint before {node.name} ({node_id})",
            policy="breakpoint",
            parameters=parameters,
            kind=KIND,
        )
        pending = list(self._sm.get(self._keys.pending_approvals) or [])
        self._sm.set(self._keys.pending_approvals, [*pending, approval])
        if self._telemetry is not None:
            payload = approval.model_dump(mode="json")
            self._telemetry.emit(
                ev.InterruptionRequested,
                node=path,
                id=approval.id,
                kind=KIND,
                tool=None,
                call_id=None,
                request=payload,
            )

    def _edit(self, changes: dict[str, Any]) -> None:
        """Replace state keys (checked against the schema when decided; typed here)."""
        if not changes:
            return
        sm = self._sm
        typed = sm.schema.model_validate({**sm.state.model_dump(by_alias=True), **changes})
        names = {(field.alias or name): name for name, field in sm.schema.model_fields.items()}
        for key in changes:
            sm.set(key, getattr(typed, names.get(key, key)))

    def _release(self, approval_id: str) -> None:
        keys, sm = self._keys, self._sm
        pending = [a for a in sm.get(keys.pending_approvals) or [] if a.id != approval_id]
        sm.set(keys.pending_approvals, pending)
        decisions = dict(sm.get(keys.approval_decisions) or {})
        decisions.pop(approval_id, None)
        sm.set(keys.approval_decisions, decisions)
