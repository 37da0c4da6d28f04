"""jianmu_like: LLM agents as behaviour trees.

Compose a ReAct agent (`create_react_node`), run it with `Agent`, embed it in larger py_trees
trees; state lives in a pydantic model managed by a `StateManager`, and a `ReactiveRunner`
ticks the tree only when something signals.

The public API comes in tiers. This top level holds what an agent's author writes every day: the
agent, tools, the preset factories and their configs, the model client and messages, results,
errors and `load_agent`. Extension points live in curated subpackages, each with its `__all__`:
`jianmu_like.bt` (nodes and the runner), `.state`, `.nodes`, `.checkpoint`, `.guard` (policies
and approvals), `.models`, `.tools`, `.telemetry`, `.testing`, `.durable`; every exception is in
`jianmu_like.errors`.

Importing the package is cheap: every public name is loaded on first access (PEP 562, see
`jianmu_like.exports`), so `jianmu-like --help` or a script that needs one class never pays for
the rest. The heavy dependencies stay out even then: building and running an agent imports
neither `openai` (only `ModelClient.resolve()` does, when it builds a real client), nor `mcp`,
nor `rich`, nor `structlog`.
"""

from typing import TYPE_CHECKING

from .exports import lazy_exports

_EXPORTS = {
    ".agent": ("Agent", "AgentResult"),
    ".results": ("AgentOutcome",),
    ".template": ("AgentTemplate", "Conversation", "ConversationError"),
    ".agentfile.loader": ("AgentFileError", "load_agent", "validate_agent_file"),
    ".config": (
        "ConfigError",
        "ContextConfig",
        "JianmuConfig",
        "ReActConfig",
        "ResilienceConfig",
        "ToolSelectionConfig",
        "get_config",
        "load_config",
    ),
    ".errors": ("JianmuError",),
    ".presets.react": ("create_react_node",),
    ".presets.react_state": ("ReActState",),
    ".presets.plan_execute": ("Plan", "PlanStep", "create_plan_execute_node"),
    ".presets.research": ("ResearchSummary", "create_research_node"),
    ".presets.supervisor": ("SupervisorConfig", "create_supervisor_node"),
    ".models.client": ("ModelClient",),
    ".models.errors": ("ModelCallFailed", "ModelError"),
    ".models.messages": ("Message", "ToolCall", "ai", "human", "system", "tool_message"),
    ".models.structured": ("StructuredOutputError",),
    ".models.types": ("Usage",),
    ".tools.artifact": ("Artifact",),
    ".tools.base": ("Tool", "tool"),
    ".tools.builtin": ("calculator", "think"),
    ".tools.call_context": ("add_artifact", "current_tool_call", "finish"),
    ".tools.run_context": ("RunContext", "current_run"),
    ".tools.errors": ("ToolArgumentsError", "ToolError", "ToolProviderError", "UnknownToolError"),
    ".tools.mcp.config": ("MCPServerConfig",),
    ".tools.mcp.provider": ("MCPToolProvider",),
    ".tools.toolset": ("ToolSet",),
    ".state.inputs": ("InputError",),
    ".checkpoint.contract": ("CheckpointError", "ThreadConflictError"),
    ".guard.approvals": ("AlreadyDecided", "ApprovalError"),
    ".guard.review": ("ThreadSuspendedError",),
}
"""The top level's one list of names (see `jianmu_like.exports`): module → the names it gives."""

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names for type checkers; tests/test_public_api.py checks they match
    from .agent import Agent as Agent
    from .agent import AgentResult as AgentResult
    from .agentfile.loader import AgentFileError as AgentFileError
    from .agentfile.loader import load_agent as load_agent
    from .agentfile.loader import validate_agent_file as validate_agent_file
    from .checkpoint.contract import CheckpointError as CheckpointError
    from .checkpoint.contract import ThreadConflictError as ThreadConflictError
    from .config import ConfigError as ConfigError
    from .config import ContextConfig as ContextConfig
    from .config import JianmuConfig as JianmuConfig
    from .config import ReActConfig as ReActConfig
    from .config import ResilienceConfig as ResilienceConfig
    from .config import ToolSelectionConfig as ToolSelectionConfig
    from .config import get_config as get_config
    from .config import load_config as load_config
    from .errors import JianmuError as JianmuError
    from .guard.approvals import AlreadyDecided as AlreadyDecided
    from .guard.approvals import ApprovalError as ApprovalError
    from .guard.review import ThreadSuspendedError as ThreadSuspendedError
    from .models.client import ModelClient as ModelClient
    from .models.errors import ModelCallFailed as ModelCallFailed
    from .models.errors import ModelError as ModelError
    from .models.messages import Message as Message
    from .models.messages import ToolCall as ToolCall
    from .models.messages import ai as ai
    from .models.messages import human as human
    from .models.messages import system as system
    from .models.messages import tool_message as tool_message
    from .models.structured import StructuredOutputError as StructuredOutputError
    from .models.types import Usage as Usage
    from .presets.plan_execute import Plan as Plan
    from .presets.plan_execute import PlanStep as PlanStep
    from .presets.plan_execute import create_plan_execute_node as create_plan_execute_node
    from .presets.react import create_react_node as create_react_node
    from .presets.react_state import ReActState as ReActState
    from .presets.research import ResearchSummary as ResearchSummary
    from .presets.research import create_research_node as create_research_node
    from .presets.supervisor import SupervisorConfig as SupervisorConfig
    from .presets.supervisor import create_supervisor_node as create_supervisor_node
    from .results import AgentOutcome as AgentOutcome
    from .state.inputs import InputError as InputError
    from .template import AgentTemplate as AgentTemplate
    from .template import Conversation as Conversation
    from .template import ConversationError as ConversationError
    from .tools.artifact import Artifact as Artifact
    from .tools.base import Tool as Tool
    from .tools.base import tool as tool
    from .tools.builtin import calculator as calculator
    from .tools.builtin import think as think
    from .tools.call_context import add_artifact as add_artifact
    from .tools.call_context import current_tool_call as current_tool_call
    from .tools.call_context import finish as finish
    from .tools.errors import ToolArgumentsError as ToolArgumentsError
    from .tools.errors import ToolError as ToolError
    from .tools.errors import ToolProviderError as ToolProviderError
    from .tools.errors import UnknownToolError as UnknownToolError
    from .tools.mcp.config import MCPServerConfig as MCPServerConfig
    from .tools.mcp.provider import MCPToolProvider as MCPToolProvider
    from .tools.run_context import RunContext as RunContext
    from .tools.run_context import current_run as current_run
    from .tools.toolset import ToolSet as ToolSet
