"""An exception in a node ends the run and says which node and why; it is never retried as an
ordinary FAILURE until the iteration limit hides it."""

from __future__ import annotations

import asyncio
from typing import Any

import py_trees
from py_trees.common import Status

from jianmu_like import Agent, ReActConfig, ReActState, create_react_node, human
from jianmu_like.bt._async_behaviour import AsyncBehaviour
from jianmu_like.bt._fault import NodeFault, failure_kind
from jianmu_like.bt._loop import LoopUntilSuccess
from jianmu_like.bt._node import Node
from jianmu_like.models._errors import ModelError
from jianmu_like.telemetry.events import NODE_FAILED, Event
from jianmu_like.testing import call, error_reply, scripted_client
from jianmu_like.tools._errors import ToolProviderError


class AsyncBoom(AsyncBehaviour):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.runs = 0

    async def update_async(self) -> Status:
        self.runs += 1
        raise RuntimeError("kaput")


class SyncBoom(Node):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.runs = 0

    def update(self) -> Status:
        self.runs += 1
        raise KeyError("missing")


class PlainBoom(py_trees.behaviour.Behaviour):
    """A plain py_trees behaviour, not one of ours."""

    def update(self) -> Status:
        raise ValueError("bad value")


class Waiter(AsyncBehaviour):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.cancelled = False

    async def update_async(self) -> Status:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return Status.SUCCESS


def looped(*children: py_trees.behaviour.Behaviour, max_iterations: int = 5) -> LoopUntilSuccess:
    body = py_trees.composites.Sequence("Body", memory=True, children=list(children))
    return LoopUntilSuccess("Loop", body, max_iterations=max_iterations)


async def run_collecting(agent: Agent) -> tuple[Any, list[Event]]:
    events: list[Event] = []
    agent.telemetry.subscribe(events.append)
    return await agent.run(), events


async def test_async_node_exception_stops_the_loop_at_once_naming_the_node() -> None:
    boom = AsyncBoom("Boom")
    result, events = await run_collecting(Agent(looped(boom), ReActState))
    assert boom.runs == 1  # not retried until max_iterations
    assert result.status == "failure"
    assert result.error == "RuntimeError: kaput"
    assert result.termination == {
        "reason": "node_error",
        "iterations": 1,
        "failed_node": "Loop/Body/Boom",
        "error": "RuntimeError: kaput",
    }
    assert result.fault == NodeFault(
        node="Loop/Body/Boom", kind="node_error", error_type="RuntimeError", message="kaput"
    )
    failed = [e for e in events if e.type == NODE_FAILED]
    assert len(failed) == 1 and failed[0].node == "Loop/Body/Boom"
    assert failed[0].data == {"kind": "node_error", "error_type": "RuntimeError", "error": "kaput"}
    types = [e.type for e in events]
    assert types.index(NODE_FAILED) < types.index("loop.terminated") < types.index("run.completed")
    completed = events[-1]
    assert completed.data["status"] == "failure" and completed.data["error"] == "RuntimeError: kaput"


async def test_sync_node_exception_is_located_in_the_tree() -> None:
    boom = SyncBoom("Sync")
    result, events = await run_collecting(Agent(looped(boom), ReActState))
    assert boom.runs == 1
    assert result.status == "failure"
    assert result.error == "KeyError: 'missing'"
    assert result.termination is not None and result.termination["failed_node"] == "Loop/Body/Sync"
    assert [e.node for e in events if e.type == NODE_FAILED] == ["Loop/Body/Sync"]


async def test_plain_py_trees_behaviour_exception_fails_the_run_instead_of_escaping() -> None:
    root = py_trees.composites.Sequence("Pipeline", memory=True, children=[PlainBoom("Plain")])
    result = await Agent(root, ReActState).run()
    assert result.status == "failure"
    assert result.error == "ValueError: bad value"
    assert result.termination == {
        "reason": "node_error",
        "failed_node": "Pipeline/Plain",
        "error": "ValueError: bad value",
    }


async def test_a_fault_halts_running_siblings() -> None:
    waiter = Waiter("Waiter")
    root = py_trees.composites.Parallel(
        "Both", policy=py_trees.common.ParallelPolicy.SuccessOnAll(), children=[waiter, AsyncBoom("Boom")]
    )
    result = await Agent(root, ReActState).run()
    await asyncio.sleep(0)  # let the cancellation land
    assert result.status == "failure" and result.fault is not None and result.fault.node == "Both/Boom"
    assert waiter.cancelled and not waiter.in_flight


async def test_the_next_run_starts_clean_after_a_fault() -> None:
    class FailsOnce(AsyncBehaviour):
        calls = 0

        async def update_async(self) -> Status:
            FailsOnce.calls += 1
            if FailsOnce.calls == 1:
                raise RuntimeError("first time")
            return Status.SUCCESS

    agent = Agent(looped(FailsOnce("Flaky")), ReActState)
    assert (await agent.run()).status == "failure"
    second = await agent.run()
    assert second.status == "success" and second.error is None and second.fault is None
    assert second.termination == {"reason": "completed", "iterations": 1}


def test_exceptions_name_their_kind() -> None:
    assert failure_kind(RuntimeError()) == "node_error"
    assert failure_kind(ModelError("x")) == "model_error"
    assert failure_kind(ToolProviderError("p", "initialize", "x")) == "provider_error"


async def test_tool_exception_stays_an_observation_not_a_node_error() -> None:
    def explode(x: int) -> int:
        """Always fails.

        Args:
            x: Anything.
        """
        raise RuntimeError("tool blew up")

    client = scripted_client([call("explode", x=1), "gave up"])
    result = await Agent(create_react_node(model_client=client, tools=[explode])).run(
        {"messages": [human("go")]}
    )
    assert result.status == "success" and result.final_answer == "gave up"
    observation = result.state.messages[2].content
    assert "tool blew up" in observation


async def test_model_error_in_the_last_iteration_is_reported_as_model_error() -> None:
    client = scripted_client([error_reply(400, "bad request")])
    config = ReActConfig(max_iterations=1)
    result, events = await run_collecting(Agent(create_react_node(model_client=client, config=config)))
    assert result.status == "failure"
    assert result.termination is not None and result.termination["reason"] == "model_error"
    assert result.error is not None and "bad request" in result.error
    failed = [e for e in events if e.type == NODE_FAILED]
    assert [(e.node, e.data["kind"]) for e in failed] == [
        ("ReActAgent/ReActAgent.Loop/ReActAgent.LLM", "model_error")
    ]
