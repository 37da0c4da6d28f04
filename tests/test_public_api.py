"""The public surface: everything in __all__ exists, and the documented entry points are there."""

from __future__ import annotations

import jianmu_like
import jianmu_like.testing


def test_all_names_resolve() -> None:
    for name in jianmu_like.__all__:
        assert hasattr(jianmu_like, name), name
    for name in jianmu_like.testing.__all__:
        assert hasattr(jianmu_like.testing, name), name


def test_documented_names_are_exported() -> None:
    documented = {
        "Agent", "AgentResult", "create_react_node", "ReActConfig", "ReActState", "StateKeys", "Ephemeral",
        "Message", "ToolCall", "human", "ai", "system", "ModelClient", "Tool", "tool", "ToolSet",
        "ToolProvider", "LoopUntilSuccess", "StateCondition", "AgentLLMNode", "ToolExecutor",
        "ReactiveRunner", "StateManager", "GuardEnforcer", "Decision", "get_config", "load_agent",
        "MCPToolProvider",
    }  # fmt: skip
    assert documented <= set(jianmu_like.__all__)


def test_all_is_sorted_and_unique() -> None:
    assert len(set(jianmu_like.__all__)) == len(jianmu_like.__all__)
