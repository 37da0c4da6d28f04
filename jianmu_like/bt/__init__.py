"""The behaviour-tree kernel: the node base classes to write your own nodes, the composites and
decorators the presets build with, and the reactive runner that ticks a tree when something
signals. It knows nothing of LLMs or ReAct."""

from typing import TYPE_CHECKING

from ..exports import lazy_exports

_EXPORTS = {
    ".async_behaviour": ("AsyncBehaviour",),
    ".composites": ("Sequence",),
    ".conditions": ("StateCondition",),
    ".dynamic_parallel": ("DynamicParallel",),
    ".fault": (
        "NodeFailed",
        "NodeFault",
    ),
    ".loop": ("LoopUntilSuccess",),
    ".node": (
        "Node",
        "NodeMixin",
        "walk",
    ),
    ".runner": (
        "ReactiveRunner",
        "RunOutcome",
    ),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names for type checkers; tests/test_public_api.py checks they match
    from .async_behaviour import AsyncBehaviour as AsyncBehaviour
    from .composites import Sequence as Sequence
    from .conditions import StateCondition as StateCondition
    from .dynamic_parallel import DynamicParallel as DynamicParallel
    from .fault import NodeFailed as NodeFailed
    from .fault import NodeFault as NodeFault
    from .loop import LoopUntilSuccess as LoopUntilSuccess
    from .node import Node as Node
    from .node import NodeMixin as NodeMixin
    from .node import walk as walk
    from .runner import ReactiveRunner as ReactiveRunner
    from .runner import RunOutcome as RunOutcome
