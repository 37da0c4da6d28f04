"""The nodes the presets are built from, to compose trees of your own: model calls, tool
execution, tool selection, context building and guarding, critics, interrupts."""

from typing import TYPE_CHECKING

from ..exports import lazy_exports

_EXPORTS = {
    ".answer_check": ("AnswerCheck",),
    ".context": (
        "ContextBuilder",
        "ContextBuilderProtocol",
    ),
    ".context_guard": ("ContextGuard",),
    ".critic": (
        "CriticNode",
        "CriticVerdict",
    ),
    ".interrupts": ("InterruptGate",),
    ".llm": ("AgentLLMNode",),
    ".llm_call": ("LLMCallNode",),
    ".message": ("MessageNode",),
    ".output": ("OutputNode",),
    ".synthesis": ("SynthesisNode",),
    ".tool_executor": ("ToolExecutor",),
    ".tool_node": ("ToolNode",),
    ".tool_outcome": ("ToolOutcome",),
    ".tool_selection": ("ToolSelectionNode",),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names for type checkers; tests/test_public_api.py checks they match
    from .answer_check import AnswerCheck as AnswerCheck
    from .context import ContextBuilder as ContextBuilder
    from .context import ContextBuilderProtocol as ContextBuilderProtocol
    from .context_guard import ContextGuard as ContextGuard
    from .critic import CriticNode as CriticNode
    from .critic import CriticVerdict as CriticVerdict
    from .interrupts import InterruptGate as InterruptGate
    from .llm import AgentLLMNode as AgentLLMNode
    from .llm_call import LLMCallNode as LLMCallNode
    from .message import MessageNode as MessageNode
    from .output import OutputNode as OutputNode
    from .synthesis import SynthesisNode as SynthesisNode
    from .tool_executor import ToolExecutor as ToolExecutor
    from .tool_node import ToolNode as ToolNode
    from .tool_outcome import ToolOutcome as ToolOutcome
    from .tool_selection import ToolSelectionNode as ToolSelectionNode
