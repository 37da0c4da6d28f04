"""Follow-ups sent into a run in progress (`inject`), from the run's task or any thread.

A follow-up waits in the run core's `InterruptBox` until a ReAct loop's interrupt point (its
done check) takes it at the next iteration boundary. The waiting follow-ups are part of every
checkpoint (`Checkpoint.followups`), and one sent to a suspended run that a store records is saved
at once (`keep`) before it counts as queued: a resume by another process delivers it, and the
save after the tick that lets it in holds it in the state only (exactly once).

Only a run in progress (running, or suspended for an approval) takes one: a follow-up queued
for some later run would silently join an unrelated question. From another thread the follow-up
is handed to the run's event loop within a bounded wait, and withdrawn when the loop never takes
it, so it is never queued behind the caller's back.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Callable, Iterable

import py_trees

from ..bt._node import walk
from ..checkpoint._contract import FollowUp
from ..nodes._interrupts import InterruptBox, InterruptGate
from ..telemetry import events as ev
from ..telemetry._hub import TelemetryHub

_LOOP_GONE = (
    "inject(): the agent's event loop is not running (stopped or closed), so the run can never "
    "take this follow-up; it was not queued"
)


def interrupt_gates(root: py_trees.behaviour.Behaviour) -> list[InterruptGate]:
    """The interrupt points of a tree (a walk of the whole tree)."""
    return [node for node in walk(root) if isinstance(node, InterruptGate)]


class Interrupts:
    """The follow-ups of one run core, and the run (loop, running flag) that can take them.

    `node` names the tree's root in the `inject` events; `namespace` is the agent's (the default
    loop to address). It holds nothing of the core (no reference cycle: an agent dropped outside
    any event loop is freed there, with its `run_sync` loop)."""

    def __init__(
        self,
        telemetry: TelemetryHub,
        *,
        namespace: str | None,
        node: str,
    ) -> None:
        self.box = InterruptBox()
        """Follow-ups injected while a run is in progress, until a loop takes them."""
        self._telemetry = telemetry
        self._namespace = namespace
        self._node = node
        self._points: set[str | None] = set()
        self.loop: asyncio.AbstractEventLoop | None = None
        """The event loop of the current (or last) run."""
        self.running = False
        """A run is being driven now (not suspended)."""

    def bind(self, gates: Iterable[InterruptGate]) -> None:
        """Give a tree's interrupt points (the ReAct loops' done checks) this box."""
        for node in gates:
            node.interrupts = self.box
            self._points.add(node.namespace)

    def inject(
        self,
        content: str,
        namespace: str | None,
        timeout: float,
        in_progress: Callable[[], bool],
        keep: Callable[[], None],
    ) -> None:
        """Queue a follow-up (see `Agent.inject`) if `in_progress()` (a run is under way or
        suspended) when the run's loop takes it; `keep()` makes the queue durable (a no-op
        while the run is being driven: its next save carries it), and the follow-up is
        withdrawn when it raises."""
        if not isinstance(content, str) or not content.strip():
            raise ValueError("inject() needs a non-empty message")
        loop = self.loop
        try:
            current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        if loop is None or current is loop:
            self._queue(content, namespace, in_progress, keep)
            return
        if not loop.is_running():
            if self.running:  # its loop stopped under the run: nothing will ever take it
                raise RuntimeError(_LOOP_GONE)
            self._queue(content, namespace, in_progress, keep)  # suspended: the next resume takes it
            return
        self._hand_to_loop(loop, content, namespace, timeout, in_progress, keep)

    def _hand_to_loop(
        self,
        loop: asyncio.AbstractEventLoop,
        content: str,
        namespace: str | None,
        timeout: float,
        in_progress: Callable[[], bool],
        keep: Callable[[], None],
    ) -> None:
        """Queue a follow-up on the run's loop from another thread, within a bounded wait:
        a hand-over the loop never takes (it stopped, or stayed busy) is withdrawn, so it
        cannot be queued later behind the caller's back."""
        queued: concurrent.futures.Future[None] = concurrent.futures.Future()

        def on_loop() -> None:
            if not queued.set_running_or_notify_cancel():
                return  # the caller gave up waiting
            try:
                self._queue(content, namespace, in_progress, keep)
            except BaseException as exc:
                queued.set_exception(exc)
            else:
                queued.set_result(None)

        try:
            loop.call_soon_threadsafe(on_loop)
        except RuntimeError:  # closed meanwhile
            raise RuntimeError(_LOOP_GONE) from None
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            done, _ = concurrent.futures.wait([queued], timeout=max(0.0, min(0.05, left)))
            if done:
                break
            stopped = not loop.is_running()
            if (stopped or left <= 0) and queued.cancel():
                if stopped:
                    raise RuntimeError(_LOOP_GONE)
                raise TimeoutError(
                    f"inject(): the agent's event loop did not take the follow-up within {timeout:g} s "
                    "(it is blocked); the follow-up was not queued"
                )
        queued.result()

    def _queue(
        self, content: str, namespace: str | None, in_progress: Callable[[], bool], keep: Callable[[], None]
    ) -> None:
        if not in_progress():
            raise RuntimeError(
                "no run in progress to inject into: start one with run() and send this message as its input"
            )
        target = self._target(namespace)
        self.box.put(target, content)
        if not self.running:
            try:
                keep()
            except BaseException:
                self.box.withdraw(target, content)
                raise
        if self._telemetry.active:
            self._telemetry.emit(
                ev.Inject, node=self._node, namespace=target, status="queued", content=content
            )

    def _target(self, namespace: str | None) -> str | None:
        points = self._points
        if namespace is not None or self._namespace in points:
            target = namespace if namespace is not None else self._namespace
            if target in points:
                return target
        elif len(points) == 1:
            return next(iter(points))
        known = ", ".join(repr(ns) for ns in points) or "none"
        raise ValueError(
            f"no ReAct loop of this tree takes follow-ups in namespace {namespace!r} "
            f"(loops with interrupt points: {known}); pass namespace=..."
        )

    def saved(self) -> list[FollowUp]:
        """The waiting follow-ups, as a checkpoint keeps them."""
        return [FollowUp(namespace=ns, content=content) for ns, content in self.box.waiting()]

    def restore(self, followups: Iterable[FollowUp]) -> None:
        """Wait with the follow-ups a loaded checkpoint saved (and no others: the store is what
        the thread holds)."""
        self.box.replace((f.namespace, f.content) for f in followups)

    def drop(self) -> None:
        """Report follow-ups no loop took (the run ended first) as dropped."""
        for ns, content in self.box.drain():
            if self._telemetry.active:
                self._telemetry.emit(
                    ev.Inject, node=self._node, namespace=ns, status="dropped", content=content
                )
