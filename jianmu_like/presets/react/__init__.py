"""The ReAct preset: a model that reasons, calls tools and answers, in a loop.

It owns everything ReAct-specific: the state class (`ReActState`), the factory that builds the
tree (`create_react_node`) and how its result is read. The layers below (`nodes`, the kernel)
know nothing of it.
"""

from __future__ import annotations

from .factory import ReActAbort, ReActFallback, create_react_node
from .state import ReActState

__all__ = ["ReActAbort", "ReActFallback", "ReActState", "create_react_node"]
