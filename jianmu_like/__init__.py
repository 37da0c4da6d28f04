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

if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt name is an error there
    __all__, __getattr__, __dir__ = lazy_exports(__name__)

if TYPE_CHECKING:  # the public names, one source: jianmu_like.exports reads them at run time
    from ._base.config import ConfigError as ConfigError
    from ._base.config import ContextConfig as ContextConfig
    from ._base.config import JianmuConfig as JianmuConfig
    from ._base.config import ResilienceConfig as ResilienceConfig
    from ._base.config import ToolSelectionConfig as ToolSelectionConfig
    from ._base.config import get_config as get_config
    from ._base.config import load_config as load_config
    from ._run.agent import Agent as Agent
    from ._run.agent import AgentResult as AgentResult
    from ._run.review import ThreadSuspendedError as ThreadSuspendedError
    from ._run.template import AgentTemplate as AgentTemplate
    from ._run.template import Conversation as Conversation
    from ._run.template import ConversationError as ConversationError
    from .agentfile._loader import AgentFileError as AgentFileError
    from .agentfile._loader import load_agent as load_agent
    from .agentfile._loader import validate_agent_file as validate_agent_file
    from .checkpoint._contract import CheckpointError as CheckpointError
    from .checkpoint._contract import ThreadConflictError as ThreadConflictError
    from .errors import JianmuError as JianmuError
    from .guard._approvals import AlreadyDecided as AlreadyDecided
    from .guard._approvals import ApprovalError as ApprovalError
    from .models._client import ModelClient as ModelClient
    from .models._errors import ModelCallFailed as ModelCallFailed
    from .models._errors import ModelError as ModelError
    from .models._messages import Message as Message
    from .models._messages import ToolCall as ToolCall
    from .models._messages import ai as ai
    from .models._messages import human as human
    from .models._messages import system as system
    from .models._messages import tool_message as tool_message
    from .models._structured import StructuredOutputError as StructuredOutputError
    from .models._types import Usage as Usage
    from .nodes._results import AgentOutcome as AgentOutcome
    from .presets._plan_execute import Plan as Plan
    from .presets._plan_execute import PlanStep as PlanStep
    from .presets._plan_execute import create_plan_execute_node as create_plan_execute_node
    from .presets._research import ResearchSummary as ResearchSummary
    from .presets._research import create_research_node as create_research_node
    from .presets._supervisor import SupervisorConfig as SupervisorConfig
    from .presets._supervisor import create_supervisor_node as create_supervisor_node
    from .presets.react import create_react_node as create_react_node
    from .presets.react._config import ReActConfig as ReActConfig
    from .presets.react._state import ReActState as ReActState
    from .state._inputs import InputError as InputError
    from .tools._artifact import Artifact as Artifact
    from .tools._base import Tool as Tool
    from .tools._base import tool as tool
    from .tools._call_context import add_artifact as add_artifact
    from .tools._call_context import current_tool_call as current_tool_call
    from .tools._call_context import finish as finish
    from .tools._errors import ToolArgumentsError as ToolArgumentsError
    from .tools._errors import ToolError as ToolError
    from .tools._errors import ToolProviderError as ToolProviderError
    from .tools._errors import UnknownToolError as UnknownToolError
    from .tools._run_context import RunContext as RunContext
    from .tools._run_context import current_run as current_run
    from .tools._toolset import ToolSet as ToolSet
    from .tools.builtin import calculator as calculator
    from .tools.builtin import think as think
    from .tools.mcp._config import MCPServerConfig as MCPServerConfig
    from .tools.mcp._provider import MCPToolProvider as MCPToolProvider
