"""The nodes the presets are built from, to compose trees of your own: model calls, tool
execution, tool selection, context building and guarding, critics, interrupts, and the state
keys they read and write (`StateKeys`)."""

from typing import TYPE_CHECKING

from ..exports import lazy_exports

if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt name is an error there
    __all__, __getattr__, __dir__ = lazy_exports(__name__)

if TYPE_CHECKING:  # the public names, one source: jianmu_like.exports reads them at run time
    from ..models._keys import StateKeys as StateKeys
    from ._a2a_node import A2AAgentNode as A2AAgentNode
    from ._answer_check import AnswerCheck as AnswerCheck
    from ._context import ContextBuilder as ContextBuilder
    from ._context import ContextBuilderProtocol as ContextBuilderProtocol
    from ._context import PromptRuntime as PromptRuntime
    from ._context_guard import ContextGuard as ContextGuard
    from ._critic import CriticNode as CriticNode
    from ._critic import CriticVerdict as CriticVerdict
    from ._interrupts import InterruptGate as InterruptGate
    from ._llm import AgentLLMNode as AgentLLMNode
    from ._llm_call import LLMCallNode as LLMCallNode
    from ._message import MessageNode as MessageNode
    from ._output import OutputNode as OutputNode
    from ._skill import SkillNode as SkillNode
    from ._synthesis import SynthesisNode as SynthesisNode
    from ._tool_executor import ToolExecutor as ToolExecutor
    from ._tool_node import ToolNode as ToolNode
    from ._tool_outcome import ToolOutcome as ToolOutcome
    from ._tool_selection import ToolSelectionNode as ToolSelectionNode
