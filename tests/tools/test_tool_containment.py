"""A tool cannot take the process down: exits, stuck threads, swallowed cancellation, bad errors."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import subprocess
import sys
import textwrap
import threading
from typing import Any

import pytest
import structlog.testing

from jianmu_like import Agent, ReActConfig, create_react_node, human, tool
from jianmu_like.testing import PATIENCE, await_within, call, calls, reply, scripted_client, wait_until
from jianmu_like.tools._errors import ToolExitError
from jianmu_like.tools._threads import DaemonThreadPool, run_in_daemon_thread


async def run_agent(tools: list[Any], script: list[Any], **config: Any) -> Any:
    root = create_react_node(model_client=scripted_client(script), tools=tools, config=ReActConfig(**config))
    return await Agent(root).run(input_data={"messages": [human("go")]})


def observations(result: Any) -> list[str]:
    return [m.content for m in result.state.messages if m.role == "tool"]


@tool
def exits() -> str:
    """Calls sys.exit like a script would."""
    sys.exit(3)


@tool
def parses(argv: str) -> str:
    """Runs an argparse CLI on bad input (it raises SystemExit(2))."""
    parser = argparse.ArgumentParser(prog="cli")
    parser.add_argument("--n", type=int, required=True)
    return str(parser.parse_args(argv.split()).n)


@tool
async def exits_async() -> str:
    """An async tool calling sys.exit."""
    raise SystemExit("bye")


@tool
def interrupts() -> str:
    """Raises KeyboardInterrupt in its worker thread: the tool's own doing, not a Ctrl-C."""
    raise KeyboardInterrupt


async def test_exits_in_tools_become_observations_and_the_run_goes_on() -> None:
    script = [
        calls(call("exits"), call("parses", argv="--n x"), call("exits_async"), call("interrupts")),
        reply("still here"),
    ]
    result = await run_agent([exits, parses, exits_async, interrupts], script)
    assert result.status == "success" and result.final_answer == "still here"
    assert observations(result) == [
        "Error: tool 'exits' tried to stop the process (SystemExit(3)); only this call was stopped",
        "Error: tool 'parses' tried to stop the process (SystemExit(2)); only this call was stopped",
        "Error: tool 'exits_async' tried to stop the process (SystemExit(bye)); only this call was stopped",
        "Error: tool 'interrupts' tried to stop the process (KeyboardInterrupt); only this call was stopped",
    ]


async def test_other_agents_on_the_loop_are_untouched_by_an_exiting_tool() -> None:
    quiet = run_agent([], [reply("fine")])
    loud = run_agent([exits], [call("exits"), reply("recovered")])
    first, second = await asyncio.gather(quiet, loud)
    assert (first.final_answer, second.final_answer) == ("fine", "recovered")


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message for you")

    def __repr__(self) -> str:
        raise RuntimeError("no repr either")


@tool
def broken_error() -> str:
    """Raises an exception that cannot be rendered."""
    raise Unprintable


async def test_an_exception_that_cannot_be_rendered_still_answers_the_call() -> None:
    result = await run_agent([broken_error], [call("broken_error"), reply("ok")])
    assert result.status == "success"
    assert observations(result) == [
        "Error: tool 'broken_error' raised Unprintable: "
        "<Unprintable object: its message could not be rendered>"
    ]


@tool(timeout=0.2)
async def stubborn() -> str:
    """Swallows its cancellation and answers late."""
    with contextlib.suppress(asyncio.CancelledError):  # the bug under test: cancellation ignored
        await asyncio.sleep(30)
    await asyncio.sleep(0.05)
    return "LATE VALUE"


async def test_the_late_result_of_a_tool_swallowing_its_timeout_is_dropped() -> None:
    result = await run_agent([stubborn], [call("stubborn"), reply("moved on")])
    assert result.status == "success" and result.final_answer == "moved on"
    assert observations(result) == ["Error: tool 'stubborn' timed out after 0.2 s"]
    assert all("LATE VALUE" not in (m.content or "") for m in result.state.messages)


GRACE = 0.5
"""What a cancelled tool call gets before it is abandoned (`nodes._tool_calls.ABANDON_GRACE`)."""
SLACK = 3.0
"""What a loaded CI machine may add to a bound: far below what an unfixed run takes (the tool's
60 s, or forever)."""


async def _within(task: asyncio.Future[Any], bound: float, release: asyncio.Event) -> None:
    """Wait at most `bound` s for `task`; past it, let the tool go (so nothing hangs) and fail."""
    done, _ = await asyncio.wait({task}, timeout=bound)
    if not done:
        release.set()
        await await_within(asyncio.wait({task}), "the run once the tool was let go")
        pytest.fail(f"the run was held past {bound:g} s by a tool ignoring its cancellation")


def _obstinate(
    release: asyncio.Event, ended: list[str], *, timeout: float, started: asyncio.Event | None = None
) -> Any:
    """A tool that swallows every cancellation and waits for `release` (forever, for the run)."""

    @tool(timeout=timeout)
    async def obstinate() -> str:
        """Ignores its cancellation and goes on waiting."""
        if started is not None:
            started.set()
        while not release.is_set():
            with contextlib.suppress(asyncio.CancelledError):  # the bug under test
                await release.wait()
        ended.append("ended")
        return "LATE VALUE"

    return obstinate


@pytest.mark.parametrize("timeout", [0.3, 1.0])
async def test_a_tool_ignoring_its_cancellation_is_abandoned_at_its_timeout(timeout: float) -> None:
    """The run goes on within the timeout and the grace; the stray goes on in a task of its own,
    referenced until it ends, logged, never awaited by the run, and its late result dropped."""
    from jianmu_like.nodes import _tool_calls

    release, ended = asyncio.Event(), []
    loop = asyncio.get_running_loop()
    started = loop.time()
    bound = timeout + GRACE + SLACK
    with structlog.testing.capture_logs() as logs:
        run = asyncio.ensure_future(
            run_agent([_obstinate(release, ended, timeout=timeout)], [call("obstinate"), reply("moved on")])
        )
        await _within(run, bound, release)
    result = run.result()
    took = loop.time() - started
    assert result.status == "success" and result.final_answer == "moved on"
    assert observations(result) == [f"Error: tool 'obstinate' timed out after {timeout:g} s"]
    assert took < bound, took
    [stray] = [task for task in _tool_calls._strays if not task.done()]
    [abandoned] = [log for log in logs if log["event"] == "tool_call_abandoned"]
    assert abandoned["tool"] == "obstinate" and "ignored its cancellation" in abandoned["detail"]
    assert ended == []  # still running in the background
    release.set()
    await await_within(asyncio.wait({stray}), "the stray to end once released")
    assert ended == ["ended"] and stray not in _tool_calls._strays
    assert all("LATE VALUE" not in (m.content or "") for m in result.state.messages)


async def test_cancelling_a_run_whose_tool_ignores_cancellation_ends_within_the_grace() -> None:
    from jianmu_like.nodes import _tool_calls

    release, ended = asyncio.Event(), []
    began = asyncio.Event()
    stuck = _obstinate(release, ended, timeout=60, started=began)
    task = asyncio.ensure_future(run_agent([stuck], [call("obstinate"), reply("no")]))
    await await_within(began.wait(), "the tool to start")
    loop = asyncio.get_running_loop()
    cancelled_at = loop.time()
    task.cancel()
    await _within(task, GRACE + SLACK, release)
    assert task.cancelled() and loop.time() - cancelled_at < GRACE + SLACK
    # Cancelled again (as the event loop's shutdown does), the stray is closed: it cannot hold
    # the process, whatever it swallows.
    [stray] = [t for t in _tool_calls._strays if not t.done()]
    stray.cancel()
    done, _ = await asyncio.wait({stray}, timeout=GRACE + SLACK)
    release.set()  # an unfixed stray ends now: nothing hangs
    await await_within(asyncio.wait({stray}), "the stray to end")
    assert done == {stray} and ended == []


@tool
async def cancels_itself() -> str:
    """Raises CancelledError though nobody cancelled it."""
    raise asyncio.CancelledError


@tool
async def raises_timeout() -> str:
    """Its own TimeoutError, long before its deadline."""
    raise TimeoutError("upstream took too long")


async def test_a_tools_own_cancelled_or_timeout_error_is_an_observation() -> None:
    result = await run_agent(
        [cancels_itself, raises_timeout], [calls(call("cancels_itself"), call("raises_timeout")), reply("ok")]
    )
    assert result.status == "success"
    assert observations(result) == [
        "Error: tool 'cancels_itself' was cancelled",
        "Error: tool 'raises_timeout' raised TimeoutError: upstream took too long",
    ]


async def test_the_real_cancellation_of_a_run_still_stops_it() -> None:
    started = asyncio.Event()

    @tool
    async def waits() -> str:
        """Waits for a long time."""
        started.set()
        await asyncio.sleep(30)
        return "never"

    task = asyncio.ensure_future(run_agent([waits], [call("waits"), reply("no")]))
    await await_within(started.wait(), "the tool to start")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_daemon_pool_runs_sync_work_with_context_and_errors() -> None:
    assert await run_in_daemon_thread(lambda a, b=0: a + b, 1, b=2) == 3
    assert await run_in_daemon_thread(threading.current_thread) is not threading.current_thread()
    assert (await run_in_daemon_thread(threading.current_thread)).daemon
    with pytest.raises(ValueError, match="boom"):
        await run_in_daemon_thread(lambda: (_ for _ in ()).throw(ValueError("boom")))
    with pytest.raises(ToolExitError, match=r"SystemExit\(4\)"):
        await run_in_daemon_thread(sys.exit, 4)


def test_an_abandoned_job_gives_its_slot_back() -> None:
    pool = DaemonThreadPool(max_workers=1)
    release = threading.Event()
    stuck = pool.submit(release.wait)
    wait_until(stuck.future.running, "the job to start", interval=0.001)
    pool.abandon(stuck)
    assert pool.submit(lambda: "next").future.result(timeout=PATIENCE) == "next"
    release.set()
    assert stuck.future.result(timeout=PATIENCE) is True


STUCK_SYNC_TOOL = textwrap.dedent(
    """
    import asyncio, threading
    from jianmu_like import Agent, create_react_node, human, tool
    from jianmu_like.testing import call, reply, scripted_client

    @tool(timeout=0.2)
    def stuck() -> str:
        \"\"\"Never returns.\"\"\"
        threading.Event().wait()
        return "never"

    async def main() -> None:
        client = scripted_client([call("stuck"), reply("gave up on it")])
        result = await Agent(create_react_node(model_client=client, tools=[stuck])).run(
            input_data={"messages": [human("go")]}
        )
        print(result.status, result.final_answer, flush=True)

    asyncio.run(main())
    """
)


def test_a_never_returning_sync_tool_does_not_keep_the_process_alive() -> None:
    done = subprocess.run(
        [sys.executable, "-c", STUCK_SYNC_TOOL], capture_output=True, text=True, timeout=PATIENCE
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "success gave up on it"
