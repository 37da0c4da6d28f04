"""Exclusive async nodes run their work in the runner's task (bt.inline): the same outcomes,
cancellation and timeouts as with a task of their own, without the task."""

from __future__ import annotations

import asyncio
import contextvars

import py_trees
import pytest
from py_trees.common import Status
from pydantic import BaseModel

from jianmu_like._base.speed import fast
from jianmu_like.bt._async_behaviour import AsyncBehaviour
from jianmu_like.bt._composites import Sequence
from jianmu_like.bt._loop import LoopUntilSuccess
from jianmu_like.bt._runner import ReactiveRunner
from jianmu_like.state._manager import StateManager
from jianmu_like.testing import await_within

_marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="runner")

INLINE_ONLY = pytest.mark.skipif(not fast("inline"), reason="tests the inline fast path (JIANMU_FAST_PATHS)")


class S(BaseModel):
    count: int = 0
    termination: dict[str, object] | None = None


class Probe(AsyncBehaviour):
    """Waits on `gate` (or sleeps), recording the task it ran in and what it saw."""

    def __init__(self, name: str, gate: asyncio.Event | None = None, timeout: float | None = None) -> None:
        super().__init__(name)
        self.gate = gate
        self.timeout = timeout
        self.tasks: list[asyncio.Task[object] | None] = []
        self.in_flight_seen: list[int] = []
        self.events: list[str] = []

    async def update_async(self) -> Status:
        self.tasks.append(asyncio.current_task())
        _marker.set(self.name)  # must not leak into the runner's context
        try:
            if self.timeout is not None:
                try:
                    async with asyncio.timeout(self.timeout):
                        await asyncio.Event().wait()
                except TimeoutError:
                    self.events.append("timed out")
                    return Status.FAILURE
            elif self.gate is not None:
                await self.gate.wait()
            else:
                await asyncio.sleep(0)
            self.in_flight_seen.append(self.state_manager.wakeup.in_flight)
            self.tasks.append(asyncio.current_task())
        except asyncio.CancelledError:
            self.events.append("cancelled")
            raise
        finally:
            self.events.append("finally")
        sm = self.state_manager
        sm.update({"count": sm.get("count") + 1})
        return Status.SUCCESS


async def _run(root: py_trees.behaviour.Behaviour) -> tuple[str, asyncio.Task[object] | None]:
    outcome = await ReactiveRunner(root, StateManager(S)).run()
    return outcome.status, asyncio.current_task()


@INLINE_ONLY
async def test_an_exclusive_node_waits_in_the_runners_task_without_a_task_of_its_own() -> None:
    probe = Probe("probe")
    root = LoopUntilSuccess("loop", Sequence("body", memory=True, children=[probe]), max_iterations=2)
    status, runner_task = await _run(root)
    assert status == "success"
    assert probe.exclusive
    assert probe.tasks == [runner_task, runner_task]  # before and after the wait
    assert probe.in_flight_seen == [0]  # no task tracked while it waited
    assert _marker.get() == "runner"  # its context was its own copy


@pytest.mark.parametrize(
    "parent",
    [
        lambda child: py_trees.composites.Parallel(
            "par", policy=py_trees.common.ParallelPolicy.SuccessOnAll(), children=[child]
        ),
        lambda child: Sequence("reactive", memory=False, children=[child]),
        lambda child: py_trees.composites.Sequence("plain", memory=True, children=[child]),
    ],
    ids=["parallel", "sequence-without-memory", "py_trees-sequence"],
)
async def test_below_other_composites_a_node_keeps_its_own_task(parent: object) -> None:
    probe = Probe("probe")
    status, runner_task = await _run(parent(probe))  # type: ignore[operator]
    assert status == "success"
    assert not probe.exclusive
    assert probe.tasks[0] is probe.tasks[1] and probe.tasks[0] is not runner_task
    assert probe.in_flight_seen == [1]


async def test_cancelling_the_run_cancels_the_waiting_work_at_once() -> None:
    probe = Probe("probe", gate=asyncio.Event())
    runner = ReactiveRunner(Sequence("body", memory=True, children=[probe]), StateManager(S))
    run = asyncio.create_task(runner.run())
    await asyncio.sleep(0.01)
    assert probe.in_flight
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert probe.events == ["cancelled", "finally"]  # delivered before run() ended
    assert probe.status == Status.INVALID and not probe.in_flight


async def test_a_timeout_inside_the_work_stays_inside_it() -> None:
    probe = Probe("probe", timeout=0.01)
    root = Sequence("body", memory=True, children=[probe])
    status, runner_task = await _run(root)
    assert status == "failure" and probe.events == ["timed out", "finally"]
    assert runner_task is not None and runner_task.cancelling() == 0  # no cancellation left over


async def test_halting_the_tree_while_the_work_waits_ends_the_wait() -> None:
    gate = asyncio.Event()
    probe = Probe("probe", gate=gate)
    runner = ReactiveRunner(Sequence("body", memory=True, children=[probe]), StateManager(S))
    run = asyncio.create_task(runner.run())
    await asyncio.sleep(0.01)
    runner.halt()  # e.g. Agent.aclose() from another task
    if fast("inline"):
        assert probe.events == ["finally"]  # the work was closed at once
        assert not probe.in_flight
    outcome = await await_within(run, "the halted run to end")
    # (on the plain path the work is a task: it is cancelled, then its finally runs)
    assert probe.events[-1] == "finally" and not probe.in_flight  # the runner was not left waiting forever
    # ... and did not tick the stopped tree again: the run ends, saying why
    assert outcome.status == "failure" and outcome.fault is not None
    assert outcome.fault.kind == "halted" and "halted" in outcome.fault.message
    assert probe.tasks == [probe.tasks[0]]  # started once


@pytest.mark.parametrize("exclusive", [True, False], ids=["inline", "own-task"])
async def test_closing_an_agent_mid_run_ends_the_run_without_another_model_call(exclusive: bool) -> None:
    from jianmu_like import Agent, ReActConfig, create_react_node, human, tool
    from jianmu_like.testing import call, reply, scripted_client

    started, release = asyncio.Event(), asyncio.Event()

    @tool
    async def hold() -> str:
        """Wait for the test."""
        started.set()
        await release.wait()
        return "released"

    client = scripted_client([call("hold"), reply("done"), reply("again")])
    loop = create_react_node(model_client=client, tools=[hold], config=ReActConfig(max_iterations=5))
    root = (
        loop
        if exclusive
        else py_trees.composites.Parallel(
            "par", policy=py_trees.common.ParallelPolicy.SuccessOnAll(), children=[loop]
        )
    )
    agent = Agent(root, log_events=False)
    run = asyncio.create_task(agent.run({"messages": [human("go")]}))
    await await_within(started.wait(), "the tool to start")
    await agent.aclose()
    result = await await_within(run, "the closed agent's run to end")
    assert result.status == "failure"
    assert result.error is not None and "halted" in result.error
    assert len(client.provider.requests) == 1  # the stopped tree was not started again
