"""The ReAct preset: a model that reasons, calls tools and answers, in a loop.

It owns everything ReAct-specific: its config (`ReActConfig`), the state class (`ReActState`),
the factory that builds the tree (`create_react_node`) and how its result is read. The state
keys are the nodes' (`jianmu_like.models._keys.StateKeys`), re-exported here. The layers below
(`nodes`, the kernel) know nothing of it.
"""

from __future__ import annotations

from ...models._keys import StateKeys
from ...nodes._tool_executor import ExecutionMode
from ._config import ReActConfig
from ._factory import ReActAbort, ReActFallback, create_react_node
from ._state import ReActState

__all__ = [
    "ExecutionMode",
    "ReActAbort",
    "ReActConfig",
    "ReActFallback",
    "ReActState",
    "StateKeys",
    "create_react_node",
]
