"""AsyncBehaviour: a py_trees behaviour whose work is an asyncio task.

The BehaviorTree.CPP `StatefulActionNode` pattern on py_trees: the first tick starts
`update_async()` as a task and reports RUNNING; when the task ends the runner is signalled and the
next tick reports its outcome; halting the node cancels the task. The task's first step runs
eagerly inside the tick (bt._eager): work that never waits reports its outcome in that same
tick. A subclass may also answer synchronously from `update_sync()` (return a status) to skip
the task for trivial cases. A node the runner marked `exclusive` (no other leaf can run beside
it) has no task at all: work that waits is carried on by the runner's own task (bt._inline).

An exception escaping `update_async()` is not a FAILURE: the next tick raises it as `NodeFailed`
(see `bt._fault`), which ends the run naming this node and the error.
"""

from __future__ import annotations

import abc
import asyncio
import contextvars
from typing import Any

from py_trees.common import Status

from .._base.speed import fast
from ..state._wakeup import Wakeup
from ._eager import NOT_DONE, start_eager
from ._fault import node_failed, report
from ._inline import InlineWork
from ._node import FAILURE, INVALID, RUNNING, SUCCESS, Node

_INLINE = fast("inline")
"""The `inline` fast path (jianmu_like._base.speed): exclusive nodes run in the runner's task."""


class AsyncBehaviour(Node):
    """Base class for nodes that await I/O (model calls, tools, approvals)."""

    exclusive = False
    """Set by the runner when no other leaf can run while this one does (bt._inline): its work
    then runs in the runner's task instead of a task of its own."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._task: asyncio.Task[Status] | None = None
        self._inline: InlineWork | None = None
        self.error: BaseException | None = None
        """The exception that ended the last task, if any (raised as `NodeFailed` on the next
        tick); subclasses may also set it for a failure they handled themselves."""
        self._raised: BaseException | None = None

    @abc.abstractmethod
    async def update_async(self) -> Status:
        """The node's work: SUCCESS or FAILURE; or RUNNING to wait for something outside (an
        approval): the node then stays RUNNING, and `update_sync()`/`update_async()` are asked
        again on the next tick, which only comes when something signals."""

    def update_sync(self) -> Status | None:
        """Optional fast path evaluated before a task is started: a status ends the tick
        synchronously, None starts `update_async()`."""
        return None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._answers_sync = cls.update_sync is not AsyncBehaviour.update_sync
        cls._terminates_more = cls.terminate is not AsyncBehaviour.terminate

    _answers_sync = False
    """The class overrides `update_sync()` (the base one answers nothing: not worth a call)."""
    _terminates_more = False
    """The class overrides `terminate()` beyond cancelling the task (always called then)."""

    def update(self) -> Status:
        task = self._task
        if task is None:
            inline = self._inline
            if inline is not None:
                if not inline.finished:
                    return RUNNING
                self._inline = None
                return self._outcome(inline.result)
            if self._answers_sync:
                quick = self.update_sync()
                if quick is not None:
                    return quick
            self.error = self._raised = None
            wakeup = self.state_manager.wakeup
            if self.exclusive and _INLINE:
                # The first step runs in this (the runner's) task; work that waits is handed to
                # the runner to carry on after the tick (bt._inline).
                coro = self._run(wakeup)
                context = contextvars.copy_context()
                try:
                    yielded = context.run(coro.send, None)
                except StopIteration as done:
                    status: Status = done.value
                    return status if self._raised is None else self._outcome(status)
                except asyncio.CancelledError:
                    self.feedback_message = "cancelled"
                    return FAILURE
                self._inline = wakeup.parked = InlineWork(coro, context, yielded)
                return RUNNING
            try:
                task, status = start_eager(self._run(wakeup), name=self.name)
            except asyncio.CancelledError:
                self.feedback_message = "cancelled"
                return FAILURE
            if status is not NOT_DONE:
                return self._outcome(status)  # finished in its first step: no tick to wait for
            self._task = task
            wakeup.track(task)
            return RUNNING
        if not task.done():
            return RUNNING
        self._task = None
        if task.cancelled():
            self.feedback_message = "cancelled"
            return FAILURE
        return self._outcome(task.result())

    def _outcome(self, status: Status) -> Status:
        """The finished task's status, or its exception raised as `NodeFailed`."""
        raised, self._raised = self._raised, None
        if raised is not None:
            failed = node_failed(raised, self)
            report(failed, self.telemetry)
            raise failed from raised
        return status

    async def _run(self, wakeup: Wakeup) -> Status:
        try:
            status = await self.update_async()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # raised as NodeFailed on the next tick; stays inspectable
            self.error = self._raised = exc
            self.feedback_message = f"{type(exc).__name__}: {exc}"
            self.on_error(exc)
            return FAILURE
        finally:
            # Wake the runner from inside the task's last step: it then ticks in the very next
            # loop cycle, one cycle earlier than a done-callback would allow. Only a tracked task
            # (counted in flight) has anything to settle: a first step that finishes skips it.
            if wakeup.in_flight:
                wakeup.settle(asyncio.current_task())
        if status not in (SUCCESS, FAILURE, RUNNING):
            return FAILURE
        return status

    def on_error(self, exc: BaseException) -> None:
        """Hook: called with an exception that escaped `update_async()`."""

    def stop(self, new_status: Status) -> None:
        # Nothing to terminate without a task, unless a subclass has its own terminate(): the
        # usual stops (after the outcome, and the loop's reset) skip the call.
        if self._task is not None or self._inline is not None or self._terminates_more:
            self.terminate(new_status)
        self.status = new_status

    def terminate(self, new_status: Status) -> None:
        # stop() may run twice (FAILURE, then INVALID from a parent reset): cancel only a live task.
        inline = self._inline
        if inline is not None and new_status == INVALID:
            self._inline = None
            inline.close()
            wakeup = self.state_manager.wakeup
            if wakeup.parked is inline:  # halted in the tick that parked it: nothing to carry on
                wakeup.parked = None
        task = self._task
        if task is not None and new_status == INVALID:
            self._task = None
            if not task.done():
                task.cancel()

    def reset_run(self) -> None:
        """Back to as-built (bt._clone): no task, no error."""
        self._task = None
        self._inline = None
        self.error = self._raised = None

    @property
    def in_flight(self) -> bool:
        """True while the node's work (its task, or work the runner carries) is running."""
        if self._inline is not None:
            return not self._inline.finished
        return self._task is not None and not self._task.done()
