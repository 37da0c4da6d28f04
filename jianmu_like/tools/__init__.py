"""Tools: functions a model may call, their providers, and the merged ToolSet an agent uses."""

from .base import Tool, render_result, tool, validate_tool_name
from .builtin import CalculatorError, builtin_tools, calculator, evaluate, think
from .describe import describe_tool, describe_tools
from .errors import ToolArgumentsError, ToolError, ToolProviderError, UnknownToolError
from .provider import StaticToolProvider, ToolProvider
from .toolset import ToolSet

__all__ = [
    "CalculatorError",
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
    "render_result",
    "think",
    "tool",
    "validate_tool_name",
]
