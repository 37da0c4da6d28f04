"""The node watcher publishes what the console must show, at every look, without walking the tree.

`Checked` is the server's watcher checked after every look (each tick and each event of a real
run) against the whole-tree walk it replaced: a node emitting an event and its ancestors are
RUNNING, every other node has its own status. The tree is spelled out (ids and paths) once
per run, and again only when a composite's children change (a dynamic parallel's)."""

from __future__ import annotations

import operator
from collections.abc import Iterator
from typing import Annotated, Any

import py_trees
import pytest
from py_trees.common import Status
from pydantic import Field

from jianmu_like import Agent, ReActConfig, ReActState, create_react_node, human, tool
from jianmu_like.bt import DynamicParallel
from jianmu_like.server import _nodes
from jianmu_like.server._nodes import NodeChange, NodeWatcher, node_entries
from jianmu_like.server._run_record import RunRecord
from jianmu_like.testing import call, reply, scripted_client


def truth(root: py_trees.behaviour.Behaviour, active: str | None) -> dict[str, str]:
    """What the console must show: the walk the watcher used to do at every look."""
    parts = active.split("/") if active else []
    working = {"/".join(parts[: i + 1]) for i in range(len(parts))}
    return {
        node_id: "RUNNING" if path in working else node.status.name
        for node_id, path, node in node_entries(root)
    }


class Checked(NodeWatcher):
    """The watcher, with the page's view (its published changes applied in order) checked."""

    def __init__(self) -> None:
        self.shown: dict[str, str] = {}
        self.looks = 0
        self.wrong: list[Any] = []
        """Looks after which the page was wrong (kept: telemetry subscribers' errors are logged)."""
        super().__init__(self.apply)

    def apply(self, changes: list[NodeChange]) -> None:
        if len({c["id"] for c in changes}) != len(changes):  # one change per node and message
            self.wrong.append(("a node twice", changes))
        for change in changes:
            self.shown[change["id"]] = change["status"]

    def look(self, active: str | None = None) -> None:
        super().look(active)
        runner = self._runner
        if runner is not None:
            self.looks += 1
            expected = truth(runner.root, active)
            if self.shown != expected:
                self.wrong.append((active, self.looks, self.shown.copy(), expected))


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts the watcher's walks of the whole tree."""
    counted: list[int] = []
    walk = _nodes.node_entries

    def counting(root: py_trees.behaviour.Behaviour) -> list[tuple[str, str, py_trees.behaviour.Behaviour]]:
        counted.append(1)
        return walk(root)

    monkeypatch.setattr(_nodes, "node_entries", counting)
    yield counted


async def drive(agent: Agent, inputs: Any) -> tuple[Checked, RunRecord]:
    record = RunRecord("run-1", "thread-1", agent, "question")
    watcher = record.nodes = Checked()
    await record.drive(lambda: agent.run(inputs))
    return watcher, record


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def responder(body: dict[str, Any]) -> Any:
    tools = sum(1 for m in body["messages"] if m["role"] == "tool")
    return call("add", a=tools, b=1) if tools < 4 else reply(f"done after {tools} calls")


async def test_a_react_run_shows_the_right_statuses_at_every_look_with_one_walk(walks: list[int]) -> None:
    root = create_react_node(
        model_client=scripted_client(responder),
        tools=[add],
        config=ReActConfig(stream=True, max_iterations=8),
    )
    agent = Agent(root, log_events=False)
    watcher, record = await drive(agent, {"messages": [human("count")]})
    assert record.status == "success" and record.result is not None, record.error
    assert record.result.final_answer == "done after 4 calls"
    assert watcher.looks > 20 and watcher.wrong == []  # every tick and every event was checked
    assert watcher.shown == truth(root, None) and watcher.shown["0"] == "SUCCESS"
    assert len(walks) == 1  # the tree spelled out once, at the run's start


class Seen(ReActState):
    seen: Annotated[list[str], operator.add] = Field(default_factory=list)


class Mark(py_trees.behaviour.Behaviour):
    def __init__(self, name: str, item: str) -> None:
        super().__init__(name)
        self.item = item

    def update(self) -> Status:
        self.state_manager.update({"seen": [self.item]})  # type: ignore[attr-defined]
        return Status.FAILURE if self.item.startswith("bad") else Status.SUCCESS


async def test_children_built_during_the_run_get_their_ids_and_statuses(walks: list[int]) -> None:
    fan = DynamicParallel(
        "Fan",
        lambda node: list(node.state_manager.get("task").split()),
        lambda index, item: Mark(f"Fan.{index}", item),
    )
    root = py_trees.composites.Sequence("Root", memory=True, children=[fan])
    agent = Agent(root, state_schema=Seen, inputs=["task"], log_events=False)
    watcher, record = await drive(agent, {"task": "a bad c"})
    assert record.status == "success" and watcher.wrong == []
    assert watcher.shown == truth(root, None)
    assert {k: v for k, v in watcher.shown.items() if k.startswith("0.0.")} == {
        "0.0.0": "SUCCESS",
        "0.0.1": "FAILURE",
        "0.0.2": "SUCCESS",
    }
    assert len(walks) == 2  # at the start, and once the children were built
