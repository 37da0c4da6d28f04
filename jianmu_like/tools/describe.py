"""Plain-text listings of tools for prompts.

Some models (or prompting styles such as text-mode ReAct) read tools from the prompt rather
than from the function-calling `tools` parameter. They need a compact listing that states each
parameter's type, whether it is required and its default, which a raw JSON schema hides in
noise. Only what a model needs to form a correct call is rendered.

A tool's listing is rendered once per `Tool` instance and kept while the tool lives: a Tool is
immutable (its schema is cached on it the same way), and the tools of an agent are usually
module-level objects shared by every tree built from them, so a fresh agent's system prompt
costs a lookup per tool instead of a rendering.
"""

from __future__ import annotations

import functools
import json
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

from .base import Tool

_MAX_DEPTH = 3
_RENDERED: dict[int, tuple[weakref.ref[Tool], str]] = {}
"""describe_tool's text by id of the tool, with a weak reference proving the id is still that
tool's (a WeakKeyDictionary would compare equal-hashed tools field by field on every lookup)."""


def _literal(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def type_label(schema: Any, depth: int = 0) -> str:
    """A short human label for a JSON schema: `integer`, `array of string`, `'a' | 'b'`..."""
    if not isinstance(schema, Mapping):
        return "any"
    if "enum" in schema and isinstance(schema["enum"], list):
        return " | ".join(_literal(v) for v in schema["enum"])
    if "const" in schema:
        return _literal(schema["const"])
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return " | ".join(type_label(option, depth) for option in options)
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return ref.rsplit("/", 1)[-1]
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    if kind == "array":
        items = schema.get("items")
        return f"array of {type_label(items, depth + 1)}" if isinstance(items, Mapping) and items else "array"
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties")
        if not isinstance(properties, Mapping) or not properties or depth >= _MAX_DEPTH:
            return "object"
        required = set(schema.get("required") or ())
        fields = ", ".join(
            f"{name}{'' if name in required else '?'}: {type_label(sub, depth + 1)}"
            for name, sub in properties.items()
        )
        return f"object {{{fields}}}"
    return str(kind) if kind else "any"


def describe_parameters(parameters: Mapping[str, Any]) -> list[str]:
    """One line per top-level parameter: `name (type, required|optional[, default x]): text`."""
    properties = parameters.get("properties")
    if not isinstance(properties, Mapping):
        return []
    required = set(parameters.get("required") or ())
    lines: list[str] = []
    for name, spec in properties.items():
        marks = [type_label(spec), "required" if name in required else "optional"]
        if isinstance(spec, Mapping) and "default" in spec and name not in required:
            marks.append(f"default {_literal(spec['default'])}")
        text = spec.get("description") if isinstance(spec, Mapping) else None
        line = f"{name} ({', '.join(marks)})"
        lines.append(f"{line}: {text}" if text else line)
    return lines


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
    head = f"{tool.name}: {tool.description}" if tool.description else tool.name
    params = describe_parameters(tool.parameters)
    if not params:
        return f"{head}\n  (no arguments)"
    return "\n".join([head, *(f"  - {line}" for line in params)])


def describe_tools(tools: Iterable[Tool]) -> str:
    """The listing of several tools, separated by blank lines."""
    blocks = [describe_tool(t) for t in tools]
    return "\n\n".join(blocks) if blocks else "(no tools)"
