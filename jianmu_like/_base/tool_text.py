"""Plain-text descriptions of tools for prompts, from their function schemas: the one rule.

Some models (or prompting styles such as text-mode ReAct and the JSON and text tool protocols)
read tools from the prompt rather than from the function-calling `tools` parameter. They need a
listing that states each parameter's type, whether it is required and its default, which a raw
JSON schema hides in noise. Only what a model needs to form a correct call is rendered. The
input is an OpenAI function (`{"name", "description", "parameters"}`), so `tools._describe`
(a `Tool`) and `models._text_protocol` (a request's functions) describe tools the same way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

_MAX_DEPTH = 3


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


def describe_function(function: Mapping[str, Any]) -> str:
    """A tool's name and description, then its parameters indented below, one per line."""
    description = function.get("description")
    head = f"{function['name']}: {description}" if description else str(function["name"])
    params = describe_parameters(function.get("parameters") or {})
    if not params:
        return f"{head}\n  (no arguments)"
    return "\n".join([head, *(f"  - {line}" for line in params)])


def function_line(function: Mapping[str, Any]) -> str:
    """One compact line, for small models' prompts: `- name(arg: type, arg: type (optional)):
    the first sentence of the description`."""
    params = function.get("parameters") or {}
    properties = params.get("properties")
    required = set(params.get("required") or ())
    args = [
        f"{name}: {type_label(spec)}" + ("" if name in required else " (optional)")
        for name, spec in (properties.items() if isinstance(properties, Mapping) else ())
    ]
    line = f"- {function['name']}({', '.join(args)})"
    description = _first_sentence(str(function.get("description") or ""))
    return f"{line}: {description}" if description else line


def _first_sentence(text: str) -> str:
    flat = " ".join(text.split())
    end = flat.find(". ")
    return flat if end < 0 else flat[: end + 1]
