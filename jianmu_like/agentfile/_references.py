"""What an agent file names outside itself: tools, output schemas and MCP servers.

An agent file is data, so a reference is resolved only through a `ModulePolicy`: a built-in tool
by name, or `package.module:attribute` from a module the policy allows (a refused module is never
imported). The checker resolves each reference to report it at its line; the builder resolves it
again to build the agent.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from .._base.names import did_you_mean
from ..tools._base import Tool
from ..tools._provider import ToolProvider
from ..tools.builtin import builtin_tools
from ._modules import ModulePolicy


def resolve_tool(reference: str, policy: ModulePolicy | None = None) -> Tool:
    """A built-in tool by name, or `package.module:attribute` (a Tool or a plain function) from a
    module `policy` allows (none but the built-in tools without one); a refused module is never
    imported."""
    builtins = builtin_tools()
    if reference in builtins:
        return builtins[reference]
    if ":" not in reference:
        known = ", ".join(sorted(builtins))
        raise ValueError(
            f"unknown tool {reference!r}{did_you_mean(reference, builtins)} "
            f"(built-in: {known}; or 'package.module:function')"
        )
    module_name, _, attr = reference.partition(":")
    try:
        module = (policy or ModulePolicy()).import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import module {module_name!r} for tool {reference!r}: {exc}") from exc
    target = getattr(module, attr, None)
    if target is None:
        public = (name for name in vars(module) if not name.startswith("_"))
        raise ValueError(f"module {module_name!r} has no attribute {attr!r}{did_you_mean(attr, public)}")
    if isinstance(target, Tool):
        return target
    if callable(target):
        return Tool.from_function(target)
    raise ValueError(f"{reference!r} is neither a Tool nor a function")


def resolve_output_schema(
    reference: dict[str, Any] | str, policy: ModulePolicy | None = None
) -> type[BaseModel] | dict[str, Any]:
    """An `output_schema:` value: a JSON schema (checked) or a pydantic model class named
    `package.module:Model` / `package.module.Model` from a module `policy` allows."""
    if isinstance(reference, dict):
        from .._base.json_schema import compile_schema

        compile_schema(reference, known_keywords=False)  # as OutputSchema will: ValueError naming the place
        if reference.get("type", "object") != "object":
            raise ValueError(f"the schema must describe an object (type: object), not {reference['type']!r}")
        return reference
    module_name, sep, attr = reference.partition(":")
    if not sep:
        module_name, _, attr = reference.rpartition(".")
    if not module_name or not attr:
        raise ValueError(f"{reference!r} is neither a JSON schema nor 'package.module:Model'")
    try:
        module = (policy or ModulePolicy()).import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import module {module_name!r} for output_schema: {exc}") from exc
    target = getattr(module, attr, None)
    if not (isinstance(target, type) and issubclass(target, BaseModel)):
        raise ValueError(f"{reference!r} is not a pydantic model class (found {type(target).__name__})")
    return target


def mcp_providers(entries: Any) -> list[ToolProvider]:
    """The MCP tool providers of an agent's `mcp_servers:` (the `mcp` package loads here only)."""
    from ..tools.mcp._provider import mcp_servers_from_config

    return list(mcp_servers_from_config(entries))
