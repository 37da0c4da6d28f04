"""Tools: functions a model may call, their providers, and the merged ToolSet an agent uses."""

from typing import TYPE_CHECKING

from ..exports import lazy_exports

if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt name is an error there
    __all__, __getattr__, __dir__ = lazy_exports(__name__)

if TYPE_CHECKING:  # the public names, one source: jianmu_like.exports reads them at run time
    from ._a2a import A2AAgentConfig as A2AAgentConfig
    from ._a2a import A2AAgentError as A2AAgentError
    from ._a2a import A2AAgentProvider as A2AAgentProvider
    from ._artifact import Artifact as Artifact
    from ._base import Tool as Tool
    from ._base import render_result as render_result
    from ._base import tool as tool
    from ._base import validate_tool_name as validate_tool_name
    from ._call_context import add_artifact as add_artifact
    from ._call_context import current_tool_call as current_tool_call
    from ._call_context import finish as finish
    from ._describe import describe_tool as describe_tool
    from ._describe import describe_tools as describe_tools
    from ._errors import ToolArgumentsError as ToolArgumentsError
    from ._errors import ToolError as ToolError
    from ._errors import ToolExitError as ToolExitError
    from ._errors import ToolProviderError as ToolProviderError
    from ._errors import UnknownToolError as UnknownToolError
    from ._provider import StaticToolProvider as StaticToolProvider
    from ._provider import ToolProvider as ToolProvider
    from ._questions import AlreadyAnswered as AlreadyAnswered
    from ._run_context import RunContext as RunContext
    from ._run_context import current_run as current_run
    from ._skills import Skill as Skill
    from ._skills import SkillSet as SkillSet
    from ._skills import load_skill as load_skill
    from ._toolset import ToolSet as ToolSet
    from .builtin import CalculatorError as CalculatorError
    from .builtin import builtin_tools as builtin_tools
    from .builtin import calculator as calculator
    from .builtin import evaluate as evaluate
    from .builtin import think as think
    from .mcp._auth import MCPAuthConfig as MCPAuthConfig
    from .mcp._auth import MCPAuthError as MCPAuthError
    from .mcp._auth import MCPLoginRequiredError as MCPLoginRequiredError
    from .mcp._config import MCPConfigError as MCPConfigError
    from .mcp._config import MCPServerConfig as MCPServerConfig
    from .mcp._config import parse_mcp_servers as parse_mcp_servers
    from .mcp._content import MCPConnectError as MCPConnectError
    from .mcp._content import MCPServerCrashedError as MCPServerCrashedError
    from .mcp._content import MCPServerError as MCPServerError
    from .mcp._content import MCPTimeoutError as MCPTimeoutError
    from .mcp._content import MCPToolError as MCPToolError
    from .mcp._content import render_mcp_result as render_mcp_result
    from .mcp._elicitation import ElicitationAnswer as ElicitationAnswer
    from .mcp._elicitation import ElicitationError as ElicitationError
    from .mcp._elicitation import ElicitationRequest as ElicitationRequest
    from .mcp._elicitation import UnknownElicitation as UnknownElicitation
    from .mcp._prompts import MCPPrompt as MCPPrompt
    from .mcp._prompts import MCPPromptError as MCPPromptError
    from .mcp._provider import MCPToolProvider as MCPToolProvider
    from .mcp._provider import mcp_servers_from_config as mcp_servers_from_config
    from .mcp._provider import mcp_tool_name as mcp_tool_name
    from .mcp._sampling import SamplingDecision as SamplingDecision
    from .mcp._sampling import SamplingPolicy as SamplingPolicy
    from .mcp._sampling import SamplingRequest as SamplingRequest
