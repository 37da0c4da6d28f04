"""DynamicParallel: a parallel composite whose children are built per run, from the state.

A supervisor decides at run time how many sub-agents to start; a static `Parallel` cannot say
that. At the start of each run `plan(node)` returns the run's items (JSON data, e.g. one
sub-question each; it may also seed the state for them), `build(index, item)` makes one subtree
per item, and the node ticks them all on every tick — their async work overlaps — until every
child has finished. The children stay attached after the run, so a live view shows them.

Checkpoints: the items and each child's progress are this node's own progress entry (the
generic progress walk does not descend into it, see `dynamic_children`), so a run suspended
inside a child — an approval — is rebuilt from the items and resumes in another process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Literal

import py_trees
from py_trees.common import Status

from .node import LEAN_TICKS, NodeMixin, tick_node, walk
from .progress import capture_progress, restore_progress

Plan = Callable[["DynamicParallel"], list[Any]]
"""The run's items, read (and seeded) in the state when the node starts."""

Build = Callable[[int, Any], py_trees.behaviour.Behaviour]
"""The subtree for item `index` (0-based); called again with the same items on a restore."""

Policy = Literal["all_done", "all_success"]


class DynamicParallel(NodeMixin, py_trees.composites.Composite):
    """Runs one subtree per planned item concurrently.

    `policy` "all_done" (default) succeeds once every child finished, whatever each child's
    status: the parent reads the results from the state (a supervisor gathers failed sub-agents
    too). "all_success" fails if any child failed. No items: SUCCESS at once. `max_children`
    caps the items (the rest are dropped, and said so in `feedback_message`).
    """

    dynamic_children = True
    """Tells the progress walk (bt.progress) that this node saves its children itself."""

    def __init__(
        self,
        name: str,
        plan: Plan,
        build: Build,
        *,
        policy: Policy = "all_done",
        max_children: int | None = None,
        namespace: str | None = None,
        describe: str = "",
    ) -> None:
        if max_children is not None and max_children < 1:
            raise ValueError(f"max_children must be >= 1, got {max_children}")
        super().__init__(name=name, children=[])
        self.plan = plan
        self.build = build
        self.policy: Policy = policy
        self.max_children = max_children
        self.namespace = namespace
        self.describe = describe
        """Shown by `jianmu-like show` before any run (the children do not exist yet)."""
        self.items: list[Any] = []

    # ------------------------------------------------------------------ children
    def _attach(self, items: list[Any]) -> None:
        """Replace the children with freshly built subtrees for `items`, bound like the rest."""
        for child in self.children:
            child.parent = None
        self.items = items
        self.children = []
        for index, item in enumerate(items):
            child = self.build(index, item)
            child.parent = self
            self.children.append(child)
        state_manager = self.__dict__.get("state_manager")
        for child in self.children:
            for node in walk(child):
                if state_manager is not None:
                    setattr(node, "state_manager", state_manager)  # noqa: B010
                setattr(node, "telemetry", self.telemetry)  # noqa: B010

    def _start(self) -> None:
        items = list(self.plan(self))
        dropped = 0
        if self.max_children is not None and len(items) > self.max_children:
            dropped = len(items) - self.max_children
            items = items[: self.max_children]
        self._attach(items)
        self.feedback_message = f"{len(items)} child(ren)" + (f", {dropped} dropped" if dropped else "")
        self.emit("parallel.started", children=[c.name for c in self.children], dropped=dropped)

    # ------------------------------------------------------------------ ticking
    def tick(self) -> Iterator[py_trees.behaviour.Behaviour]:
        self.tick_lean()
        yield self

    def tick_lean(self) -> None:
        if self.status is not Status.RUNNING:
            for child in self.children:
                if child.status is not Status.INVALID:
                    child.stop(Status.INVALID)
            self._start()
        running = False
        for child in self.children:
            if child.status is Status.RUNNING or child.status is Status.INVALID:
                tick_node(child)
            running = running or child.status is Status.RUNNING
        if running:
            self.status = Status.RUNNING
            return
        failed = any(child.status is Status.FAILURE for child in self.children)
        self.stop(Status.FAILURE if failed and self.policy == "all_success" else Status.SUCCESS)

    def stop(self, new_status: Status = Status.INVALID) -> None:
        if new_status == Status.INVALID:
            for child in self.children:
                if child.status != Status.INVALID:
                    child.stop(new_status)
        self.terminate(new_status)
        self.status = new_status

    # ------------------------------------------------------------------ checkpoints
    def progress(self) -> dict[str, Any]:
        """The items and every child's own progress (see bt.progress)."""
        return {
            "items": self.items,
            "children": [capture_progress(child) for child in self.children],
        }

    def restore_progress(self, entry: dict[str, Any]) -> None:
        """Rebuild the children from the saved items and put each back where it stood."""
        self._attach(list(entry.get("items") or []))
        saved = entry.get("children") or []
        for child, progress in zip(self.children, saved, strict=False):
            restore_progress(child, progress)

    def reset_run(self) -> None:
        """Back to as-built (bt.clone): no children until the next run plans them."""
        for child in self.children:
            child.parent = None
        self.children = []
        self.items = []


LEAN_TICKS.add(DynamicParallel.tick)
