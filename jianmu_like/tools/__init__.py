"""Tools: functions a model may call, their providers, and the merged ToolSet an agent uses."""

from typing import TYPE_CHECKING

from ..exports import lazy_exports

_EXPORTS = {
    ".base": (
        "Tool",
        "render_result",
        "tool",
        "validate_tool_name",
    ),
    ".builtin": (
        "CalculatorError",
        "builtin_tools",
        "calculator",
        "evaluate",
        "think",
    ),
    ".artifact": ("Artifact",),
    ".call_context": (
        "add_artifact",
        "current_tool_call",
        "finish",
    ),
    ".run_context": (
        "RunContext",
        "current_run",
    ),
    ".describe": (
        "describe_tool",
        "describe_tools",
    ),
    ".errors": (
        "ToolArgumentsError",
        "ToolError",
        "ToolExitError",
        "ToolProviderError",
        "UnknownToolError",
    ),
    ".mcp.config": (
        "MCPConfigError",
        "MCPServerConfig",
        "parse_mcp_servers",
    ),
    ".mcp.content": (
        "MCPConnectError",
        "MCPServerCrashedError",
        "MCPServerError",
        "MCPTimeoutError",
        "MCPToolError",
        "render_mcp_result",
    ),
    ".mcp.elicitation": (
        "ElicitationAnswer",
        "ElicitationError",
        "ElicitationRequest",
        "UnknownElicitation",
    ),
    ".mcp.provider": (
        "MCPToolProvider",
        "mcp_servers_from_config",
        "mcp_tool_name",
    ),
    ".mcp.sampling": (
        "SamplingDecision",
        "SamplingPolicy",
        "SamplingRequest",
    ),
    ".provider": (
        "StaticToolProvider",
        "ToolProvider",
    ),
    ".toolset": ("ToolSet",),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names for type checkers; tests/test_public_api.py checks they match
    from .artifact import Artifact as Artifact
    from .base import Tool as Tool
    from .base import render_result as render_result
    from .base import tool as tool
    from .base import validate_tool_name as validate_tool_name
    from .builtin import CalculatorError as CalculatorError
    from .builtin import builtin_tools as builtin_tools
    from .builtin import calculator as calculator
    from .builtin import evaluate as evaluate
    from .builtin import think as think
    from .call_context import add_artifact as add_artifact
    from .call_context import current_tool_call as current_tool_call
    from .call_context import finish as finish
    from .describe import describe_tool as describe_tool
    from .describe import describe_tools as describe_tools
    from .errors import ToolArgumentsError as ToolArgumentsError
    from .errors import ToolError as ToolError
    from .errors import ToolExitError as ToolExitError
    from .errors import ToolProviderError as ToolProviderError
    from .errors import UnknownToolError as UnknownToolError
    from .mcp.config import MCPConfigError as MCPConfigError
    from .mcp.config import MCPServerConfig as MCPServerConfig
    from .mcp.config import parse_mcp_servers as parse_mcp_servers
    from .mcp.content import MCPConnectError as MCPConnectError
    from .mcp.content import MCPServerCrashedError as MCPServerCrashedError
    from .mcp.content import MCPServerError as MCPServerError
    from .mcp.content import MCPTimeoutError as MCPTimeoutError
    from .mcp.content import MCPToolError as MCPToolError
    from .mcp.content import render_mcp_result as render_mcp_result
    from .mcp.elicitation import ElicitationAnswer as ElicitationAnswer
    from .mcp.elicitation import ElicitationError as ElicitationError
    from .mcp.elicitation import ElicitationRequest as ElicitationRequest
    from .mcp.elicitation import UnknownElicitation as UnknownElicitation
    from .mcp.provider import MCPToolProvider as MCPToolProvider
    from .mcp.provider import mcp_servers_from_config as mcp_servers_from_config
    from .mcp.provider import mcp_tool_name as mcp_tool_name
    from .mcp.sampling import SamplingDecision as SamplingDecision
    from .mcp.sampling import SamplingPolicy as SamplingPolicy
    from .mcp.sampling import SamplingRequest as SamplingRequest
    from .provider import StaticToolProvider as StaticToolProvider
    from .provider import ToolProvider as ToolProvider
    from .run_context import RunContext as RunContext
    from .run_context import current_run as current_run
    from .toolset import ToolSet as ToolSet
