"""bt.eager: a coroutine's first step runs at once, as its own task, in its own context."""

from __future__ import annotations

import asyncio
import contextvars

import anyio
import pytest

from jianmu_like._base.speed import fast
from jianmu_like.bt._eager import NOT_DONE, start_eager
from jianmu_like.testing import PATIENCE

var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")

pytestmark = pytest.mark.skipif(not fast("eager"), reason="tests the eager fast path (JIANMU_FAST_PATHS)")


async def test_a_step_that_finishes_returns_its_result_at_once() -> None:
    seen: list[asyncio.Task[object] | None] = []

    async def quick() -> int:
        seen.append(asyncio.current_task())
        return 5

    runner = asyncio.current_task()
    task, result = start_eager(quick())
    assert result == 5
    assert seen == [task] and task is not runner  # it ran as its own task...
    assert asyncio.current_task() is runner  # ...and the caller's task is current again


async def test_a_step_that_waits_carries_on_in_the_same_task() -> None:
    seen: list[asyncio.Task[object] | None] = []

    async def slow() -> str:
        seen.append(asyncio.current_task())
        await asyncio.sleep(0.001)
        seen.append(asyncio.current_task())
        return "done"

    task, result = start_eager(slow(), name="slow")
    assert result is NOT_DONE and not task.done() and task.get_name() == "slow"
    assert await task == "done"
    assert seen == [task, task]


async def test_each_coroutine_has_its_own_context() -> None:
    async def set_and_read(value: str) -> str:
        before = var.get()
        var.set(value)
        await asyncio.sleep(0) if value == "slow" else None
        return f"{before}->{var.get()}"

    var.set("caller")
    _, first = start_eager(set_and_read("a"))
    _, second = start_eager(set_and_read("b"))  # may reuse the first one's task
    task, third = start_eager(set_and_read("slow"))
    assert (first, second, third) == ("caller->a", "caller->b", NOT_DONE)
    assert await task == "caller->slow"
    assert var.get() == "caller"


async def test_cancelled_before_its_task_ran() -> None:
    waited: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    cleaned: list[str] = []

    async def wait_forever() -> None:
        try:
            await waited
        finally:
            cleaned.append("finally")

    task, result = start_eager(wait_forever())
    assert result is NOT_DONE
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned == ["finally"] and waited.cancelled()


async def test_deadlines_entered_in_the_first_step_belong_to_the_task() -> None:
    async def with_asyncio_timeout() -> str:
        try:
            async with asyncio.timeout(0.005):
                await asyncio.sleep(PATIENCE)  # far beyond the deadline, however slow the machine
        except TimeoutError:
            return "asyncio timeout"
        return "no timeout"

    async def with_anyio_deadline() -> str:
        with anyio.move_on_after(0.005) as scope:
            await asyncio.sleep(PATIENCE)
        return "anyio deadline" if scope.cancelled_caught else "no deadline"

    first, _ = start_eager(with_asyncio_timeout())
    second, _ = start_eager(with_anyio_deadline())
    assert await first == "asyncio timeout"
    assert await second == "anyio deadline"


async def test_an_exception_in_the_first_step_is_raised_to_the_caller() -> None:
    async def broken() -> None:
        raise KeyError("nope")

    with pytest.raises(KeyError, match="nope"):
        start_eager(broken())
    task, result = start_eager(asyncio.sleep(0, result="still fine"))  # the next start works
    assert result is NOT_DONE
    assert await task == "still fine"
