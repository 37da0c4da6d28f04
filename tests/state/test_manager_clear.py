"""StateManager.clear: empties containers (top level and namespaced), bypassing reducers."""

from __future__ import annotations

from jianmu_like.models._messages import ToolCall
from jianmu_like.nodes._tool_outcome import ToolOutcome
from jianmu_like.presets.react import ReActState
from jianmu_like.state._manager import StateManager


def test_clear_empties_filled_containers_and_keeps_empty_ones() -> None:
    sm = StateManager(ReActState)
    sm.update({"tool_results": {"c1": ToolOutcome(content="3")}, "actions": [ToolCall(id="c1", name="add")]})
    untouched = sm.get("pending_approvals")
    version = sm.version
    sm.clear(("tool_results", "actions", "pending_approvals"))
    assert sm.get("tool_results") == {} and sm.get("actions") == []
    assert sm.get("pending_approvals") is untouched  # already empty: no new container
    assert sm.version > version


def test_clear_in_a_namespace_leaves_the_top_level_alone() -> None:
    sm = StateManager(ReActState)
    sm.update({"tool_results": {"c1": ToolOutcome(content="top")}})
    sm.update({"tool_results": {"c2": ToolOutcome(content="ns")}}, "a")
    sm.clear(("tool_results", "approval_decisions"), "a")
    assert sm.get("tool_results", "a") == {}
    assert list(sm.get("tool_results")) == ["c1"]
