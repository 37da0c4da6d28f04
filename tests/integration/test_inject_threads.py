"""`Agent.inject` from another thread never waits forever: a run whose event loop stopped (or
closed) under it gets a clear error at once, over real HTTP (the scripted server)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from contextvars import Context
from typing import TypeVarTuple, Unpack

from jianmu_like import Agent, ReActConfig, create_react_node, human, tool
from jianmu_like.testing import ScriptedOpenAIServer, call

BOUND = 60.0
"""Generous: a loaded CI machine; the calls under test return at once when they work."""

Ts = TypeVarTuple("Ts")
INJECTOR = "injector"
scheduled = threading.Event()
"""Set when the injecting thread hands a callback to the run's loop (`call_soon_threadsafe`)."""
in_tool = threading.Event()


class WatchedLoop(asyncio.SelectorEventLoop):
    """A real event loop that reports when another thread hands it a callback."""

    def call_soon_threadsafe(
        self, callback: Callable[[Unpack[Ts]], object], *args: *Ts, context: Context | None = None
    ) -> asyncio.Handle:
        handle = super().call_soon_threadsafe(callback, *args, context=context)
        if threading.current_thread().name == INJECTOR:  # not the thread pools' completions
            scheduled.set()
        return handle


@tool
async def stop_the_loop() -> str:
    """Block the loop until a follow-up is handed to it, then stop the loop under the run."""
    in_tool.set()
    scheduled.wait(BOUND)  # blocks the loop's thread: the handed-over callback cannot run yet
    asyncio.get_running_loop().stop()  # the loop stops after this step, the callback never runs
    await asyncio.sleep(3600)
    return "unreachable"


def _inject_in_thread(agent: Agent, content: str) -> BaseException | None:
    """Call inject from a fresh thread; the test fails (instead of hanging) if it never returns."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            agent.inject(content)
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=target, name=INJECTOR, daemon=True)
    thread.start()
    thread.join(BOUND)
    assert not thread.is_alive(), "inject() from a thread is still waiting on a loop that stopped"
    return outcome[0]


def test_inject_from_a_thread_raises_when_the_runs_loop_stops_or_is_closed() -> None:
    scheduled.clear()
    in_tool.clear()
    with ScriptedOpenAIServer([call("stop_the_loop"), "never asked"]) as srv:
        root = create_react_node(
            model_client=srv.client(), tools=[stop_the_loop], config=ReActConfig(stream=False)
        )
        agent = Agent(root)
        loop = WatchedLoop()
        failures: list[BaseException] = []

        def drive() -> None:
            try:
                loop.run_until_complete(agent.run({"messages": [human("go")]}))
            except BaseException as exc:  # "Event loop stopped before Future completed."
                failures.append(exc)

        driver = threading.Thread(target=drive, daemon=True)
        driver.start()
        assert in_tool.wait(BOUND)
        # the loop is running (blocked in the tool): the follow-up is handed over, then it stops
        error = _inject_in_thread(agent, "and Y?")
        assert isinstance(error, RuntimeError) and "event loop is not running" in str(error)
        driver.join(BOUND)
        assert not driver.is_alive() and failures and "stopped" in str(failures[0])

        # stopped: the run can never take a follow-up, so none is queued silently
        error = _inject_in_thread(agent, "still there?")
        assert isinstance(error, RuntimeError) and "event loop is not running" in str(error)
        abandoned = asyncio.all_tasks(loop)
        loop.close()
        error = _inject_in_thread(agent, "and now?")
        assert isinstance(error, RuntimeError) and "event loop is not running" in str(error)
        assert agent.interrupts.contents() == []
        for task in abandoned:  # end the run left on the closed loop here, not in a later test's GC
            with contextlib.suppress(RuntimeError):  # its cleanup finds the loop closed
                task.get_coro().close()


@tool
async def hold() -> str:
    """Wait until the test releases it."""
    held.set()
    await release.wait()
    return "released"


held: asyncio.Event
release: asyncio.Event


async def test_inject_from_a_thread_into_a_running_loop_still_queues() -> None:
    global held, release
    held, release = asyncio.Event(), asyncio.Event()
    async with ScriptedOpenAIServer([call("hold"), "done"]) as srv:
        root = create_react_node(model_client=srv.client(), tools=[hold], config=ReActConfig(stream=False))
        agent = Agent(root)
        run = asyncio.create_task(agent.run({"messages": [human("go")]}))
        await held.wait()
        error = await asyncio.to_thread(_inject_in_thread, agent, "and Y?")
        release.set()
        result = await run
    assert error is None and result.final_answer == "done"
    assert srv.requests[1]["messages"][-1]["content"] == "[USER INTERRUPT] and Y?"
