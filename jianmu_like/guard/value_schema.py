"""A small JSON-Schema subset for checking one tool argument's value.

`jsonschema` is not a dependency, and argument rules only need to pin down scalar values and
simple shapes. `ValueSchema` checks the keywords in `SUPPORTED_KEYWORDS` and refuses, when it
is built, any other assertion keyword: silently ignoring a `oneOf` or `$ref` would let through
exactly what the rule's author meant to block. Annotation keywords (`title`, `description`,
`format`...) are accepted and, as in `jsonschema`'s default mode, not asserted.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

SUPPORTED_KEYWORDS = frozenset(
    {
        "type",
        "enum",
        "const",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "pattern",
        "items",
        "minItems",
        "maxItems",
        "properties",
        "required",
        "additionalProperties",
        "anyOf",
        "allOf",
        "not",
    }
)
ANNOTATION_KEYWORDS = frozenset(
    {
        "$schema",
        "$id",
        "$comment",
        "title",
        "description",
        "default",
        "examples",
        "format",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)
_TYPES = ("string", "integer", "number", "boolean", "array", "object", "null")
_NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_COUNT_KEYWORDS = ("minLength", "maxLength", "minItems", "maxItems")

Problem = tuple[str, str]
"""(where, what): `where` is a JSON path suffix ("", ".key", "[0]"), `what` starts with a verb."""


class ValueSchema:
    """A validated schema that lists every way a value violates it."""

    def __init__(self, schema: Mapping[str, Any] | bool) -> None:
        _check_schema(schema, "schema")
        self.schema = schema

    def problems(self, value: Any) -> list[Problem]:
        """Every violation, each with where in the value it is; empty when the value conforms."""
        return _problems(value, self.schema, "")

    def __repr__(self) -> str:
        return f"ValueSchema({self.schema!r})"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_schema(schema: Any, where: str) -> None:
    """Raise ValueError for anything this subset would not check as its author expects."""
    if isinstance(schema, bool):
        return
    if not isinstance(schema, Mapping):
        raise ValueError(f"{where} must be an object (or true/false), got {type(schema).__name__}")
    for key, spec in schema.items():
        if key in ANNOTATION_KEYWORDS:
            continue
        if key not in SUPPORTED_KEYWORDS:
            raise ValueError(
                f"unsupported JSON-schema keyword {key!r} in {where}; "
                f"supported: {', '.join(sorted(SUPPORTED_KEYWORDS))}"
            )
        _check_keyword(key, spec, f"{where}.{key}")


def _check_keyword(key: str, spec: Any, where: str) -> None:
    if key == "type":
        names = spec if isinstance(spec, list) else [spec]
        if not names or any(name not in _TYPES for name in names):
            raise ValueError(f"{where} must be one of {', '.join(_TYPES)} (or a list of them), got {spec!r}")
    elif key == "enum":
        if not isinstance(spec, list) or not spec:
            raise ValueError(f"{where} must be a non-empty list")
    elif key in _NUMBER_KEYWORDS:
        if not _is_number(spec) or not math.isfinite(spec):
            raise ValueError(f"{where} must be a finite number, got {spec!r}")
    elif key in _COUNT_KEYWORDS:
        if not isinstance(spec, int) or isinstance(spec, bool) or spec < 0:
            raise ValueError(f"{where} must be a non-negative integer, got {spec!r}")
    elif key == "pattern":
        if not isinstance(spec, str):
            raise ValueError(f"{where} must be a string")
        try:
            re.compile(spec)
        except re.error as exc:
            raise ValueError(f"{where} is not a valid regular expression: {exc}") from exc
    elif key in ("items", "additionalProperties", "not"):
        _check_schema(spec, where)
    elif key == "properties":
        if not isinstance(spec, Mapping):
            raise ValueError(f"{where} must be an object")
        for name, sub in spec.items():
            _check_schema(sub, f"{where}.{name}")
    elif key == "required":
        if not isinstance(spec, list) or not all(isinstance(name, str) for name in spec):
            raise ValueError(f"{where} must be a list of strings")
    elif key in ("anyOf", "allOf"):
        if not isinstance(spec, list) or not spec:
            raise ValueError(f"{where} must be a non-empty list of schemas")
        for index, sub in enumerate(spec):
            _check_schema(sub, f"{where}[{index}]")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _has_type(value: Any, name: str) -> bool:
    if name == "string":
        return isinstance(value, str)
    if name == "integer":
        return _is_number(value) and float(value).is_integer()
    if name == "number":
        return _is_number(value)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "array":
        return isinstance(value, list | tuple)
    if name == "object":
        return isinstance(value, Mapping)
    return value is None


def _json_equal(a: Any, b: Any) -> bool:
    """JSON equality: `true` is not `1`, though Python says `True == 1`."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def _problems(value: Any, schema: Mapping[str, Any] | bool, where: str) -> list[Problem]:
    if schema is True:
        return []
    if schema is False:
        return [(where, "is not allowed")]
    assert isinstance(schema, Mapping)
    declared = schema.get("type")
    if declared is not None:
        names = declared if isinstance(declared, list) else [declared]
        if not any(_has_type(value, name) for name in names):
            return [(where, f"must be of type {' or '.join(names)}")]  # the rest would be noise
    out: list[Problem] = []
    if "enum" in schema and not any(_json_equal(value, option) for option in schema["enum"]):
        out.append((where, f"must be one of {', '.join(_json(option) for option in schema['enum'])}"))
    if "const" in schema and not _json_equal(value, schema["const"]):
        out.append((where, f"must be {_json(schema['const'])}"))
    if _is_number(value):
        out.extend(_number_problems(value, schema, where))
    if isinstance(value, str):
        out.extend(_string_problems(value, schema, where))
    if isinstance(value, list | tuple):
        out.extend(_array_problems(value, schema, where))
    if isinstance(value, Mapping):
        out.extend(_object_problems(value, schema, where))
    for sub in schema.get("allOf", ()):
        out.extend(_problems(value, sub, where))
    if "anyOf" in schema:
        branches = [_problems(value, sub, where) for sub in schema["anyOf"]]
        if all(branches):
            alternatives = " or ".join(
                "(" + ", ".join(f"{w[len(where) :]} {what}".lstrip() for w, what in branch) + ")"
                for branch in branches
            )
            out.append((where, f"must satisfy one of: {alternatives}"))
    if "not" in schema and not _problems(value, schema["not"], where):
        out.append((where, f"must not match {_json(schema['not'])}"))
    return out


def _number_problems(value: float, schema: Mapping[str, Any], where: str) -> list[Problem]:
    out: list[Problem] = []
    if "minimum" in schema and value < schema["minimum"]:
        out.append((where, f"must be >= {schema['minimum']}"))
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        out.append((where, f"must be > {schema['exclusiveMinimum']}"))
    if "maximum" in schema and value > schema["maximum"]:
        out.append((where, f"must be <= {schema['maximum']}"))
    if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
        out.append((where, f"must be < {schema['exclusiveMaximum']}"))
    return out


def _string_problems(value: str, schema: Mapping[str, Any], where: str) -> list[Problem]:
    out: list[Problem] = []
    if "minLength" in schema and len(value) < schema["minLength"]:
        out.append((where, f"must be at least {schema['minLength']} character(s) long"))
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        out.append((where, f"must be at most {schema['maxLength']} character(s) long"))
    # JSON Schema patterns are not anchored: `re.search`, as `jsonschema` does.
    if "pattern" in schema and re.search(schema["pattern"], value) is None:
        out.append((where, f"must match the pattern {schema['pattern']!r}"))
    return out


def _array_problems(value: Sequence[Any], schema: Mapping[str, Any], where: str) -> list[Problem]:
    out: list[Problem] = []
    if "minItems" in schema and len(value) < schema["minItems"]:
        out.append((where, f"must have at least {schema['minItems']} item(s)"))
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        out.append((where, f"must have at most {schema['maxItems']} item(s)"))
    if "items" in schema:
        for index, item in enumerate(value):
            out.extend(_problems(item, schema["items"], f"{where}[{index}]"))
    return out


def _object_problems(value: Mapping[str, Any], schema: Mapping[str, Any], where: str) -> list[Problem]:
    out: list[Problem] = [
        (f"{where}.{name}", "is required") for name in schema.get("required", ()) if name not in value
    ]
    properties: Mapping[str, Any] = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        if key in properties:
            out.extend(_problems(item, properties[key], f"{where}.{key}"))
        elif extra is not True:
            out.extend(_problems(item, extra, f"{where}.{key}"))
    return out
