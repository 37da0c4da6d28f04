"""The tests' one rule for waiting: a condition polled up to a bound, failing with what was awaited."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from jianmu_like.testing import WaitTimeout, await_within, exited, wait_until, wait_until_async


def test_wait_until_returns_the_conditions_value_once_it_holds() -> None:
    polls = iter([None, [], ["ready"]])
    assert wait_until(lambda: next(polls), "the list", interval=0.001) == ["ready"]


def test_wait_until_fails_naming_what_it_waited_for() -> None:
    with pytest.raises(WaitTimeout, match=r"gave up waiting for the moon after 0.05 s"):
        wait_until(lambda: False, "the moon", timeout=0.05, interval=0.01)
    assert issubclass(WaitTimeout, AssertionError)  # a test failure, not an error of the code under test


def test_abort_stops_the_wait_at_once_with_its_reason() -> None:
    child = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    child.wait()
    with pytest.raises(WaitTimeout, match=r"stopped waiting for the banner: the process exited \(3\)"):
        wait_until(lambda: False, "the banner", abort=exited(child))  # not after PATIENCE


async def test_wait_until_async_polls_without_blocking_the_loop() -> None:
    flag: list[bool] = []
    asyncio.get_running_loop().call_later(0.01, flag.append, True)  # needs the loop to run
    assert await wait_until_async(lambda: flag, "the flag", interval=0.001) == [True]
    with pytest.raises(WaitTimeout, match="gave up waiting for nothing"):
        await wait_until_async(lambda: False, "nothing", timeout=0.02, interval=0.005)


async def test_await_within_names_what_timed_out_and_keeps_the_awaitables_own_errors() -> None:
    assert await await_within(asyncio.sleep(0, result=7), "a quick result") == 7
    with pytest.raises(WaitTimeout, match=r"gave up waiting for the event after 0.02 s"):
        await await_within(asyncio.Event().wait(), "the event", timeout=0.02)

    async def times_out_itself() -> None:
        raise TimeoutError("the upstream's own timeout")

    with pytest.raises(TimeoutError, match="the upstream's own timeout") as info:
        await await_within(times_out_itself(), "the call")
    assert not isinstance(info.value, WaitTimeout)
