"""jianmu_like: LLM agents as behaviour trees.

Compose a ReAct agent (`create_react_node`), run it with `Agent`, embed it in larger py_trees
trees; state lives in a pydantic model managed by a `StateManager`, and a `ReactiveRunner`
ticks the tree only when something signals.

Importing the package is cheap: every public name is loaded on first access (PEP 562), so
`jianmu-like --help` or a script that needs one class never pays for the rest. The heavy
dependencies stay out even then: building and running an agent imports neither `openai` (only
`ModelClient.resolve()` does, when it builds a real client), nor `mcp`, nor `rich`, nor `structlog`.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .agent import Agent, AgentResult
    from .agentfile.loader import AgentFileError, load_agent, validate_agent_file
    from .bt.async_behaviour import AsyncBehaviour
    from .bt.conditions import StateCondition
    from .bt.dynamic_parallel import DynamicParallel
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
    from .checkpoint.target import open_checkpointer
    from .config import (
        ConfigError,
        ContextConfig,
        JianmuConfig,
        ReActConfig,
        ResilienceConfig,
        ToolSelectionConfig,
        get_config,
        load_config,
    )
    from .config import ResilienceConfig as ModelResilienceConfig
    from .durable.client import DurableClient
    from .durable.result import DurableRunResult
    from .durable.worker import DurableWorker
    from .guard.approvals import AlreadyDecided, Approval, ApprovalDecision, ApprovalError, InvalidEdit
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
    from .guard.review import PendingApproval, ThreadSuspendedError, list_pending, record_decision
    from .models.client import ModelClient
    from .models.errors import ModelCallFailed, ModelError
    from .models.messages import Message, ToolCall, ai, human, system, tool_message
    from .models.openai_provider import OpenAIProvider
    from .models.provider import ChatProvider
    from .models.structured import OutputSchema, StructuredOutputError, StructuredResult, structured_llm_call
    from .models.tool_protocol import ProtocolAdapter, ToolProtocol
    from .models.types import ModelRequest, ModelResponse, Usage
    from .nodes.context import ContextBuilder, ContextBuilderProtocol
    from .nodes.context_guard import ContextGuard
    from .nodes.critic import CriticNode
    from .nodes.interrupts import InterruptGate
    from .nodes.llm import AgentLLMNode
    from .nodes.llm_call import LLMCallNode
    from .nodes.tool_executor import ToolExecutor
    from .nodes.tool_node import ToolNode
    from .nodes.tool_selection import ToolSelectionNode
    from .presets.plan_execute import Plan, PlanStep, create_plan_execute_node
    from .presets.react import create_react_node
    from .presets.react_state import ReActState
    from .presets.research import ResearchSummary, create_research_node
    from .presets.supervisor import SupervisorConfig, create_supervisor_node
    from .results import AgentOutcome
    from .state.contract import StateContract, declare
    from .state.inputs import InputError
    from .state.manager import StateError, StateManager
    from .state.schema import Ephemeral, StateKeys
    from .telemetry.events import Event
    from .telemetry.hub import TelemetryHub
    from .template import AgentTemplate, Conversation, ConversationError
    from .tools.artifact import Artifact
    from .tools.base import Tool, tool
    from .tools.builtin import calculator, think
    from .tools.call_context import add_artifact, current_tool_call, finish
    from .tools.errors import ToolArgumentsError, ToolError, ToolProviderError, UnknownToolError
    from .tools.mcp.config import MCPServerConfig
    from .tools.mcp.provider import MCPToolProvider, mcp_servers_from_config
    from .tools.provider import StaticToolProvider, ToolProvider
    from .tools.run_context import RunContext, current_run
    from .tools.toolset import ToolSet

_LAZY: dict[str, str] = {
    "ContextConfig": "jianmu_like.config",
    "ContextGuard": "jianmu_like.nodes.context_guard",
    "InterruptGate": "jianmu_like.nodes.interrupts",
    "AgentOutcome": "jianmu_like.results",
    "InputError": "jianmu_like.state.inputs",
    "LLMCallNode": "jianmu_like.nodes.llm_call",
    "ToolNode": "jianmu_like.nodes.tool_node",
    "StateContract": "jianmu_like.state.contract",
    "declare": "jianmu_like.state.contract",
    "finish": "jianmu_like.tools.call_context",
    "current_tool_call": "jianmu_like.tools.call_context",
    "RunContext": "jianmu_like.tools.run_context",
    "current_run": "jianmu_like.tools.run_context",
    "InvalidEdit": "jianmu_like.guard.approvals",
    "add_artifact": "jianmu_like.tools.call_context",
    "Artifact": "jianmu_like.tools.artifact",
    "ToolSelectionNode": "jianmu_like.nodes.tool_selection",
    "ToolSelectionConfig": "jianmu_like.config",
    "OutputSchema": "jianmu_like.models.structured",
    "StructuredOutputError": "jianmu_like.models.structured",
    "StructuredResult": "jianmu_like.models.structured",
    "structured_llm_call": "jianmu_like.models.structured",
    "ProtocolAdapter": "jianmu_like.models.tool_protocol",
    "ToolProtocol": "jianmu_like.models.tool_protocol",
    "Agent": "jianmu_like.agent",
    "AgentFileError": "jianmu_like.agentfile.loader",
    "AgentLLMNode": "jianmu_like.nodes.llm",
    "AgentResult": "jianmu_like.agent",
    "AgentTemplate": "jianmu_like.template",
    "AllowList": "jianmu_like.guard.policies",
    "AlreadyDecided": "jianmu_like.guard.approvals",
    "Approval": "jianmu_like.guard.approvals",
    "ApprovalDecision": "jianmu_like.guard.approvals",
    "ApprovalError": "jianmu_like.guard.approvals",
    "ArgumentRule": "jianmu_like.guard.policies",
    "AsyncBehaviour": "jianmu_like.bt.async_behaviour",
    "ChatProvider": "jianmu_like.models.provider",
    "Checkpoint": "jianmu_like.checkpoint.store",
    "CheckpointError": "jianmu_like.checkpoint.store",
    "Checkpointer": "jianmu_like.checkpoint.store",
    "ConfigError": "jianmu_like.config",
    "ContextBuilder": "jianmu_like.nodes.context",
    "ContextBuilderProtocol": "jianmu_like.nodes.context",
    "Conversation": "jianmu_like.template",
    "ConversationError": "jianmu_like.template",
    "Decision": "jianmu_like.guard.decisions",
    "DurableClient": "jianmu_like.durable.client",
    "DurableRunResult": "jianmu_like.durable.result",
    "DurableWorker": "jianmu_like.durable.worker",
    "DenyList": "jianmu_like.guard.policies",
    "Ephemeral": "jianmu_like.state.schema",
    "Event": "jianmu_like.telemetry.events",
    "GuardConfig": "jianmu_like.guard.config",
    "GuardContext": "jianmu_like.guard.enforcer",
    "GuardDecision": "jianmu_like.guard.decisions",
    "GuardEnforcer": "jianmu_like.guard.enforcer",
    "GuardPolicy": "jianmu_like.guard.policies",
    "JianmuConfig": "jianmu_like.config",
    "LoopUntilSuccess": "jianmu_like.bt.loop",
    "MCPServerConfig": "jianmu_like.tools.mcp.config",
    "MCPToolProvider": "jianmu_like.tools.mcp.provider",
    "MaxToolCalls": "jianmu_like.guard.policies",
    "MemoryCheckpointer": "jianmu_like.checkpoint.store",
    "Message": "jianmu_like.models.messages",
    "ModelCallFailed": "jianmu_like.models.errors",
    "ModelClient": "jianmu_like.models.client",
    "ModelError": "jianmu_like.models.errors",
    "ModelRequest": "jianmu_like.models.types",
    "ModelResilienceConfig": "jianmu_like.config",
    "ModelResponse": "jianmu_like.models.types",
    "Node": "jianmu_like.bt.node",
    "OpenAIProvider": "jianmu_like.models.openai_provider",
    "PendingApproval": "jianmu_like.guard.review",
    "RateLimit": "jianmu_like.guard.policies",
    "Plan": "jianmu_like.presets.plan_execute",
    "PlanStep": "jianmu_like.presets.plan_execute",
    "ReActConfig": "jianmu_like.config",
    "ReActState": "jianmu_like.presets.react_state",
    "ReactiveRunner": "jianmu_like.bt.runner",
    "RequireApproval": "jianmu_like.guard.policies",
    "ResearchSummary": "jianmu_like.presets.research",
    "ResilienceConfig": "jianmu_like.config",
    "RunOutcome": "jianmu_like.bt.runner",
    "SQLiteCheckpointer": "jianmu_like.checkpoint.store",
    "StateCondition": "jianmu_like.bt.conditions",
    "StateError": "jianmu_like.state.manager",
    "StateKeys": "jianmu_like.state.schema",
    "StateManager": "jianmu_like.state.manager",
    "StaticToolProvider": "jianmu_like.tools.provider",
    "TelemetryHub": "jianmu_like.telemetry.hub",
    "ThreadSuspendedError": "jianmu_like.guard.review",
    "Tool": "jianmu_like.tools.base",
    "ToolArgumentsError": "jianmu_like.tools.errors",
    "ToolCall": "jianmu_like.models.messages",
    "ToolError": "jianmu_like.tools.errors",
    "ToolExecutor": "jianmu_like.nodes.tool_executor",
    "ToolProvider": "jianmu_like.tools.provider",
    "ToolProviderError": "jianmu_like.tools.errors",
    "ToolSet": "jianmu_like.tools.toolset",
    "UnknownToolError": "jianmu_like.tools.errors",
    "Usage": "jianmu_like.models.types",
    "ai": "jianmu_like.models.messages",
    "calculator": "jianmu_like.tools.builtin",
    "create_plan_execute_node": "jianmu_like.presets.plan_execute",
    "create_react_node": "jianmu_like.presets.react",
    "create_supervisor_node": "jianmu_like.presets.supervisor",
    "SupervisorConfig": "jianmu_like.presets.supervisor",
    "DynamicParallel": "jianmu_like.bt.dynamic_parallel",
    "CriticNode": "jianmu_like.nodes.critic",
    "create_research_node": "jianmu_like.presets.research",
    "get_config": "jianmu_like.config",
    "human": "jianmu_like.models.messages",
    "list_pending": "jianmu_like.guard.review",
    "load_agent": "jianmu_like.agentfile.loader",
    "load_config": "jianmu_like.config",
    "mcp_servers_from_config": "jianmu_like.tools.mcp.provider",
    "open_checkpointer": "jianmu_like.checkpoint.target",
    "policies_from_config": "jianmu_like.guard.config",
    "policy": "jianmu_like.guard.policies",
    "record_decision": "jianmu_like.guard.review",
    "system": "jianmu_like.models.messages",
    "think": "jianmu_like.tools.builtin",
    "tool": "jianmu_like.tools.base",
    "tool_message": "jianmu_like.models.messages",
    "validate_agent_file": "jianmu_like.agentfile.loader",
}
_ALIASES = {"ModelResilienceConfig": "ResilienceConfig"}


def __getattr__(name: str) -> Any:
    """Load a public name on first access (see the module docstring)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'jianmu_like' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), _ALIASES.get(name, name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "Agent",
    "AgentFileError",
    "AgentLLMNode",
    "AgentOutcome",
    "AgentResult",
    "AgentTemplate",
    "AllowList",
    "AlreadyDecided",
    "Approval",
    "ApprovalDecision",
    "ApprovalError",
    "ArgumentRule",
    "Artifact",
    "AsyncBehaviour",
    "ChatProvider",
    "Checkpoint",
    "CheckpointError",
    "Checkpointer",
    "ConfigError",
    "ContextBuilder",
    "ContextBuilderProtocol",
    "ContextConfig",
    "ContextGuard",
    "Conversation",
    "ConversationError",
    "CriticNode",
    "Decision",
    "DenyList",
    "DurableClient",
    "DurableRunResult",
    "DurableWorker",
    "DynamicParallel",
    "Ephemeral",
    "Event",
    "GuardConfig",
    "GuardContext",
    "GuardDecision",
    "GuardEnforcer",
    "GuardPolicy",
    "InputError",
    "InterruptGate",
    "InvalidEdit",
    "JianmuConfig",
    "LLMCallNode",
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
    "OutputSchema",
    "PendingApproval",
    "Plan",
    "PlanStep",
    "ProtocolAdapter",
    "RateLimit",
    "ReActConfig",
    "ReActState",
    "ReactiveRunner",
    "RequireApproval",
    "ResearchSummary",
    "ResilienceConfig",
    "RunContext",
    "RunOutcome",
    "SQLiteCheckpointer",
    "StateCondition",
    "StateContract",
    "StateError",
    "StateKeys",
    "StateManager",
    "StaticToolProvider",
    "StructuredOutputError",
    "StructuredResult",
    "SupervisorConfig",
    "TelemetryHub",
    "ThreadSuspendedError",
    "Tool",
    "ToolArgumentsError",
    "ToolCall",
    "ToolError",
    "ToolExecutor",
    "ToolNode",
    "ToolProtocol",
    "ToolProvider",
    "ToolProviderError",
    "ToolSelectionConfig",
    "ToolSelectionNode",
    "ToolSet",
    "UnknownToolError",
    "Usage",
    "add_artifact",
    "ai",
    "calculator",
    "create_plan_execute_node",
    "create_react_node",
    "create_research_node",
    "create_supervisor_node",
    "current_run",
    "current_tool_call",
    "declare",
    "finish",
    "get_config",
    "human",
    "list_pending",
    "load_agent",
    "load_config",
    "mcp_servers_from_config",
    "open_checkpointer",
    "policies_from_config",
    "policy",
    "record_decision",
    "structured_llm_call",
    "system",
    "think",
    "tool",
    "tool_message",
    "validate_agent_file",
]
