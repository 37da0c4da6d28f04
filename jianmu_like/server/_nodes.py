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
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import py_trees

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


class NodeWatcher:
    """Publishes the node statuses of one run's tree that changed since it last looked."""

    def __init__(self, publish: Callable[[list[NodeChange]], None]) -> None:
        self.publish = publish
        self._seen: dict[str, str] = {}
        self._runner: ReactiveRunner | None = None
        self._hook: TickHook | None = None
        self._previous: TickHook | None = None

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

    def look(self, active: str | None = None) -> None:
        """Publish what changed; `active` is the path of a node emitting an event right now."""
        if self._runner is None:
            return
        working: set[str] = set()
        if active:
            parts = active.split("/")
            working = {"/".join(parts[: i + 1]) for i in range(len(parts))}
        changes: list[NodeChange] = []
        for node_id, path, node in node_entries(self._runner.root):
            status = "RUNNING" if path in working else node.status.name
            if self._seen.get(node_id) != status:
                self._seen[node_id] = status
                changes.append({"id": node_id, "name": node.name, "status": status})
        if changes:
            self.publish(changes)


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
