"""Breakpoints: a run pauses before a node ticks, as Groot2 pauses a BehaviorTree.CPP tree.

A breakpoint names a node (its index path "0.1.2", its name, or its slash path) or a tool (the run
pauses before the tool node that would call it), a status (SUCCESS or FAILURE, of any node or of
one `node`) or an event type of the telemetry catalogue (`tool.call.failed`). A status or an event
is seen while a node ticks (or, for an event, while a call runs between ticks), when no pause may
come: the run pauses before the NEXT node entered after it, the pause saying what triggered it
(the first trigger seen since the last pause; one seen when the run ends or suspends for another
reason is dropped). When a matching node is about to be entered
(ticked while not RUNNING: before its `initialise()`, so before it starts any model or tool call),
it does not tick: it reports RUNNING and the run waits on an `Approval` of kind `breakpoint` —
the one interruption path every wait of a run takes, so the run suspends, is checkpointed (a
paused run with a store survives a restart paused), is listed and decided like an approval, and
nothing is held open meanwhile. The whole tree pauses with it: while a pause waits for its
decision, no other node is entered either — a node about to be entered (a sibling below a
parallel, the next child of a sequence whose running child just finished, a node of a subtree a
DynamicParallel builds at run time: `on_children` watches those) is held the same way,
unticked and reported RUNNING, and entered once no pause waits (the tick that applies the
decision enters the paused node and the nodes held beside it). A node already running when the
pause came (a parallel sibling's model or tool call in flight) is not cut off: it ticks on, so
its call finishes and its result is written to the state (nothing lost, nothing run twice), but
what it would enter next is held.

The decision says how to go on: approve continues (with `arguments` `{"step": true}` the run
pauses again at the next node entered, and `{"state": {...}}` first replaces those state keys,
checked against the state schema when the decision is made); deny skips the node as a FAILURE.

Nodes are watched by swapping their class for a subclass whose `tick()` asks first (the class
keeps its name), and only while the agent has breakpoints or a paused node: a run without
breakpoints ticks exactly as before, at no cost.
"""

from __future__ import annotations

import difflib
import functools
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal

import py_trees
from py_trees.common import Status
from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from ..bt._hooks import hooks_of
from ..errors import JianmuError
from ..guard._approvals import Approval, ApprovalDecision
from ..models._keys import StateKeys
from ..nodes._tool_executor import ToolExecutor
from ..state._manager import StateManager
from ..telemetry import _interruption_events as interruption_events
from ..telemetry import events as ev
from ..telemetry._hub import TelemetryHub
from .trees import tree_toolsets

KIND = "breakpoint"


class BreakpointRule(BaseModel):
    """Where a run pauses: before `node` ticks, before the tool node that would call `tool`, or
    before the next node entered after a node finished with `status` (of `node`, if named too) or
    after an `event` of that type was published."""

    model_config = ConfigDict(extra="forbid")

    node: str | None = None
    """A node's index path ("0.0.1", as `GET /api/agent` names it), its name, or its slash path."""
    tool: str | None = None
    """A tool's name: the run pauses before the node that would call it."""
    status: Literal["SUCCESS", "FAILURE"] | None = None
    """A node finished with this status (any node, or `node`): pause before the next node entered."""
    event: str | None = None
    """An event type of the telemetry catalogue: pause before the next node entered after one."""

    @model_validator(mode="before")
    @classmethod
    def _upper_status(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("status"), str):
            data = {**data, "status": data["status"].upper()}
        return data

    @field_validator("event")
    @classmethod
    def _known_event(cls, name: str | None) -> str | None:
        if name is None or name in ev.CATALOGUE:
            return name
        close = difflib.get_close_matches(name, list(ev.CATALOGUE), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ValueError(f"unknown event type {name!r} (not in the telemetry catalogue){hint}")

    @model_validator(mode="after")
    def _one_target(self) -> BreakpointRule:
        if self.event is not None:
            if self.node is not None or self.tool is not None or self.status is not None:
                raise ValueError("an event breakpoint names only event=")
        elif self.status is not None:
            if self.tool is not None:
                raise ValueError("a status breakpoint names status= and, optionally, node= (not tool=)")
        elif (self.node is None) == (self.tool is None):
            raise ValueError("a breakpoint names exactly one of node=, tool=, status= or event=")
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

_MARKED: dict[int, weakref.ref[py_trees.behaviour.Behaviour]] = {}
"""The live nodes some run marked (a gate, a forced result or a watched class), by id: while there
is none, a run with no rule walks no tree (an install costs nothing when no rule was ever set).
Keyed by id, not the node, so a node class that defines `__eq__` without `__hash__` still works."""


def mark(node: py_trees.behaviour.Behaviour) -> None:
    """Note that `node` carries a gate, a forced result or a watched class (until `unmark`)."""
    key = id(node)
    if key not in _MARKED:
        _MARKED[key] = weakref.ref(node, lambda _gone: _MARKED.pop(key, None))


def unmark(node: py_trees.behaviour.Behaviour) -> None:
    _MARKED.pop(id(node), None)


def marked(node: py_trees.behaviour.Behaviour) -> bool:
    return id(node) in _MARKED


def any_marked() -> bool:
    """Whether some live node may still carry a gate, a forced result or a watched class."""
    return bool(_MARKED)


def watch(node: py_trees.behaviour.Behaviour) -> None:
    """Give `node` the watched class (its `tick()` asks its gates first), and mark it."""
    cls = type(node)
    if getattr(cls, "_jianmu_watched", None) is None:
        node.__class__ = _watched_class(cls)
    mark(node)


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
        else:
            yield from original(self)
        if gate is not None and self.status in (Status.SUCCESS, Status.FAILURE):
            gate.finished(self)

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


class UnknownTarget(ValueError, JianmuError):
    """A breakpoint or substitution rule naming a node or a tool the tree lacks (`index`: the
    rule's place in its list, `rules`: which list): refused when set, never a rule that silently
    never applies."""

    def __init__(self, index: int, problem: str, rules: str = "substitutions") -> None:
        super().__init__(f"{rules}[{index}]: {problem}")
        self.index = index
        self.problem = problem
        self.rules = rules


def _tool_names(root: py_trees.behaviour.Behaviour) -> tuple[set[str], bool]:
    """The tools the tree's nodes offer, and whether that is all of them (a set fed by
    providers, such as MCP servers, is known only once it is ready)."""
    names: set[str] = set()
    complete = True
    for tools in tree_toolsets(root):
        if tools.ready:
            names.update(tools.names())
        else:
            complete = False
    return names, complete


def check_targets(
    root: py_trees.behaviour.Behaviour, rules: list[tuple[str | None, str | None]], kind: str
) -> None:
    """Refuse the first rule (node, tool) naming a node or a tool `root` lacks (`UnknownTarget`).
    A tool is checked only when every tool set of the tree is known (an MCP server's once it is
    listed)."""
    ids = {key for node_id, path, node in node_ids(root) for key in (node_id, path, node.name)}
    tools, complete = _tool_names(root)
    for i, (node, tool) in enumerate(rules):
        if node is not None and node not in ids:
            raise UnknownTarget(i, f"no node {node!r} in tree {root.name!r}", kind)
        if tool is not None and complete and tool not in tools:
            offered = ", ".join(sorted(tools)) or "none"
            raise UnknownTarget(i, f"no tool {tool!r} in the tree (tools: {offered})", kind)


class Breakpoints:
    """An agent's breakpoints, and the pauses they made (`Approval`s of kind `breakpoint`)."""

    def __init__(
        self,
        state_manager: StateManager,
        keys: StateKeys,
        telemetry: TelemetryHub | None = None,
        root: py_trees.behaviour.Behaviour | None = None,
    ) -> None:
        self._root = root
        """The tree the rules' nodes and tools are checked against (when given)."""
        self._sm = state_manager
        self._keys = keys
        self._telemetry = telemetry
        """Where a pause and its decision are published (`interruption.requested`/`decided`)."""
        self.items: list[BreakpointRule] = []
        self.stepping = False
        """Pause at the next node entered (a `step` decision)."""
        self._ids: dict[int, tuple[str, str]] = {}
        self._trigger: dict[str, str] | None = None
        """What a status or event rule saw (the first since the last pause): the next node
        entered pauses, its pause saying this."""
        self._unsubscribe: Callable[[], None] | None = None
        """Ends the hub subscription that watches for the event rules' types (while any)."""
        self._own = False
        """True while publishing a pause's own events (never a trigger: it would pause again)."""
        self._held: set[int] = set()
        """Nodes (by id) held unentered because a pause waited when they were due (`ask`)."""

    def set(self, items: Iterable[BreakpointRule | dict[str, Any]]) -> None:
        """Replace the breakpoints (each validated: a bad one is a ValueError, nothing changes; one
        naming a node or a tool the tree lacks is an `UnknownTarget`)."""
        checked = [BreakpointRule.model_validate(item) for item in items]
        if self._root is not None:
            check_targets(self._root, [(item.node, item.tool) for item in checked], "breakpoints")
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
        self._trigger = None
        self._watch_events()

    def _watch_events(self) -> None:
        """Subscribe to the hub while an event rule needs it (so no rule, no cost)."""
        wanted = any(item.event is not None for item in self.items)
        if wanted and self._unsubscribe is None and self._telemetry is not None:
            self._unsubscribe = self._telemetry.subscribe(self._seen)
        elif not wanted and self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _seen(self, event: Any) -> None:
        """A published event: an event rule of its type arms a pause at the next node entered."""
        if self._own or self._trigger is not None:
            return
        if any(item.event == event.type for item in self.items):
            self._trigger = {"event": event.type, "node": event.node or ""}

    def finished(self, node: py_trees.behaviour.Behaviour) -> None:
        """`node` ticked to SUCCESS or FAILURE: a status rule for it arms a pause at the next node
        entered (a pause cannot come now: the node's tick is over, its parent's is not)."""
        if self._trigger is not None:
            return
        node_id, path = self._ids.get(id(node), ("", node.name))
        status = node.status.name
        for item in self.items:
            if item.status == status and item.node in (None, node_id, node.name, path):
                self._trigger = {"status": status, "node": path, "node_id": node_id}
                return

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
        self._trigger = None  # seen in an earlier run (or before a suspension): not this one's
        if not active:
            self._held.clear()  # no pause: nothing is held
            if not any_marked():
                return  # no live node carries a gate or a watched class: nothing to unwatch
        for node_id, path, node in node_ids(root):
            if active:
                self._watch(node, node_id, path)
            else:
                base = getattr(type(node), "_jianmu_watched", None)
                # A pooled tree's old gate goes; removed, not set to None: one more attribute
                # would take the loop's nodes past CPython's inline-attribute limit (see
                # tests/nodes/test_react_nodes.py), and every run without breakpoints pays that.
                # Deleted as attributes, never through `node.__dict__`: reading an instance's
                # `__dict__` moves its attributes out of the inline values into a real dict for
                # good (CPython 3.11), and every later `self.x` of the node pays a dict lookup.
                if getattr(node, "_jianmu_breakpoints", None) is not None:
                    del node._jianmu_breakpoints  # type: ignore[attr-defined]
                if getattr(node, "on_children", None) is not None:
                    del node.on_children  # type: ignore[attr-defined]
                if base is not None:
                    node.__class__ = base
                if getattr(node, "_jianmu_forced", None) is None:
                    unmark(node)  # else a substitution's, cleared by its own install next

    def _watch(self, node: py_trees.behaviour.Behaviour, node_id: str, path: str) -> None:
        self._ids[id(node)] = (node_id, path)
        node._jianmu_breakpoints = self  # type: ignore[attr-defined]
        watch(node)
        if hooks_of(node).runtime_children:  # a DynamicParallel: its children come later
            node.on_children = self._watch_children  # type: ignore[attr-defined]

    def _watch_children(self, parent: py_trees.behaviour.Behaviour) -> None:
        """Watch the subtrees `parent` built at run time (a supervisor's sub-agents), named
        below it as `GET /api/agent` would name them: a pause holds them as any other node."""
        parent_id, parent_path = self._ids.get(id(parent), ("", parent.name))
        for i, child in enumerate(parent.children):
            for node_id, path, node in node_ids(child):
                self._watch(node, f"{parent_id}.{i}{node_id[1:]}", f"{parent_path}/{path}")

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
            # the nodes it held, entered when next ticked (known by id: the pause leaves the state)
            held_paths = self._held_by(approval)
            self._held.update(nid for nid, (_, p) in self._ids.items() if p in held_paths)
            self._release(approval.id)
            if self._telemetry is not None:
                answer = decision.model_dump(mode="json")
                self._own = True  # a pause's own events never arm an event rule
                try:
                    interruption_events.decided(
                        functools.partial(self._telemetry.emit, node=path),
                        id=approval.id,
                        kind=KIND,
                        tool_call=(None, None),
                        answer=answer,
                    )
                finally:
                    self._own = False
            if not decision.approved:
                return "skip"
            edits = decision.arguments or {}
            self._edit(edits.get("state") or {})
            self.stepping = bool(edits.get("step"))
            node.status = Status.INVALID  # held without initialise(): enter it now
            return "tick"
        held = id(node) in self._held
        if held and node.status != Status.RUNNING:  # halted meanwhile: entered afresh if ticked
            self._held.discard(id(node))
            held = False
        elif (
            not held
            and node.status == Status.RUNNING
            and any(path in self._held_by(a) for a in self.paused())
        ):
            held = True  # held before a restart: restored RUNNING, yet never entered
            self._held.add(id(node))
        if node.status == Status.RUNNING and not held:
            return "tick"  # already entered: its work in flight finishes
        if self._waiting():
            self._hold(node, path)  # the whole tree pauses: not entered while a pause waits
            return "hold"
        if held:
            self._held.discard(id(node))
            node.status = Status.INVALID  # held without initialise(): enter it now
        trigger = self._matches(node, node_id, path)
        if trigger is None:
            return "tick"
        self.stepping = False
        self._trigger = None
        self._pause(node, node_id, path, trigger)
        return "hold"

    @staticmethod
    def _held_by(pause: Approval) -> list[str]:
        held = pause.arguments.get("held")
        return held if isinstance(held, list) else []

    def _hold(self, node: py_trees.behaviour.Behaviour, path: str) -> None:
        """Hold `node` unentered, and name it in the waiting pause's `arguments.held` (saved with
        the pause: a run restored from its checkpoint knows the node, restored RUNNING, was never
        entered, and enters it once the pause is decided)."""
        self._held.add(id(node))
        pending: list[Approval] = list(self._sm.get(self._keys.pending_approvals) or [])
        decisions: dict[str, ApprovalDecision] = self._sm.get(self._keys.approval_decisions) or {}
        for i, pause in enumerate(pending):
            if pause.kind == KIND and pause.id not in decisions:
                held = self._held_by(pause)
                if path not in held:
                    arguments = {**pause.arguments, "held": [*held, path]}
                    pending[i] = pause.model_copy(update={"arguments": arguments})
                    self._sm.set(self._keys.pending_approvals, pending)
                return

    def _waiting(self) -> bool:
        """A pause waits for its decision (one decided is applied when its node is reached)."""
        pauses = self.paused()
        if not pauses:
            return False
        decisions: dict[str, ApprovalDecision] = self._sm.get(self._keys.approval_decisions) or {}
        return any(pause.id not in decisions for pause in pauses)

    def _matches(self, node: py_trees.behaviour.Behaviour, node_id: str, path: str) -> dict[str, Any] | None:
        """What makes `node` pause as it is entered (the pause's `trigger`), or None."""
        if self._trigger is not None:
            return self._trigger
        if self.stepping:
            return {"step": True}
        for item in self.items:
            if item.status is not None:
                continue  # seen as a node finishes (`finished`), not as one is entered
            if item.node is not None and item.node in (node_id, node.name, path):
                return {"node": item.node}
            if item.tool is not None and isinstance(node, ToolExecutor):
                actions = self._sm.get(self._keys.actions, getattr(node, "namespace", None)) or []
                if any(getattr(call, "name", None) == item.tool for call in actions):
                    return {"tool": item.tool}
        return None

    def _pause(
        self, node: py_trees.behaviour.Behaviour, node_id: str, path: str, trigger: dict[str, Any]
    ) -> None:
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
            arguments={"node": node_id, "type": type(node).__name__, "trigger": trigger},
            reason=f"breakpoint before {node.name} ({node_id}){_after(trigger)}",
            policy="breakpoint",
            parameters=parameters,
            kind=KIND,
        )
        pending = list(self._sm.get(self._keys.pending_approvals) or [])
        self._sm.set(self._keys.pending_approvals, [*pending, approval])
        if self._telemetry is not None:
            payload = approval.model_dump(mode="json")
            self._own = True  # a pause's own events never arm an event rule
            try:
                interruption_events.requested(
                    functools.partial(self._telemetry.emit, node=path),
                    id=approval.id,
                    kind=KIND,
                    tool_call=(None, None),
                    request=payload,
                )
            finally:
                self._own = False

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


def _after(trigger: dict[str, Any]) -> str:
    """The end of a pause's reason: what armed it, when a status or an event did."""
    if "status" in trigger:
        return f", after {trigger['node']} finished {trigger['status']}"
    if "event" in trigger:
        return f", after event {trigger['event']}" + (f" from {trigger['node']}" if trigger["node"] else "")
    return ""
