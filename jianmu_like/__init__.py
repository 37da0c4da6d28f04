"""jianmu_like: LLM agents as behaviour trees.

Compose a ReAct agent (`create_react_node`), run it with `Agent`, embed it in larger py_trees
trees; state lives in a pydantic model managed by a `StateManager`, and a `ReactiveRunner`
ticks the tree only when something signals.

Importing the package stays cheap: the parts that pull in heavy dependencies (`OpenAIProvider`:
the `openai` client; `MCPToolProvider`, `mcp_servers_from_config`: the `mcp` SDK) are loaded on
first access, and `ModelClient.resolve()` imports `openai` only when it builds a real client.
"""

from typing import TYPE_CHECKING, Any

from .agent import Agent, AgentResult
from .agentfile.loader import AgentFileError, load_agent, validate_agent_file
from .bt.async_behaviour import AsyncBehaviour
from .bt.conditions import StateCondition
from .bt.loop import LoopUntilSuccess
from .bt.node import Node
from .bt.runner import ReactiveRunner, RunOutcome
from .checkpoint.store import (
    Checkpoint,
    Checkpointer,
    CheckpointError,
    MemoryCheckpointer,
    SQLiteCheckpointer,
)
from .config import ConfigError, JianmuConfig, ReActConfig, ResilienceConfig, get_config, load_config
from .guard.approvals import Approval, ApprovalDecision, ApprovalError
from .guard.config import GuardConfig, policies_from_config
from .guard.decisions import Decision, GuardDecision
from .guard.enforcer import GuardContext, GuardEnforcer
from .guard.policies import (
    AllowList,
    ArgumentRule,
    DenyList,
    GuardPolicy,
    MaxToolCalls,
    RateLimit,
    RequireApproval,
    policy,
)
from .guard.review import PendingApproval, list_pending, record_decision
from .models.client import ModelClient
from .models.errors import ModelCallFailed, ModelError
from .models.messages import Message, ToolCall, ai, human, system, tool_message
from .models.provider import ChatProvider
from .models.types import ModelRequest, ModelResponse, Usage
from .nodes.context import ContextBuilder, ContextBuilderProtocol
from .nodes.llm import AgentLLMNode
from .nodes.tool_executor import ToolExecutor
from .presets.react import create_react_node
from .presets.react_state import ReActState
from .state.manager import StateError, StateManager
from .state.schema import Ephemeral, StateKeys
from .telemetry.events import Event
from .telemetry.hub import TelemetryHub
from .template import AgentTemplate, Conversation, ConversationError
from .tools.base import Tool, tool
from .tools.builtin import calculator, think
from .tools.errors import ToolArgumentsError, ToolError, ToolProviderError, UnknownToolError
from .tools.mcp.config import MCPServerConfig
from .tools.provider import StaticToolProvider, ToolProvider
from .tools.toolset import ToolSet

if TYPE_CHECKING:
    from .models.openai_provider import OpenAIProvider
    from .tools.mcp.provider import MCPToolProvider, mcp_servers_from_config

_LAZY = {
    "OpenAIProvider": "jianmu_like.models.openai_provider",
    "MCPToolProvider": "jianmu_like.tools.mcp.provider",
    "mcp_servers_from_config": "jianmu_like.tools.mcp.provider",
}


def __getattr__(name: str) -> Any:
    """Load the heavy exports on first access (see the module docstring)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'jianmu_like' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


ModelResilienceConfig = ResilienceConfig

__all__ = [
    "Agent",
    "AgentFileError",
    "AgentLLMNode",
    "AgentResult",
    "AgentTemplate",
    "AllowList",
    "Approval",
    "ApprovalDecision",
    "ApprovalError",
    "ArgumentRule",
    "AsyncBehaviour",
    "ChatProvider",
    "Checkpoint",
    "CheckpointError",
    "Checkpointer",
    "ConfigError",
    "ContextBuilder",
    "ContextBuilderProtocol",
    "Conversation",
    "ConversationError",
    "Decision",
    "DenyList",
    "Ephemeral",
    "Event",
    "GuardConfig",
    "GuardContext",
    "GuardDecision",
    "GuardEnforcer",
    "GuardPolicy",
    "JianmuConfig",
    "LoopUntilSuccess",
    "MCPServerConfig",
    "MCPToolProvider",
    "MaxToolCalls",
    "MemoryCheckpointer",
    "Message",
    "ModelCallFailed",
    "ModelClient",
    "ModelError",
    "ModelRequest",
    "ModelResilienceConfig",
    "ModelResponse",
    "Node",
    "OpenAIProvider",
    "PendingApproval",
    "RateLimit",
    "ReActConfig",
    "ReActState",
    "ReactiveRunner",
    "RequireApproval",
    "ResilienceConfig",
    "RunOutcome",
    "SQLiteCheckpointer",
    "StateCondition",
    "StateError",
    "StateKeys",
    "StateManager",
    "StaticToolProvider",
    "TelemetryHub",
    "Tool",
    "ToolArgumentsError",
    "ToolCall",
    "ToolError",
    "ToolExecutor",
    "ToolProvider",
    "ToolProviderError",
    "ToolSet",
    "UnknownToolError",
    "Usage",
    "ai",
    "calculator",
    "create_react_node",
    "get_config",
    "human",
    "list_pending",
    "load_agent",
    "load_config",
    "mcp_servers_from_config",
    "policies_from_config",
    "policy",
    "record_decision",
    "system",
    "think",
    "tool",
    "tool_message",
    "validate_agent_file",
]
