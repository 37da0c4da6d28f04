"""JSON schemas as GBNF grammars (llama.cpp's `grammar` field) in `json.dumps`'s exact layout.

llama.cpp turns a `response_format` JSON schema into a grammar itself, but one that lets the
model choose its whitespace: SmolLM2-135M then opens with `{\\n  "tool"`, a layout its prompt
never showed, and drifts inside a string until `max_tokens` (measured: bench/real_server.py).
The embedded model is constrained to `json.dumps`'s layout (`", "`, `": "`, no newlines) and
stays on the examples' track; this converter gives an HTTP llama.cpp server the same grammar.

Covered: `const`, `enum`, `type` (one or a list), objects with `properties` (in schema order,
required ones first, optional ones omittable), arrays with `items`, `anyOf`/`oneOf`. Anything
else (a `$ref`, `allOf`, patterns) is admitted as any JSON value of its type, or any JSON value:
the grammar may be looser than the schema, never stricter; validation stays the caller's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

GENERIC = r"""
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ( string ": " value ( ", " string ": " value )* )? "}"
array ::= "[" ( value ( ", " value )* )? "]"
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= integer ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,4} )?
integer ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
boolean ::= "true" | "false"
null ::= "null"
"""
"""Any JSON value in `json.dumps`'s layout; strings hold no raw control characters (no
newline), as JSON says."""

_BY_TYPE = {
    "string": "string",
    "number": "number",
    "integer": "integer",
    "boolean": "boolean",
    "null": "null",
    "array": "array",
    "object": "object",
}


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def literal(text: str) -> str:
    """`text` as a GBNF string literal (other control characters as `\\xHH`)."""
    out = []
    for char in text:
        escaped = _ESCAPES.get(char)
        if escaped is None and ord(char) < 0x20:
            escaped = f"\\x{ord(char):02X}"
        out.append(escaped or char)
    return '"' + "".join(out) + '"'


class _Grammar:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.rules: list[str] = []

    def add(self, body: str) -> str:
        name = f"{self.prefix}{len(self.rules)}"
        self.rules.append(f"{name} ::= {body}")
        return name

    def value(self, schema: Any) -> str:
        """The name of a rule (or an inline expression) admitting `schema`'s values."""
        if not isinstance(schema, Mapping):
            return "value"
        if "const" in schema:
            return literal(json.dumps(schema["const"], ensure_ascii=False))
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            options = " | ".join(literal(json.dumps(v, ensure_ascii=False)) for v in schema["enum"])
            return self.add(options)
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if isinstance(branches, list) and branches:
                return self.add(" | ".join(self.value(b) for b in branches))
        kind = schema.get("type")
        if isinstance(kind, list):
            return self.add(" | ".join(self.value({**schema, "type": k}) for k in kind))
        if kind == "object" or (kind is None and isinstance(schema.get("properties"), Mapping)):
            return self.object(schema)
        if kind == "array" and isinstance(schema.get("items"), Mapping):
            item = self.value(schema["items"])
            return self.add(f'"[" ( {item} ( ", " {item} )* )? "]"')
        return _BY_TYPE.get(kind, "value") if isinstance(kind, str) else "value"

    def object(self, schema: Mapping[str, Any]) -> str:
        properties = schema.get("properties")
        if not isinstance(properties, Mapping) or not properties:
            return "object"
        required = [k for k in properties if k in set(schema.get("required") or ())]
        optional = [k for k in properties if k not in required]

        def pair(key: str) -> str:
            return f"{literal(json.dumps(key, ensure_ascii=False) + ': ')} {self.value(properties[key])}"

        tail = ""
        if optional:  # opt_i ::= pair_i ( ", " opt_{i+1} )? | opt_{i+1}: any ordered subset
            following = ""
            for key in reversed(optional):
                body = f"{pair(key)}" + (f' ( ", " {following} )? | {following}' if following else "")
                following = self.add(body)
            tail = following
        if required:
            body = ' ", " '.join(pair(k) for k in required)
            return self.add(f'"{{" {body} ( ", " {tail} )? "}}"' if tail else f'"{{" {body} "}}"')
        return self.add(f'"{{" {tail}? "}}"')


def schema_rules(schema: Mapping[str, Any], prefix: str = "s") -> tuple[str, list[str]]:
    """The rule (or inline expression) admitting `schema`'s values, and the rules it needs
    (without `GENERIC`'s); rule names start with `prefix`."""
    grammar = _Grammar(prefix)
    top = grammar.value(schema)
    return top, grammar.rules


def schema_to_gbnf(schema: Mapping[str, Any]) -> str:
    """A complete GBNF grammar whose `root` is one JSON value matching `schema`."""
    top, rules = schema_rules(schema)
    return "\n".join([f"root ::= {top}", *rules]) + GENERIC
