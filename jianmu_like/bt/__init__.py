"""The behaviour-tree kernel: the node base classes to write your own nodes, the composites and
decorators the presets build with, and the reactive runner that ticks a tree when something
signals. It knows nothing of LLMs or ReAct."""

from typing import TYPE_CHECKING

from ..exports import lazy_exports

if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt name is an error there
    __all__, __getattr__, __dir__ = lazy_exports(__name__)

if TYPE_CHECKING:  # the public names, one source: jianmu_like.exports reads them at run time
    from ._async_behaviour import AsyncBehaviour as AsyncBehaviour
    from ._composites import Sequence as Sequence
    from ._conditions import StateCondition as StateCondition
    from ._dynamic_parallel import DynamicParallel as DynamicParallel
    from ._fault import NodeFailed as NodeFailed
    from ._fault import NodeFault as NodeFault
    from ._loop import LoopUntilSuccess as LoopUntilSuccess
    from ._node import Node as Node
    from ._node import NodeMixin as NodeMixin
    from ._node import walk as walk
    from ._runner import ReactiveRunner as ReactiveRunner
    from ._runner import RunOutcome as RunOutcome
