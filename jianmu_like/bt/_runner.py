"""ReactiveRunner: tick a tree when, and only when, something signalled.

No timer, no polling, no throttle: after each tick the runner awaits the StateManager's wake-up
(or first carries on the waiting work of an exclusive node, bt._inline, then ticks again).
It returns when the root finishes, when `max_ticks` is reached, or when the tree is quiescent
(RUNNING with nothing in flight and nothing signalled — e.g. waiting for a human approval), which
is reported as a suspended run that a later `run()` resumes. An exception raised by a node ends
the run as a failure carrying the `NodeFault` (see `bt._fault`); the tree is halted first.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Literal

import py_trees
from pydantic import BaseModel

from ..state._manager import StateManager
from ..telemetry._hub import TelemetryHub
from ._async_behaviour import AsyncBehaviour
from ._composites import Sequence
from ._fault import NodeFault, as_node_failed, report
from ._loop import LoopUntilSuccess
from ._node import INVALID, RUNNING, SUCCESS, tick_node

RunStatus = Literal["running", "success", "failure", "suspended"]
"""The status of a run, one vocabulary everywhere (this runner's outcome, `AgentResult`, each
namespace's `AgentOutcome`, the server's runs, durable results): `running` while it runs, then
how it ended or paused. Wire formats with other words (DBOS's workflow statuses) map at the edge."""

EndStatus = Literal["success", "failure", "suspended"]
"""A `RunStatus` once the run returned."""

TickHook = Callable[[], Awaitable[None] | None]
"""Called after every tick; an awaitable it returns is awaited before the next (None: nothing
to wait for, the usual answer, which costs no await)."""


class RunOutcome(BaseModel):
    """How a `ReactiveRunner.run()` ended."""

    status: EndStatus
    ticks: int
    max_ticks_reached: bool = False
    """The run was stopped (status "failure") because it reached `max_ticks`."""
    fault: NodeFault | None = None
    """The node exception that ended the run (status "failure"), if one did."""


class ReactiveRunner:
    """Drives `root` on `state_manager`'s signals; binds both (and telemetry) to every node."""

    def __init__(
        self,
        root: py_trees.behaviour.Behaviour,
        state_manager: StateManager,
        *,
        telemetry: TelemetryHub | None = None,
        on_tick: TickHook | None = None,
    ) -> None:
        self.root = root
        self.state_manager = state_manager
        self.telemetry = telemetry
        self.on_tick = on_tick
        """Called after every tick (the Agent checkpoints there); what it returns, if not None,
        is awaited before the run goes on (an async store's write)."""
        self.total_ticks = 0
        self.ticks_now = 0
        """Ticks so far, counted as they happen (`total_ticks` is added to when a run returns):
        what a recording stamps its events and calls with."""
        self._running = False
        self._halted = False
        """`halt()` was called while `run()` was waiting."""
        self.bind()

    def bind(self) -> None:
        """Give every node (plain py_trees behaviours included) the state manager and hub, and
        mark the async nodes that no other leaf can run beside (bt._inline)."""
        sm, hub = self.state_manager, self.telemetry
        # Exclusive: every ancestor runs one child at a time and re-ticks only the running one
        # (a memory Sequence, a loop). Below anything else (a Parallel, a reactive Selector, a
        # decorator that checks a condition each tick, a custom composite) a node keeps its own
        # task, so ticks can still reach its siblings meanwhile.
        stack: list[tuple[py_trees.behaviour.Behaviour, bool]] = [(self.root, True)]
        while stack:
            node, exclusive = stack.pop()
            # Plain py_trees behaviours get the attributes too (they have no declaration).
            setattr(node, "state_manager", sm)  # noqa: B010
            setattr(node, "telemetry", hub)  # noqa: B010
            if isinstance(node, AsyncBehaviour):
                node.exclusive = exclusive
            children = node.children
            if children:
                passes = exclusive and (
                    isinstance(node, LoopUntilSuccess) or (type(node) is Sequence and node.memory)
                )
                stack.extend((child, passes) for child in children)

    async def run(self, max_ticks: int = 100_000) -> RunOutcome:
        """Tick now, then on every signal, until finished, suspended or out of ticks."""
        wakeup = self.state_manager.wakeup
        wakeup.bind_loop()
        root = self.root
        ticks = 0
        self._running, self._halted = True, False
        try:
            while True:
                wakeup.pending = False  # consume pending signals (`Wakeup.clear`, inlined)
                ticks += 1
                self.ticks_now += 1
                try:
                    tick_node(root)
                except Exception as exc:
                    failed = as_node_failed(exc, root)
                    report(failed, self.telemetry)
                    root.stop(INVALID)  # whatever the root's status: cancel every task
                    return self._outcome("failure", ticks, failed.fault)
                if self.on_tick is not None:
                    writing = self.on_tick()
                    if writing is not None:
                        await writing
                status = root.status
                if status == SUCCESS:
                    return self._outcome("success", ticks)
                if status != RUNNING:
                    return self._outcome("failure", ticks)
                if ticks >= max_ticks:
                    self.halt()
                    return self._outcome("failure", ticks, max_ticks_reached=True)
                if wakeup.pending:
                    continue  # signalled during the tick: tick again at once (no await)
                parked = wakeup.parked
                if parked is not None:  # an exclusive node's work waits: carry it on, then tick
                    wakeup.parked = None
                    await parked
                elif wakeup.in_flight == 0:  # quiescent: no tick would ever come by itself
                    return self._outcome("suspended", ticks)
                else:
                    await wakeup.wait()
                if self._halted:  # halted from outside while waiting (Agent.aclose()): stop here
                    return self._outcome("failure", ticks, _halted_fault(root))
        except BaseException:
            self.halt()
            raise
        finally:
            self._running = False

    def halt(self) -> None:
        """Stop the tree: running nodes are terminated and their tasks cancelled. A run in
        progress then ends as a failure (kind "halted") instead of ticking the stopped tree."""
        if self._running:
            self._halted = True
        if self.root.status == RUNNING:
            self.root.stop(INVALID)

    def _outcome(
        self,
        status: EndStatus,
        ticks: int,
        fault: NodeFault | None = None,
        *,
        max_ticks_reached: bool = False,
    ) -> RunOutcome:
        self.total_ticks += ticks
        return RunOutcome(status=status, ticks=ticks, fault=fault, max_ticks_reached=max_ticks_reached)


HALTED = "halted"


def _halted_fault(root: py_trees.behaviour.Behaviour) -> NodeFault:
    return NodeFault(
        node=root.name,
        namespace=getattr(root, "namespace", None),
        kind=HALTED,
        error_type="RunHalted",
        message="the tree was halted while the run was in progress (e.g. Agent.aclose())",
    )
