"""InlineWork: an async node's coroutine carried on by the runner's own task, not a task of its own.

In a tree where only one leaf can be running at a time (from the root down only memory
sequences and loops: bt._runner marks such nodes `exclusive`), nothing needs a tick while that
leaf's work waits: its ancestors would only report RUNNING again. So an exclusive node runs its
coroutine's first step in the tick, inside the runner's task, and if the step waits, the runner
awaits the rest itself after the tick (`await work`), then ticks again. A model call that waits
then costs no task, no done-callback and no wake-up of a second task, as in a hand-written
loop. The coroutine runs every step in its own context copy, as a task would; whatever it binds
to the current task (`asyncio.timeout`, anyio cancel scopes) binds to the runner's task, which
is the one carrying it; cancelling the run throws the cancellation straight into it.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine, Generator
from typing import Any

_PENDING: Any = object()


class InlineWork:
    """A started coroutine whose remaining steps the runner drives (`await work`)."""

    __slots__ = ("closed", "context", "coro", "result", "waiting")

    def __init__(self, coro: Coroutine[Any, Any, Any], context: contextvars.Context, yielded: Any) -> None:
        self.coro = coro
        self.context = context
        self.waiting = yielded
        """What the work waits on now (handed to the runner's task by `__await__`)."""
        self.result: Any = _PENDING
        self.closed = False

    @property
    def finished(self) -> bool:
        return self.result is not _PENDING or self.closed

    def close(self) -> None:
        """Abandon the work (its node was halted): the coroutine is closed; a runner still
        awaiting it returns as soon as its task is woken."""
        if self.closed:
            return
        self.closed = True
        if not getattr(self.coro, "cr_running", False):  # halted from inside its own step: it ends by itself
            self.context.run(self.coro.close)  # its `finally` blocks see their own context
        waiting = self.waiting
        if isinstance(waiting, asyncio.Future) and not waiting.done():
            waiting.cancel()  # as Task.cancel would: the runner's task wakes up and moves on

    def __await__(self) -> Generator[Any, Any, None]:
        coro, run = self.coro, self.context.run
        while not self.closed:
            try:
                sent = yield self.waiting
            except GeneratorExit:
                self.close()
                raise
            except BaseException as exc:  # a cancellation of the run goes to the work
                if self.closed:
                    return
                try:
                    self.waiting = run(coro.throw, exc)
                except StopIteration as done:
                    self.result = done.value
                    return
            else:
                if self.closed:
                    return
                try:
                    self.waiting = run(coro.send, sent)
                except StopIteration as done:
                    self.result = done.value
                    return
