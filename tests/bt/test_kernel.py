"""Kernel semantics: signal-driven ticking, async tasks, halting, suspension, the loop decorator."""

from __future__ import annotations

import asyncio
from typing import Annotated

import py_trees
import pytest
from py_trees.common import Status
from pydantic import BaseModel, ConfigDict

from jianmu_like.bt._async_behaviour import AsyncBehaviour
from jianmu_like.bt._conditions import StateCondition
from jianmu_like.bt._loop import LoopUntilSuccess
from jianmu_like.bt._node import Node
from jianmu_like.bt._runner import ReactiveRunner
from jianmu_like.state._manager import StateManager
from jianmu_like.state._schema import Ephemeral
from jianmu_like.testing import await_within


class S(BaseModel):
    model_config = ConfigDict(extra="allow")
    count: int = 0
    flag: bool = False
    step_value: Annotated[int, Ephemeral(scope="step")] = 0
    termination: dict | None = None


class Sleeper(AsyncBehaviour):
    """Sleeps, then increments `count`; records cancellation."""

    def __init__(self, name: str, delay: float, event: asyncio.Event | None = None) -> None:
        super().__init__(name)
        self.delay = delay
        self.event = event
        self.cancelled = False
        self.started = 0

    async def update_async(self) -> Status:
        self.started += 1
        try:
            if self.event is not None:
                await self.event.wait()
            else:
                await asyncio.sleep(self.delay)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        sm = self.state_manager
        sm.update({"count": sm.get("count") + 1})
        return Status.SUCCESS


class CountingRoot(py_trees.composites.Sequence):
    """A Sequence that counts its ticks."""

    def __init__(self, children: list[py_trees.behaviour.Behaviour]) -> None:
        super().__init__("root", memory=True, children=children)
        self.ticks = 0

    def tick(self):  # type: ignore[no-untyped-def]
        self.ticks += 1
        yield from super().tick()


async def test_runner_ticks_only_on_signal() -> None:
    gate = asyncio.Event()
    sleeper = Sleeper("wait", 0, event=gate)
    root = CountingRoot([sleeper, py_trees.behaviours.Success("after")])
    sm = StateManager(S)
    runner = ReactiveRunner(root, sm)
    run = asyncio.create_task(runner.run())
    await asyncio.sleep(0.2)
    # The task is in flight, nothing signalled: exactly one tick in 200 ms.
    assert root.ticks == 1
    assert not run.done()
    gate.set()
    outcome = await await_within(run, "the run to end")
    assert outcome.status == "success"
    # One tick to start, one when the task finished: no idle ticks.
    assert root.ticks == 2 and outcome.ticks == 2
    assert sm.get("count") == 1


async def test_signal_from_outside_ticks_at_once() -> None:
    class WaitFlag(Node):
        def update(self) -> Status:
            return Status.SUCCESS if self.state_manager.get("flag") else Status.RUNNING

    keeper = Sleeper("keeper", 0, event=asyncio.Event())  # keeps the run from being quiescent
    root = py_trees.composites.Parallel(
        "par",
        policy=py_trees.common.ParallelPolicy.SuccessOnSelected([]),
        children=[WaitFlag("flag"), keeper],
    )
    root.policy = py_trees.common.ParallelPolicy.SuccessOnSelected(children=[root.children[0]])
    sm = StateManager(S)
    runner = ReactiveRunner(root, sm)
    run = asyncio.create_task(runner.run())
    await asyncio.sleep(0.05)
    assert runner.root.status == Status.RUNNING
    sm.update({"flag": True})
    sm.signal()
    outcome = await await_within(run, "the signalled run to end")
    assert outcome.status == "success"
    assert outcome.ticks == 2
    # The parallel finished: the still-running sibling was halted and its task cancelled.
    await asyncio.sleep(0)
    assert keeper.cancelled


async def test_signal_from_another_thread() -> None:
    class WaitFlag(Node):
        def update(self) -> Status:
            return Status.SUCCESS if self.state_manager.get("flag") else Status.RUNNING

    sm = StateManager(S)
    root = WaitFlag("flag")
    runner = ReactiveRunner(root, sm)
    sm.wakeup.in_flight += 1  # pretend an external job is pending, so the run waits

    def worker() -> None:
        sm.update({"flag": True})
        sm.wakeup.in_flight -= 1
        sm.signal()

    loop = asyncio.get_running_loop()
    run = asyncio.create_task(runner.run())
    await asyncio.sleep(0.05)
    await loop.run_in_executor(None, worker)
    outcome = await await_within(run, "the run signalled from a thread to end")
    assert outcome.status == "success"


async def test_quiescent_tree_is_suspended_and_resumes() -> None:
    class WaitFlag(Node):
        def update(self) -> Status:
            return Status.SUCCESS if self.state_manager.get("flag") else Status.RUNNING

    root = py_trees.composites.Sequence("seq", memory=True, children=[Sleeper("s", 0.01), WaitFlag("flag")])
    sm = StateManager(S)
    runner = ReactiveRunner(root, sm)
    outcome = await await_within(runner.run(), "the run to suspend")
    assert outcome.status == "suspended"
    assert root.status == Status.RUNNING
    sm.update({"flag": True})
    sm.signal()
    outcome = await await_within(runner.run(), "the resumed run to end")
    assert outcome.status == "success"
    assert sm.get("count") == 1  # the sleeper did not run again


async def test_cancelling_the_run_cancels_in_flight_tasks() -> None:
    sleeper = Sleeper("long", 30)
    sm = StateManager(S)
    runner = ReactiveRunner(py_trees.composites.Sequence("seq", memory=True, children=[sleeper]), sm)
    run = asyncio.create_task(runner.run())
    await asyncio.sleep(0.05)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    await asyncio.sleep(0)
    assert sleeper.cancelled
    assert sleeper.status == Status.INVALID


async def test_max_ticks_halts() -> None:
    class Flip(Node):
        def update(self) -> Status:
            self.state_manager.signal()
            return Status.RUNNING

    sm = StateManager(S)
    outcome = await ReactiveRunner(Flip("flip"), sm).run(max_ticks=5)
    assert outcome.status == "failure" and outcome.max_ticks_reached and outcome.ticks == 5


async def test_async_exception_is_failure_with_error() -> None:
    class Boom(AsyncBehaviour):
        async def update_async(self) -> Status:
            raise RuntimeError("kaput")

    node = Boom("boom")
    outcome = await ReactiveRunner(node, StateManager(S)).run()
    assert outcome.status == "failure"
    assert isinstance(node.error, RuntimeError)
    assert "kaput" in node.feedback_message


async def test_loop_until_success_retries_and_resets_step_state() -> None:
    seen_step_values: list[int] = []

    class Work(Node):
        def update(self) -> Status:
            sm = self.state_manager
            seen_step_values.append(sm.get("step_value"))
            sm.update({"count": sm.get("count") + 1, "step_value": 7})
            return Status.SUCCESS

    body = py_trees.composites.Sequence(
        "body", memory=True, children=[Work("work"), StateCondition("enough", lambda s: s.count >= 3)]
    )
    loop = LoopUntilSuccess("loop", body, max_iterations=10)
    sm = StateManager(S)
    outcome = await ReactiveRunner(loop, sm).run()
    assert outcome.status == "success"
    assert sm.get("count") == 3
    assert seen_step_values == [0, 0, 0]  # step-scoped value reset between iterations
    assert sm.get("termination") == {"reason": "completed", "iterations": 3}
    # Each failed iteration: one tick that fails and signals; the success tick ends the run.
    assert outcome.ticks == 3


async def test_loop_max_iterations_writes_termination() -> None:
    body = py_trees.behaviours.Failure("never")
    loop = LoopUntilSuccess("loop", body, max_iterations=4)
    sm = StateManager(S)
    outcome = await ReactiveRunner(loop, sm).run()
    assert outcome.status == "failure"
    assert sm.get("termination") == {"reason": "max_iterations", "iterations": 4, "max_iterations": 4}


async def test_loop_abort_condition_checked_before_each_iteration() -> None:
    sm = StateManager(S)

    class Work(Node):
        def update(self) -> Status:
            self.state_manager.update({"count": self.state_manager.get("count") + 1})
            return Status.FAILURE

    loop = LoopUntilSuccess(
        "loop",
        Work("w"),
        max_iterations=10,
        abort_condition=lambda: "budget_exhausted" if sm.get("count") >= 2 else None,
    )
    outcome = await ReactiveRunner(loop, sm).run()
    assert outcome.status == "failure"
    assert sm.get("count") == 2
    assert sm.get("termination") == {"reason": "budget_exhausted", "iterations": 2}


async def test_loop_namespaced_termination() -> None:
    sm = StateManager(S)
    loop = LoopUntilSuccess("loop", py_trees.behaviours.Success("ok"), namespace="a")
    await ReactiveRunner(loop, sm).run()
    assert sm.get("termination", namespace="a") == {"reason": "completed", "iterations": 1}
    assert sm.get("termination") is None


def test_state_condition_requires_one_mode() -> None:
    with pytest.raises(ValueError):
        StateCondition("c")
    with pytest.raises(ValueError):
        StateCondition("c", lambda s: True, key="x")
