"""Plain-text listings of `Tool`s for prompts (the wording is `tool_text`'s, one rule with the
text tool protocols').

A tool's listing is rendered once per `Tool` instance and kept while the tool lives: a Tool is
immutable (its schema is cached on it the same way), and the tools of an agent are usually
module-level objects shared by every tree built from them, so a fresh agent's system prompt
costs a lookup per tool instead of a rendering.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Iterable

from .._base.tool_text import describe_function
from ._base import Tool

_RENDERED: dict[int, tuple[weakref.ref[Tool], str]] = {}
"""describe_tool's text by id of the tool, with a weak reference proving the id is still that
tool's (a WeakKeyDictionary would compare equal-hashed tools field by field on every lookup)."""


def describe_tool(tool: Tool) -> str:
    """A tool's name and description, then its parameters indented below (rendered once)."""
    key = id(tool)
    hit = _RENDERED.get(key)
    if hit is not None and hit[0]() is tool:
        return hit[1]
    text = _render(tool)
    _RENDERED[key] = (weakref.ref(tool, functools.partial(_forget, key)), text)
    return text


def _forget(key: int, gone: weakref.ref[Tool]) -> None:
    """A rendered tool died: drop its entry (unless a newer tool's entry took the id)."""
    hit = _RENDERED.get(key)
    if hit is not None and hit[0] is gone:
        del _RENDERED[key]


def _render(tool: Tool) -> str:
    return describe_function(
        {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    )


def describe_tools(tools: Iterable[Tool]) -> str:
    """The listing of several tools, separated by blank lines."""
    blocks = [describe_tool(t) for t in tools]
    return "\n\n".join(blocks) if blocks else "(no tools)"
