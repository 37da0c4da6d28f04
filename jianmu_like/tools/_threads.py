"""Worker threads for sync tools that can never hold the process hostage.

`asyncio.to_thread` uses the loop's default `ThreadPoolExecutor`, whose workers are joined when
the loop shuts down and again at interpreter exit: one sync tool that never returns keeps the
process alive forever, long after the run ended. The pool here runs jobs on *daemon* threads,
which the interpreter abandons at exit. A job its caller gave up on (timeout, cancellation)
gives its slot back at once, so stuck calls cannot starve later ones either.

A `SystemExit` or `KeyboardInterrupt` raised by a job is the tool's own doing (signals are only
ever delivered to the main thread), so it is turned into a `ToolExitError` for that call.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import itertools
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from ._errors import ToolExitError

T = TypeVar("T")

_MAX_WORKERS = max(32, (os.cpu_count() or 1) + 4)


class _Job:
    __slots__ = ("abandoned", "fn", "future")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.abandoned = False

    def run(self) -> None:
        if not self.future.set_running_or_notify_cancel():
            return  # cancelled while queued
        try:
            result = self.fn()
        except (SystemExit, KeyboardInterrupt) as exc:
            self.future.set_exception(ToolExitError(exc))
        except BaseException as exc:
            self.future.set_exception(exc)
        else:
            self.future.set_result(result)


class DaemonThreadPool:
    """A small executor of daemon threads, grown on demand up to `max_workers` busy ones."""

    def __init__(self, max_workers: int = _MAX_WORKERS, *, name: str = "jianmu-tool") -> None:
        self.max_workers = max_workers
        self._name = name
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = threading.Semaphore(0)
        self._workers = 0
        """Threads counted against `max_workers` (a thread stuck on an abandoned job is not)."""
        self._counter = itertools.count(1)

    def submit(self, fn: Callable[[], Any]) -> _Job:
        job = _Job(fn)
        self._jobs.put(job)
        if not self._idle.acquire(blocking=False):
            with self._lock:
                if self._workers < self.max_workers:
                    self._workers += 1
                    threading.Thread(
                        target=self._work, name=f"{self._name}-{next(self._counter)}", daemon=True
                    ).start()
        return job

    def abandon(self, job: _Job) -> None:
        """The caller stopped waiting: if the job is still running, its thread leaves the pool."""
        with self._lock:
            if job.future.running() and not job.abandoned:
                job.abandoned = True
                self._workers -= 1

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            job.run()
            with self._lock:
                if job.abandoned:
                    return  # its slot was handed to a new thread when the caller gave up
            self._idle.release()


_pool: DaemonThreadPool | None = None
_pool_lock = threading.Lock()


def tool_thread_pool() -> DaemonThreadPool:
    """The process-wide pool sync tools run in."""
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = DaemonThreadPool()
    return _pool


async def run_in_daemon_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Like `asyncio.to_thread`, on a daemon thread that never delays the interpreter's exit."""
    context = contextvars.copy_context()
    pool = tool_thread_pool()
    job = pool.submit(lambda: context.run(fn, *args, **kwargs))
    try:
        result: T = await asyncio.wrap_future(job.future)
    except asyncio.CancelledError:
        pool.abandon(job)
        raise
    return result
