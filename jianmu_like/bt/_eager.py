"""Eager start of a coroutine in its own task (what `asyncio.eager_task_factory` does on 3.12).

Most node work never waits (a pure tool, an in-process model): starting it as a plain task
costs two event-loop cycles before the tree learns the outcome. `start_eager` runs the first
step at once, *as* the new task (current task swapped, in the task's own context), so code that
captures `asyncio.current_task()` — `asyncio.timeout`, anyio cancel scopes inside httpx — binds
to the task that will carry on if the step suspends. A step that finishes returns its result
synchronously, and its (not yet started) task is lent to the next eager start.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Coroutine, Generator
from typing import Any, Generic, TypeVar

from .._base.speed import fast

T = TypeVar("T")

# CPython's private task bookkeeping: the `eager` fast path (jianmu_like._base.speed) relies on it.
_enter_task = asyncio.tasks._enter_task
_leave_task = asyncio.tasks._leave_task
_current_tasks: dict[Any, asyncio.Task[Any]] = asyncio.tasks._current_tasks  # type: ignore[attr-defined]
_NOTHING: Any = object()
_TASK_CONTEXT = contextvars.Context()
"""The context of every carrier task: only entered around `_Carrier.send`/`throw`, which run
the real coroutine in its own context (never entered twice: the loop runs one step at a time)."""


class _Carrier(Coroutine[Any, Any, Any], Generic[T]):
    """The task's coroutine: hands the task the future the eager step is waiting on, then
    forwards `send`/`throw` to the real coroutine, each step in the coroutine's own context.
    Exposes the real coroutine's `cr_*` state (anyio inspects it to deliver cancellation)."""

    __slots__ = ("context", "coro", "finished", "started", "task", "yielded")

    def __init__(self) -> None:
        self.coro: Coroutine[Any, Any, T] | None = None
        self.context: contextvars.Context = _TASK_CONTEXT  # replaced by each eager start
        self.yielded: Any = _NOTHING
        """What the eager step yielded, until the task's first step hands it over."""
        self.finished = True
        """No coroutine to carry on (the eager step ended it): the task just ends."""
        self.started = False
        """The task took its first step: the carrier can no longer take another coroutine."""
        self.task: asyncio.Task[Any] | None = None

    def send(self, value: Any) -> Any:
        if not self.started:
            self.started = True
            self.task = None  # no task <-> carrier reference cycle left for the GC
        if self.finished:
            raise StopIteration(None)
        yielded = self.yielded
        if yielded is not _NOTHING:
            self.yielded = _NOTHING
            return yielded
        assert self.coro is not None
        return self.context.run(self.coro.send, value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        self.started = True
        self.task = None
        if self.finished:
            raise StopIteration(None)
        pending = self.yielded
        if pending is not _NOTHING:
            # Cancelled before the task ever ran: cancel what the step waits on, as Task.cancel
            # would have done with its `_fut_waiter`.
            self.yielded = _NOTHING
            if isinstance(pending, asyncio.Future):
                pending.cancel()
        assert self.coro is not None
        if val is None and tb is None:
            return self.context.run(self.coro.throw, typ)
        return self.context.run(self.coro.throw, typ, val, tb)  # pragma: no cover - legacy signature

    def close(self) -> None:
        self.started = True
        self.task = None
        if self.coro is not None:
            self.coro.close()

    def __await__(self) -> Generator[Any, None, Any]:  # pragma: no cover - driven by a Task only
        raise TypeError("an eager carrier is driven by its task, not awaited")

    @property
    def cr_running(self) -> bool:
        return bool(getattr(self.coro, "cr_running", False))

    @property
    def cr_frame(self) -> Any:
        return getattr(self.coro, "cr_frame", None)

    @property
    def cr_suspended(self) -> bool:
        return bool(getattr(self.coro, "cr_suspended", False))

    @property
    def cr_code(self) -> Any:
        return getattr(self.coro, "cr_code", None)

    @property
    def cr_await(self) -> Any:
        return getattr(self.coro, "cr_await", None)


NOT_DONE: Any = object()
"""`start_eager`'s result when the first step did not finish the coroutine."""


def _start_eager(
    coro: Coroutine[Any, Any, T], *, name: str | None = None
) -> tuple[asyncio.Task[Any], T | Any]:
    """Start `coro` in a task, running its first step now.

    Returns (task, result): `result` is the coroutine's return value if the first step finished
    it, else `NOT_DONE` and the task carries on (await or track the task; its result is then the
    coroutine's). An exception escaping the first step is raised here.

    A step that finishes leaves its task unused (it has not run yet): the next eager start on
    the same loop borrows it instead of creating one, so work that never waits costs no task at
    all until the loop gets control back. Each coroutine still runs in its own copy of the
    caller's context, as a task of its own would.
    """
    loop = asyncio.get_running_loop()
    carrier: _Carrier[T] | None = getattr(_spare, "carrier", None)
    _spare.carrier = None  # in use (a nested start makes its own)
    task = carrier.task if carrier is not None and not carrier.started else None
    if carrier is None or task is None or task.get_loop() is not loop:
        carrier = _Carrier()
        # The task never runs code in its own context (the carrier runs each step in the
        # coroutine's), so every carrier task shares one empty context instead of a copy each.
        task = carrier.task = loop.create_task(carrier, name=name, context=_TASK_CONTEXT)
    context = contextvars.copy_context()
    carrier.coro = coro
    carrier.context = context
    carrier.finished = False
    current = _current_tasks.get(loop)
    if current is not None:
        _leave_task(loop, current)
    _enter_task(loop, task)
    try:
        carrier.yielded = context.run(coro.send, None)
    except StopIteration as stop:
        carrier.finished = True
        carrier.coro = None
        _spare.carrier = carrier
        return task, stop.value
    except BaseException:
        carrier.finished = True
        carrier.coro = None
        _spare.carrier = carrier
        raise
    finally:
        _leave_task(loop, task)
        if current is not None:
            _enter_task(loop, current)
    carrier.task = None  # the task carries this coroutine now: it is nobody's spare
    if name is not None and task.get_name() != name:
        task.set_name(name)
    return task, NOT_DONE


_spare = threading.local()
"""This thread's unused carrier task (see `start_eager`)."""


def _start_plain(
    coro: Coroutine[Any, Any, T], *, name: str | None = None
) -> tuple[asyncio.Task[Any], T | Any]:
    """`start_eager` without the `eager` fast path: a plain task, its first step on the loop."""
    return asyncio.get_running_loop().create_task(coro, name=name), NOT_DONE


start_eager = _start_eager if fast("eager") else _start_plain
