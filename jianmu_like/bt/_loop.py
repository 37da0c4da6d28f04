"""LoopUntilSuccess: retry a subtree until it succeeds, a limit is hit, or an abort condition fires.

Unlike `py_trees.decorators.Retry`, it works under a runner that ticks only on signals: after a
failed iteration it resets its child, signals, and reports RUNNING, so the next iteration starts
at once and the tree stays interruptible between iterations. Every ending writes termination
metadata (`{"reason", "iterations", ...}`) to the state.

Only a FAILURE status starts another iteration. An exception in the subtree is not retried: the
loop records it (reason = the fault's kind, e.g. "node_error", with `failed_node` and `error`), stops
its child and lets it travel on as `NodeFailed`, which ends the run (see `bt._fault`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import py_trees
from py_trees.common import Status

from ..telemetry import events as ev
from ._fault import NodeFailed, as_node_failed, report
from ._hooks import rebound
from ._node import FAILURE, INVALID, LEAN_TICKS, RUNNING, SUCCESS, NodeMixin, tick_node

AbortCondition = Callable[[], bool | str | dict[str, Any] | None]
"""Returns a truthy value to stop the loop: a string is the termination reason; a dict is merged
into the termination metadata (its "reason" key, default "aborted", is the reason)."""

TerminationHook = Callable[[dict[str, Any]], None]
"""Called with the termination metadata once it is written (e.g. to leave a fallback answer)."""


class LoopUntilSuccess(NodeMixin, py_trees.decorators.Decorator):
    """Tick `child` until it succeeds, at most `max_iterations` times.

    The abort condition is evaluated before each iteration starts and after one fails (never in
    the middle of one, so a model answer is never discarded and tool calls are never left
    without their results).
    """

    def __init__(
        self,
        name: str,
        child: py_trees.behaviour.Behaviour,
        max_iterations: int = 10,
        abort_condition: AbortCondition | None = None,
        *,
        namespace: str | None = None,
        termination_key: str = "termination",
        on_termination: TerminationHook | None = None,
    ) -> None:
        if max_iterations < 1:
            raise ValueError(f"max_iterations must be >= 1, got {max_iterations}")
        super().__init__(name=name, child=child)
        self.max_iterations = max_iterations
        self.abort_condition = abort_condition
        self.namespace = namespace
        self.termination_key = termination_key
        self.on_termination = on_termination
        self.iterations = 0
        self.termination: dict[str, Any] | None = None
        self._just_checked = False
        """The abort condition was asked when the last iteration ended (the next one starts at
        once: asking again before it would answer the same)."""

    def initialise(self) -> None:
        self.iterations = 0
        self.termination = None
        self._just_checked = False

    def reset_run(self) -> None:
        """Back to as-built (bt._clone)."""
        self.iterations = 0
        self.termination = None
        self._just_checked = False

    def on_clone(self) -> None:
        """An abort condition or termination hook bound to its loop (`for_node`) is re-bound to
        the clone."""
        self.abort_condition = rebound(self.abort_condition, self)
        self.on_termination = rebound(self.on_termination, self)

    def progress(self) -> dict[str, Any]:
        """What a checkpoint needs to continue this loop (see bt._progress)."""
        return {"iterations": self.iterations}

    def restore_progress(self, entry: dict[str, Any]) -> None:
        self.iterations = int(entry.get("iterations", 0))

    def tick(self) -> Iterator[py_trees.behaviour.Behaviour]:
        self.tick_lean()
        yield self

    def tick_lean(self) -> None:
        """One tick without generators (see bt.node.tick_node)."""
        if self.status is not RUNNING:
            self.initialise()
        if self.decorated.status is not RUNNING and self.abort_condition is not None:
            if self._just_checked:  # update() asked it as the last iteration ended: same moment
                self._just_checked = False
            else:
                verdict = self.abort_condition()
                if verdict:
                    self._abort(verdict)
                    return
        child = self.decorated
        try:
            if type(child).tick in LEAN_TICKS:  # tick_node, inlined
                child.tick_lean()  # type: ignore[attr-defined]
            else:
                tick_node(child)
        except Exception as exc:
            failed = self._record_failure(exc)
            if failed is exc:
                raise
            raise failed from exc
        new_status = self.update()
        if new_status is not RUNNING:
            self.stop(new_status)
        self.status = new_status

    def update(self) -> Status:
        status = self.decorated.status
        if status == RUNNING:
            return RUNNING
        self.iterations += 1
        if status == SUCCESS:
            self._write_termination("completed")
            return SUCCESS
        verdict = self.abort_condition() if self.abort_condition is not None else None
        if verdict:  # e.g. the model failed in this last iteration: say so, not "max_iterations"
            self._write_verdict(verdict)
            return FAILURE
        if self.iterations >= self.max_iterations:
            self._write_termination("max_iterations", max_iterations=self.max_iterations)
            return FAILURE
        if self.telemetry is not None and self.telemetry.active:
            self.emit(ev.LoopIteration, iteration=self.iterations)
        self._just_checked = self.abort_condition is not None
        sm = self.state_manager
        sm.reset_ephemeral("step", self.namespace)
        self.decorated.stop(INVALID)
        sm.wakeup.signal()
        return RUNNING

    def _record_failure(self, exc: Exception) -> NodeFailed:
        """Record an exception of the subtree as this loop's termination and stop the child."""
        failed = as_node_failed(exc, self)
        report(failed, self.telemetry)
        self.iterations += 1
        fault = failed.fault
        self._write_termination(fault.kind, failed_node=fault.node, error=fault.error)
        self.decorated.stop(INVALID)
        self.status = FAILURE
        return failed

    def _abort(self, verdict: bool | str | dict[str, Any]) -> None:
        self._write_verdict(verdict)
        self.stop(FAILURE)
        self.status = FAILURE

    def _write_verdict(self, verdict: bool | str | dict[str, Any]) -> None:
        if isinstance(verdict, dict):
            details = dict(verdict)
            reason = str(details.pop("reason", "aborted"))
        else:
            details = {}
            reason = verdict if isinstance(verdict, str) else "aborted"
        self._write_termination(reason, **details)

    def _write_termination(self, reason: str, **extra: Any) -> None:
        self.termination = {"reason": reason, "iterations": self.iterations, **extra}
        self.state_manager.update({self.termination_key: self.termination}, self.namespace)
        self.feedback_message = f"{reason} after {self.iterations} iteration(s)"
        self.emit(ev.LoopTerminated, reason=reason, iterations=self.iterations, extra=extra)
        if self.on_termination is not None:
            self.on_termination(self.termination)


LEAN_TICKS.add(LoopUntilSuccess.tick)
