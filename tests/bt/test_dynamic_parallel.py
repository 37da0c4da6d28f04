"""DynamicParallel on its own: children built per run from the state, capped, policies."""

from __future__ import annotations

import operator
from typing import Annotated, Any

import py_trees
import pytest
from py_trees.common import Status
from pydantic import Field

from jianmu_like import Agent, ReActState
from jianmu_like.bt import DynamicParallel
from jianmu_like.bt._clone import reset_tree


class Seen(ReActState):
    seen: Annotated[list[str], operator.add] = Field(default_factory=list)


class Mark(py_trees.behaviour.Behaviour):
    """Writes its item into the state; fails for items starting with "bad"."""

    def __init__(self, name: str, item: str) -> None:
        super().__init__(name)
        self.item = item

    def update(self) -> Status:
        self.state_manager.update({"seen": [self.item]})  # type: ignore[attr-defined]
        return Status.FAILURE if self.item.startswith("bad") else Status.SUCCESS


def _node(**kwargs: Any) -> DynamicParallel:
    return DynamicParallel(
        "Fan",
        lambda node: list(node.state_manager.get("task").split()),
        lambda index, item: Mark(f"Fan.{index}", item),
        **kwargs,
    )


async def test_children_follow_the_state_of_each_run_and_are_capped() -> None:
    node = _node(max_children=3)
    agent = Agent(node, state_schema=Seen, inputs=["task"])
    first = await agent.run({"task": "a b"})
    assert first.status == "success" and [c.name for c in node.children] == ["Fan.0", "Fan.1"]
    second = await agent.run({"task": "c d e f"})
    assert second.status == "success" and [c.name for c in node.children] == ["Fan.0", "Fan.1", "Fan.2"]
    assert second.state.seen == ["a", "b", "c", "d", "e"]  # f was dropped
    assert node.feedback_message == "3 child(ren), 1 dropped"
    empty = await agent.run({"task": ""})
    assert empty.status == "success" and node.children == []


@pytest.mark.parametrize(("policy", "status"), [("all_done", "success"), ("all_success", "failure")])
async def test_a_failed_child_fails_the_node_only_under_all_success(policy: Any, status: str) -> None:
    agent = Agent(_node(policy=policy), state_schema=Seen, inputs=["task"])
    result = await agent.run({"task": "ok bad"})
    assert result.status == status
    assert result.state.seen == ["ok", "bad"]  # both ran


def test_reset_forgets_the_children_of_the_last_run() -> None:
    node = _node()
    node.children = [Mark("Fan.0", "x")]
    node.items = ["x"]
    reset_tree(node)
    assert node.children == [] and node.items == []
    with pytest.raises(ValueError, match="max_children must be >= 1"):
        _node(max_children=0)
