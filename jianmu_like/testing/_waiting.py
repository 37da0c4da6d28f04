"""Waiting in tests for something that will happen: a condition, not a guess at how long it takes.

CI shares a loaded 2-core machine, where a subprocess can take ten times longer to start than on a
developer's laptop. So a test never sleeps a fixed time hoping the thing is done, and never gives
up after a bound a slow machine can reach: it polls a condition (or awaits an event) for up to
`PATIENCE` seconds. The bound costs nothing when things work (a condition that holds returns at
once) and, when they do not, the failure says what was awaited instead of hanging the suite.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ..errors import JianmuError

T = TypeVar("T")

PATIENCE = 120.0
"""Seconds a test waits for something that should happen (a process or server to start, a file
to appear, a reply, an event) before it fails: far beyond what a loaded machine needs."""


class WaitTimeout(AssertionError, JianmuError):
    """What was awaited did not happen within the bound (an AssertionError: a test failure)."""


def wait_until(
    condition: Callable[[], T],
    what: str,
    *,
    timeout: float = PATIENCE,
    interval: float = 0.05,
    abort: Callable[[], str | None] | None = None,
) -> T:
    """Poll `condition` until it returns a truthy value, and return that value.

    `what` completes "gave up waiting for ..." in the failure. `abort`, polled too, returns why
    waiting is pointless (e.g. the child process exited), which fails at once with that reason.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = _check(condition, what, timeout, deadline, abort)
        if value:
            return value
        time.sleep(interval)


async def wait_until_async(
    condition: Callable[[], T],
    what: str,
    *,
    timeout: float = PATIENCE,
    interval: float = 0.05,
    abort: Callable[[], str | None] | None = None,
) -> T:
    """`wait_until` inside an event loop: polls without blocking it (what is awaited may need it)."""
    deadline = time.monotonic() + timeout
    while True:
        value = _check(condition, what, timeout, deadline, abort)
        if value:
            return value
        await asyncio.sleep(interval)


def _check(
    condition: Callable[[], T],
    what: str,
    timeout: float,
    deadline: float,
    abort: Callable[[], str | None] | None,
) -> T:
    """One poll: the condition's value, or the failure once waiting is pointless or too long."""
    value = condition()
    if value:
        return value
    if abort is not None and (reason := abort()) is not None:
        raise WaitTimeout(f"stopped waiting for {what}: {reason}")
    if time.monotonic() > deadline:
        raise WaitTimeout(f"gave up waiting for {what} after {timeout:g} s")
    return value


def exited(process: subprocess.Popen[Any]) -> Callable[[], str | None]:
    """An `abort` for `wait_until`: waiting for a child's doing is pointless once it has exited."""
    return lambda: None if process.poll() is None else f"the process exited ({process.returncode})"


async def await_within(awaitable: Awaitable[T], what: str, *, timeout: float = PATIENCE) -> T:
    """`await awaitable`, failing with a message naming `what` if it takes over `timeout` s."""
    scope = asyncio.timeout(timeout)
    try:
        async with scope:
            return await awaitable
    except TimeoutError:
        if not scope.expired():
            raise  # the awaitable's own TimeoutError
        raise WaitTimeout(f"gave up waiting for {what} after {timeout:g} s") from None
