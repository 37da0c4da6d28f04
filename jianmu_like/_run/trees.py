"""Where a run's tree comes from: owned by an Agent, or borrowed from a template's pool.

This is the one thing an `Agent` and a `Conversation` do differently. An Agent owns its tree and
runner for its whole life; a suspended run simply leaves the tree RUNNING. A Conversation holds
no tree between runs: each run or resume borrows one from its template (`TreePool`), puts it
where the conversation's last run stopped (bt._progress), and hands it back — reset — when the run
ends or suspends, keeping only the progress of a suspended run.

Both serve one run at a time: a second run or resume while one is in progress is a
`ConversationError` (before, a second `Agent.run` ticked the same tree as the first and both
reported whatever the tree had become).
"""

from __future__ import annotations

from typing import Any, Protocol

import py_trees
from py_trees.common import Status

from ..bt._node import walk
from ..bt._progress import capture_progress, restore_progress
from ..bt._runner import ReactiveRunner, TickHook
from ..nodes._interrupts import InterruptGate
from ..state._manager import StateManager
from ..telemetry._hub import TelemetryHub
from ..tools._toolset import ToolSet, toolset_of
from .errors import ConversationError
from .interrupts import Interrupts, interrupt_gates


def tree_toolsets(root: py_trees.behaviour.Behaviour) -> list[ToolSet]:
    """Tool sets used by nodes of the tree (each listed once)."""
    found: dict[int, ToolSet] = {}
    for node in walk(root):
        tools = toolset_of(node)
        if tools is not None:
            found[id(tools)] = tools
    return list(found.values())


class TreeSource(Protocol):
    """How a run core gets the tree of a run (see the module)."""

    @property
    def tree(self) -> py_trees.behaviour.Behaviour:
        """A tree of the shape every run ticks (names, input keys, nodes)."""

    @property
    def runner(self) -> ReactiveRunner | None:
        """The runner of the tree in hand (None: a conversation between runs)."""

    @property
    def suspended(self) -> bool:
        """The last run is waiting (for approvals); a resume continues it."""

    on_tick: TickHook | None
    """Called after every tick of every run (the checkpoint recorder's hook)."""

    def attach(self, state_manager: StateManager, telemetry: TelemetryHub, interrupts: Interrupts) -> None:
        """Bind to the core's state, hub and follow-ups (once, by the core)."""

    def acquire(self, thread_id: str | None) -> tuple[py_trees.behaviour.Behaviour, ReactiveRunner]:
        """The tree and runner for a run or resume; a ConversationError while another is in
        progress (`thread_id`: the core's current thread, for the message)."""

    def release(self) -> None:
        """The run or resume ended or suspended."""

    def toolsets(self) -> list[ToolSet]: ...

    async def aclose(self) -> None: ...


class _OneRun:
    """The one-run-at-a-time rule, shared by both sources."""

    busy = False

    def _claim(self, describe: str, hint: str) -> None:
        if self.busy:
            raise ConversationError(f"{describe} is already running; {hint}")
        self.busy = True


class OwnedTree(_OneRun):
    """An Agent's tree: built by the caller, kept for the agent's life."""

    def __init__(self, root: py_trees.behaviour.Behaviour) -> None:
        self.root = root
        self._runner: ReactiveRunner | None = None
        self._on_tick: TickHook | None = None

    @property
    def tree(self) -> py_trees.behaviour.Behaviour:
        return self.root

    @property
    def runner(self) -> ReactiveRunner:
        assert self._runner is not None, "attach() first"
        return self._runner

    @property
    def on_tick(self) -> TickHook | None:
        return self._on_tick

    @on_tick.setter
    def on_tick(self, hook: TickHook | None) -> None:
        self._on_tick = hook
        if self._runner is not None:
            self._runner.on_tick = hook

    @property
    def suspended(self) -> bool:
        return self.root.status == Status.RUNNING

    def attach(self, state_manager: StateManager, telemetry: TelemetryHub, interrupts: Interrupts) -> None:
        self._runner = ReactiveRunner(self.root, state_manager, telemetry=telemetry, on_tick=self._on_tick)
        interrupts.bind(interrupt_gates(self.root))

    def acquire(self, thread_id: str | None) -> tuple[py_trees.behaviour.Behaviour, ReactiveRunner]:
        self._claim("this agent", "an agent serves one run at a time (await it, or build another agent)")
        return self.root, self.runner

    def release(self) -> None:
        self.busy = False

    def toolsets(self) -> list[ToolSet]:
        return tree_toolsets(self.root)

    async def aclose(self) -> None:
        """Halt the tree and close its tool providers (e.g. MCP server sessions)."""
        self.runner.halt()
        for toolset in self.toolsets():
            await toolset.aclose()


class TreePool(Protocol):
    """Identical trees lent for one run each (`AgentTemplate`)."""

    @property
    def prototype(self) -> py_trees.behaviour.Behaviour: ...

    def borrow(self) -> py_trees.behaviour.Behaviour: ...

    def give_back(self, root: py_trees.behaviour.Behaviour) -> None: ...

    def toolsets(self) -> list[ToolSet]: ...


_GATES_ATTR = "_jianmu_interrupt_gates"


def _pooled_gates(root: py_trees.behaviour.Behaviour) -> list[InterruptGate]:
    """The interrupt points of a pooled tree, found once per tree: every run of a conversation
    binds them, and a template's trees never change shape. Kept on the root with the root
    itself, since a clone of the tree copies its attributes (and must find its own nodes).
    Through getattr/setattr, not `root.__dict__`, which would take the root's attributes out
    of CPython 3.11's inline values for good (see `TreeInputs.of`)."""
    cached = getattr(root, _GATES_ATTR, None)
    if cached is not None and cached[0] is root:
        gates: list[InterruptGate] = cached[1]
        return gates
    gates = interrupt_gates(root)
    setattr(root, _GATES_ATTR, (root, gates))
    return gates


class PooledTree(_OneRun):
    """A Conversation's trees: one borrowed from the pool per run or resume (see the module)."""

    def __init__(self, pool: TreePool) -> None:
        self.pool = pool
        self.on_tick: TickHook | None = None
        self._root: py_trees.behaviour.Behaviour | None = None
        self._runner: ReactiveRunner | None = None
        self._progress: dict[str, dict[str, Any]] | None = None
        self._bound: tuple[StateManager, TelemetryHub, Interrupts] | None = None

    @property
    def tree(self) -> py_trees.behaviour.Behaviour:
        return self.pool.prototype

    @property
    def runner(self) -> ReactiveRunner | None:
        return self._runner

    @property
    def suspended(self) -> bool:
        return self._progress is not None

    def attach(self, state_manager: StateManager, telemetry: TelemetryHub, interrupts: Interrupts) -> None:
        self._bound = (state_manager, telemetry, interrupts)

    def acquire(self, thread_id: str | None) -> tuple[py_trees.behaviour.Behaviour, ReactiveRunner]:
        """Borrow a tree and put it where this conversation's last run stopped."""
        assert self._bound is not None, "attach() first"
        self._claim(
            f"conversation {thread_id!r}",
            "a conversation serves one run at a time (start another conversation from the template)",
        )
        try:
            root = self.pool.borrow()
            if self._progress is not None:
                try:
                    restore_progress(root, self._progress)
                except BaseException:
                    self.pool.give_back(root)
                    raise
        except BaseException:
            self.busy = False
            raise
        sm, hub, interrupts = self._bound
        interrupts.bind(_pooled_gates(root))
        self._root = root
        self._runner = ReactiveRunner(root, sm, telemetry=hub, on_tick=self.on_tick)
        return root, self._runner

    def release(self) -> None:
        """Keep the progress of a suspended run, give the (reset) tree back."""
        root = self._root
        if root is not None:
            self._progress = capture_progress(root) if root.status == Status.RUNNING else None
            self._root = self._runner = None
            self.pool.give_back(root)
        self.busy = False

    def toolsets(self) -> list[ToolSet]:
        return self.pool.toolsets()

    async def aclose(self) -> None:
        """Nothing to halt between runs; the template owns (and closes) the tools."""
