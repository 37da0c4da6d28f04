"""DynamicParallel: a parallel composite whose children are built per run, from the state.

A supervisor decides at run time how many sub-agents to start; a static `Parallel` cannot say
that. At the start of each run `plan(node)` reads the run's items from the state (e.g. one
sub-question each), `seed(node, items)` may write what the children start from, and
`build(index, item)` makes one subtree per item; the node ticks them all on every tick — their
async work overlaps — until every child has finished. The children stay attached after the run,
so a live view shows them. An `on_children` callable set on the node (by a run's breakpoints,
`_run.breakpoints`) is called with the node each time its children are built, so they are
watched as the rest of the tree is.

Checkpoints: the children are `runtime_children` (bt._progress): the tree's fingerprint leaves
them out, and a restore calls `rebuild_children()`, which plans again from the restored state
(without seeding), so a run suspended inside a child — an approval — resumes in another process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Literal

import py_trees
from py_trees.common import Status

from ..telemetry import events as ev
from ._node import FAILURE, INVALID, LEAN_TICKS, RUNNING, SUCCESS, NodeMixin, tick_node, walk

Plan = Callable[["DynamicParallel"], list[Any]]
"""The run's items, read from the state (also on a restore, so it must not write)."""

Seed = Callable[["DynamicParallel", list[Any]], None]
"""Writes what the children of a fresh start begin with (not called on a restore)."""

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

    runtime_children = True
    """Tells bt._progress that the children are built per run (see `rebuild_children`)."""

    def __init__(
        self,
        name: str,
        plan: Plan,
        build: Build,
        *,
        seed: Seed | None = None,
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
        self.seed = seed
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
        state_manager = getattr(self, "state_manager", None)  # not `__dict__`: see bt._clone
        for child in self.children:
            for node in walk(child):
                if state_manager is not None:
                    setattr(node, "state_manager", state_manager)  # noqa: B010
                setattr(node, "telemetry", self.telemetry)  # noqa: B010
        on_children = getattr(self, "on_children", None)
        if on_children is not None:  # set by the run's breakpoints (`_run.breakpoints`) to watch them
            on_children(self)

    def _planned(self) -> tuple[list[Any], int]:
        """The items, capped at `max_children`, and how many were dropped."""
        items = list(self.plan(self))
        if self.max_children is None or len(items) <= self.max_children:
            return items, 0
        return items[: self.max_children], len(items) - self.max_children

    def _start(self) -> None:
        items, dropped = self._planned()
        if self.seed is not None:
            self.seed(self, items)
        self._attach(items)
        self.feedback_message = f"{len(items)} child(ren)" + (f", {dropped} dropped" if dropped else "")
        self.emit(ev.ParallelStarted, children=[c.name for c in self.children], dropped=dropped)

    # ------------------------------------------------------------------ ticking
    def tick(self) -> Iterator[py_trees.behaviour.Behaviour]:
        self.tick_lean()
        yield self

    def tick_lean(self) -> None:
        if self.status is not RUNNING:
            for child in self.children:
                if child.status is not INVALID:
                    child.stop(INVALID)
            self._start()
        running = False
        for child in self.children:
            if child.status is RUNNING or child.status is INVALID:
                tick_node(child)
            running = running or child.status is RUNNING
        if running:
            self.status = RUNNING
            return
        failed = any(child.status is FAILURE for child in self.children)
        self.stop(FAILURE if failed and self.policy == "all_success" else SUCCESS)

    def stop(self, new_status: Status = INVALID) -> None:
        if new_status == INVALID:
            for child in self.children:
                if child.status != INVALID:
                    child.stop(new_status)
        self.terminate(new_status)
        self.status = new_status

    def show_details(self) -> str:
        """`describe` while no children were built (the tree views)."""
        return self.describe if not self.children else ""

    # ------------------------------------------------------------------ checkpoints
    def rebuild_children(self) -> None:
        """After a checkpoint's state is restored: the children that run had (bt._progress then
        puts each back where it stood)."""
        self._attach(self._planned()[0])

    def reset_run(self) -> None:
        """Back to as-built (bt._clone): no children until the next run plans them."""
        for child in self.children:
            child.parent = None
        self.children = []
        self.items = []


LEAN_TICKS.add(DynamicParallel.tick)
