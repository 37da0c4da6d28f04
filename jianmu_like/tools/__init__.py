"""Tools: functions a model may call, their providers, and the merged ToolSet an agent uses."""

from .base import Tool, render_result, tool, validate_tool_name
from .builtin import CalculatorError, builtin_tools, calculator, evaluate, think
from .describe import describe_tool, describe_tools
from .errors import ToolArgumentsError, ToolError, ToolProviderError, UnknownToolError
from .mcp.config import MCPConfigError, MCPServerConfig, parse_mcp_servers
from .mcp.content import (
    MCPConnectError,
    MCPServerCrashedError,
    MCPServerError,
    MCPTimeoutError,
    MCPToolError,
    render_mcp_result,
)
from .mcp.provider import MCPToolProvider, mcp_servers_from_config, mcp_tool_name
from .provider import StaticToolProvider, ToolProvider
from .toolset import ToolSet

__all__ = [
    "CalculatorError",
    "MCPConfigError",
    "MCPConnectError",
    "MCPServerConfig",
    "MCPServerCrashedError",
    "MCPServerError",
    "MCPTimeoutError",
    "MCPToolError",
    "MCPToolProvider",
    "StaticToolProvider",
    "Tool",
    "ToolArgumentsError",
    "ToolError",
    "ToolProvider",
    "ToolProviderError",
    "ToolSet",
    "UnknownToolError",
    "builtin_tools",
    "calculator",
    "describe_tool",
    "describe_tools",
    "evaluate",
    "mcp_servers_from_config",
    "mcp_tool_name",
    "parse_mcp_servers",
    "render_mcp_result",
    "render_result",
    "think",
    "tool",
    "validate_tool_name",
]
