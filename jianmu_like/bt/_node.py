"""Node: the py_trees behaviour base every jianmu_like leaf node derives from.

It carries what the runner binds (`state_manager`, `telemetry`), the node's namespace, and a
lean `tick()`/`stop()`: py_trees formats debug strings on every tick and stop, which showed up as
a measurable share of each ReAct iteration. Semantics are py_trees' own (initialise when not
RUNNING, terminate before the status changes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar, ParamSpec, overload

import py_trees
from py_trees.common import Status

from .._base.speed import fast

if TYPE_CHECKING:
    from ..state._manager import StateManager
    from ..telemetry._hub import TelemetryHub
    from ..telemetry.events import CatalogueEvent

P = ParamSpec("P")

RUNNING = Status.RUNNING
SUCCESS = Status.SUCCESS
FAILURE = Status.FAILURE
INVALID = Status.INVALID
"""py_trees' statuses as module globals, for the code run on every tick: on CPython 3.11 a read
of `Status.RUNNING` is never specialised (the enum's metaclass defines `__getattr__`, so each
read goes through its slot and two type lookups) and costs about ten times a global's."""


class NodeMixin:
    """What the runner binds on a node, plus its path and event helper, and the node hooks:
    the optional methods through which a node takes part in cloning, checkpoints and the tree
    views, with defaults that do nothing, so an override is type-checked against them (see
    "Node hooks" in the trees guide). The kernel reads them from a node's class, once per
    class: a plain py_trees behaviour gets the defaults without deriving from this class, and
    nothing is set on any instance."""

    name: str
    parent: Any
    state_manager: StateManager
    telemetry: TelemetryHub | None = None
    namespace: str | None = None

    # ------------------------------------------------------------------ node hooks (bt._hooks)
    runtime_children: ClassVar[bool] = False
    """The node builds its children per run (`rebuild_children` rebuilds them on a restore)."""

    def on_clone(self) -> None:
        """Called on the copy a tree clone made, after its per-run attributes were reset."""

    def reset_run(self) -> None:
        """Back to the as-built attributes a run changes (a tree cloned or put back in its pool)."""

    def progress(self) -> dict[str, Any]:
        """What a checkpoint keeps of this node besides its status."""
        return {}

    def restore_progress(self, entry: dict[str, Any]) -> None:
        """Take back what `progress` returned (the checkpoint's entry, status included)."""

    def rebuild_children(self) -> None:
        """With `runtime_children`: rebuild the children from the restored state."""

    def show_details(self) -> str:
        """A line for the tree views ("" for nothing)."""
        return ""

    @property
    def path(self) -> str:
        """Slash-separated names from the root to this node (identifies it in events)."""
        names = [self.name]
        parent = self.parent
        while parent is not None:
            names.append(parent.name)
            parent = parent.parent
        return "/".join(reversed(names))

    @overload
    def emit(self, event: Callable[P, CatalogueEvent], /, *args: P.args, **data: P.kwargs) -> None: ...
    @overload
    def emit(self, event: str, /, **data: Any) -> None: ...
    def emit(self, event: Callable[..., CatalogueEvent] | str, /, *args: Any, **data: Any) -> None:
        """Publish a telemetry event tagged with this node's path and namespace: its class and
        fields (`self.emit(ev.ToolCallStarted, tool=..., ...)`), or its catalogue name."""
        hub = self.telemetry
        if hub is not None and hub.active:
            hub.emit(event, *args, node=self.path, namespace=self.namespace, **data)  # type: ignore[arg-type, unused-ignore]


def walk(root: py_trees.behaviour.Behaviour) -> list[py_trees.behaviour.Behaviour]:
    """Every node of the tree, parents before children (py_trees' `iterate()` order differs, and
    its recursive generators cost more than the work done on a small tree)."""
    nodes = [root]
    index = 0
    while index < len(nodes):
        nodes.extend(nodes[index].children)
        index += 1
    return nodes


_LEAN = fast("lean_ticks")

LEAN_TICKS: set[Any] = set()
"""`tick` functions that only wrap the class's `tick_lean()`: `tick_node` calls that directly."""


def tick_node(node: py_trees.behaviour.Behaviour) -> None:
    """Tick `node` once, without generators when its class allows it.

    py_trees ticks are generator chains (one resumption per node per level), a measurable share
    of a ReAct iteration; jianmu_like's own nodes and composites tick through plain calls.
    A subclass that overrides `tick()` is ticked through its generator, as py_trees would.
    """
    if type(node).tick in LEAN_TICKS:
        node.tick_lean()  # type: ignore[attr-defined]
    else:
        for _ in node.tick():
            pass


_NO_INITIALISE = py_trees.behaviour.Behaviour.initialise
_NO_TERMINATE = py_trees.behaviour.Behaviour.terminate


class Node(NodeMixin, py_trees.behaviour.Behaviour):
    """A leaf behaviour bound to a StateManager and, optionally, a TelemetryHub."""

    _initialises = False
    """The class overrides `initialise()` (py_trees' own does nothing: not worth a call)."""
    _terminates = False
    """The class overrides `terminate()` (likewise)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._initialises = cls.initialise is not _NO_INITIALISE
        cls._terminates = cls.terminate is not _NO_TERMINATE

    def tick(self) -> Iterator[py_trees.behaviour.Behaviour]:
        if not _LEAN:  # py_trees' own Behaviour.tick (jianmu_like._base.speed, `lean_ticks`)
            yield from super().tick()
            return
        self.tick_lean()
        yield self

    def tick_lean(self) -> None:
        """py_trees' tick, minus a debug f-string and a status-enum scan on every call."""
        if self.status is not RUNNING and self._initialises:
            self.initialise()
        new_status = self.update()
        if new_status is not RUNNING:
            self.stop(new_status)
        self.status = new_status

    def stop(self, new_status: Status) -> None:
        if not _LEAN:
            super().stop(new_status)
            return
        if self._terminates:
            self.terminate(new_status)
        self.status = new_status


if _LEAN:  # else py_trees' own tick() (jianmu_like._base.speed)
    LEAN_TICKS.add(Node.tick)
