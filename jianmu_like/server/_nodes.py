"""Live node statuses of a run's tree, for the console's tree view.

The framework emits no event per node status change (that would cost every tick of every agent),
so the server looks at the tree itself, during a run it serves: after each tick (the runner's
`on_tick` hook, installed at the run's `run.started` / `run.resumed` event, as a `Conversation`
has a runner only while it runs) and at each telemetry event of the run. A node's status is set
when its tick returns, yet most work happens inside a tick or in a node's task (an in-process
model answers within one tick), so at an event the emitting node and its ancestors count as
RUNNING: they are working right then. Only statuses that changed since the last look are
published. Nodes are named by their index path from the root ("0", "0.1", "0.1.2"), the `id`
that `GET /api/agent` gives each node, so a page can match them to the structure it drew.

Looking is cheap, as it runs at every tick and event of every served run (a walk of the whole
tree that spelled every node's id and path each time was a tenth of a busy server's CPU): the
tree is flattened once per run (again only when a composite's children change, as a dynamic
parallel's do), and a look compares each node's status object with the one it saw last,
publishing only those that changed, and the emitting path.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import py_trees
from py_trees.common import Status

from ..bt._conditions import StateCondition
from ..bt._dynamic_parallel import DynamicParallel
from ..bt._runner import ReactiveRunner, TickHook

NodeChange = dict[str, str]
"""`{"id", "name", "status"}` of one node whose status changed."""


def node_entries(root: py_trees.behaviour.Behaviour) -> list[tuple[str, str, py_trees.behaviour.Behaviour]]:
    """(id, path, node) of every node, parents before children; the path joins names with "/"
    as telemetry events name their emitting node."""
    found: list[tuple[str, str, py_trees.behaviour.Behaviour]] = []
    pending = [("0", root.name, root)]
    while pending:
        node_id, path, node = pending.pop()
        found.append((node_id, path, node))
        for i in range(len(node.children) - 1, -1, -1):
            child = node.children[i]
            pending.append((f"{node_id}.{i}", f"{path}/{child.name}", child))
    return found


class _Entry:
    """One node of the flattened tree: its id and path, and what it was at the last look."""

    __slots__ = ("active", "kids", "node", "node_id", "path", "status", "width")

    def __init__(self, node_id: str, path: str, node: py_trees.behaviour.Behaviour) -> None:
        self.node_id, self.path, self.node = node_id, path, node
        self.kids = node.children  # the list object: a composite that replaces it changed
        self.width = len(node.children)
        self.status: Status | None = None
        """The node's status at the last look (None: to be published whatever it is)."""
        self.active = False
        """Shown RUNNING for the event being looked at (it or a descendant emits it)."""


class NodeWatcher:
    """Publishes the node statuses of one run's tree that changed since it last looked."""

    def __init__(self, publish: Callable[[list[NodeChange]], None]) -> None:
        self.publish = publish
        self._seen: dict[str, str] = {}
        """What was published for each node id (the page's truth)."""
        self._runner: ReactiveRunner | None = None
        self._hook: TickHook | None = None
        self._previous: TickHook | None = None
        self._entries: list[_Entry] = []
        self._by_path: dict[str, _Entry] = {}
        self._chains: dict[str, list[_Entry]] = {}
        """Each emitting path's nodes, root first (events come from a few nodes, many times)."""
        self._active: list[_Entry] = []
        """The nodes shown RUNNING for the last event (its node and ancestors)."""

    def attach(self, runner: ReactiveRunner) -> None:
        """Look after every tick of `runner` (chained after its existing hook), and now."""
        if runner is self._runner:
            return
        self.detach()
        previous = runner.on_tick

        def on_tick() -> Awaitable[None] | None:
            writing = previous() if previous is not None else None  # the save, for the runner to await
            self.look()
            return writing

        self._runner, self._hook, self._previous = runner, on_tick, previous
        runner.on_tick = on_tick
        self._flatten()
        self.look()

    def detach(self, *, look: bool = False) -> None:
        """Give the runner its hook back; `look` first publishes the final statuses."""
        if self._runner is None:
            return
        if look:
            self.look()
        if self._runner.on_tick is self._hook:
            self._runner.on_tick = self._previous
        self._runner = self._hook = self._previous = None
        self._entries, self._by_path, self._chains, self._active = [], {}, {}, []

    def look(self, active: str | None = None) -> None:
        """Publish what changed; `active` is the path of a node emitting an event right now."""
        if self._runner is None:
            return
        for entry in self._active:  # no longer working: shown as they are
            entry.active, entry.status = False, None
        self._mark(active)
        changes: list[NodeChange] = []
        if not self._compare(changes):
            self._flatten()  # children built or replaced at run time: ids from the new shape
            self._mark(active)
            self._compare(changes)
        for entry in self._active:
            self._set(entry, "RUNNING", changes)
        if changes:
            self.publish(changes)

    def _flatten(self) -> None:
        assert self._runner is not None
        self._entries = [
            _Entry(node_id, path, node) for node_id, path, node in node_entries(self._runner.root)
        ]
        self._by_path = {entry.path: entry for entry in self._entries}
        self._chains = {}
        self._active = []

    def _mark(self, active: str | None) -> None:
        """Mark the emitting node and its ancestors as working."""
        if not active:
            self._active = []
            return
        chain = self._chains.get(active)
        if chain is None:  # the first event of this node in this run
            parts = active.split("/")
            found = (self._by_path.get("/".join(parts[: i + 1])) for i in range(len(parts)))
            chain = self._chains[active] = [entry for entry in found if entry is not None]
        for entry in chain:
            entry.active = True
        self._active = chain

    def _compare(self, changes: list[NodeChange]) -> bool:
        """Publish the nodes (not working) whose status object is not the one seen last; False
        when a node's children changed (what came before it in the walk stands: an ancestor's or
        an earlier sibling's id does not change with them)."""
        for entry in self._entries:
            node = entry.node
            if node.children is not entry.kids or len(node.children) != entry.width:
                return False
            status = node.status
            if status is not entry.status and not entry.active:
                entry.status = status
                self._set(entry, status.name, changes)
        return True

    def _set(self, entry: _Entry, status: str, changes: list[NodeChange]) -> None:
        if self._seen.get(entry.node_id) != status:
            self._seen[entry.node_id] = status
            changes.append({"id": entry.node_id, "name": entry.node.name, "status": status})


def node_kind(node: py_trees.behaviour.Behaviour) -> str:
    """The kind a drawing gives its own shape, as Groot2 and BehaviorTree.CPP class nodes:
    sequence, selector (fallback), parallel, other composite, decorator, condition, action."""
    if isinstance(node, py_trees.composites.Sequence):
        return "sequence"
    if isinstance(node, py_trees.composites.Selector):
        return "selector"
    if isinstance(node, py_trees.composites.Parallel | DynamicParallel):
        return "parallel"
    if isinstance(node, py_trees.composites.Composite):
        return "composite"
    if isinstance(node, py_trees.decorators.Decorator):
        return "decorator"
    if isinstance(node, StateCondition):
        return "condition"
    return "action"


def tree_json(node: py_trees.behaviour.Behaviour, node_id: str = "0") -> dict[str, Any]:
    """A tree as nested JSON: id (index path, as in the `node` stream), name, node type, kind
    (`node_kind`), status, namespace, children."""
    return {
        "id": node_id,
        "name": node.name,
        "type": type(node).__name__,
        "kind": node_kind(node),
        "status": node.status.name,
        "namespace": getattr(node, "namespace", None),
        "children": [tree_json(child, f"{node_id}.{i}") for i, child in enumerate(node.children)],
    }
