"""Strict JSON-Schema checking behind `ValueSchema`, with problems worded for the model.

Validation is `jsonschema`'s Draft 2020-12 validator (with its format checker for the formats it
can check: date, email, ipv4, ipv6, uuid, regex...; other formats stay annotations), made
stricter where the standard is too lenient for a guard:

* no coercion, and a bound implies its type: `{"maximum": 100}` rejects `"1000"` (the standard
  ignores number keywords on a string, and the tool's own validation would then happily turn
  the string into 1000); `minLength`/`maxLength`/`pattern` likewise require a string. An
  explicit `type` (e.g. `["number", "string"]`) states what is allowed instead.
* NaN and ±infinity are not numbers: every comparison with NaN is false, so it passes any bound.

A schema is refused when it is built if it is invalid, uses a keyword the validator does not
know (a typo like `maximun` would otherwise be silently ignored and let through exactly what
the rule's author meant to block) or a `$ref` that does not resolve inside it (see
`schema_refs`: nothing is ever retrieved).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, cast

from jsonschema import Draft202012Validator, ValidationError, validators
from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator

from ..errors import JianmuError
from .schema_refs import LOCAL_ONLY, check_local_refs
from .validation import Loc, unknown_key
from .validation import Problem as KeyProblem

ANNOTATION_KEYWORDS = frozenset(
    {
        "$schema",
        "$id",
        "$anchor",
        "$dynamicAnchor",
        "$comment",
        "$defs",
        "$vocabulary",
        "definitions",
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
    }
)
KNOWN_KEYWORDS = frozenset(Draft202012Validator.VALIDATORS) | ANNOTATION_KEYWORDS
_NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_STRING_KEYWORDS = ("minLength", "maxLength", "pattern")
_SCHEMA_KEYS = (
    "items",
    "additionalProperties",
    "not",
    "contains",
    "propertyNames",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)
_SCHEMA_MAP_KEYS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LIST_KEYS = ("allOf", "anyOf", "oneOf", "prefixItems")

Problem = tuple[str, str]
"""(where, what): `where` is a JSON path suffix ("", ".key", "[0]"), `what` starts with a verb."""
Keyword = Callable[[Any, Any, Any, Mapping[str, Any]], Iterator[ValidationError]]


def _is_number(value: Any) -> bool:
    """A JSON number: no bool, no NaN, no infinity."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return isinstance(value, int) or math.isfinite(value)


def _is_integer(value: Any) -> bool:
    return _is_number(value) and float(value).is_integer()


class _Problem(ValidationError, JianmuError):
    """An error whose message is already in this module's wording."""


def _implies(kind: str, check: Callable[[Any], bool], keyword: Keyword) -> Keyword:
    """`keyword`, which also rejects values of the wrong kind when no `type` says otherwise."""

    def strict(validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
        if not check(instance):
            if "type" not in schema:
                yield _Problem(f"must be a {kind}")
            return
        yield from keyword(validator, value, instance, schema)

    return strict


def _required(validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
    """One error per missing property, located at the property (not at the object)."""
    if isinstance(instance, Mapping):
        for name in value:
            if name not in instance:
                yield _Problem("is required", path=[name])


def _additional(validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
    """Each unexpected key checked against the schema at its own place (`false`: not allowed)."""
    if not isinstance(instance, Mapping):
        return
    known = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    for key in instance:
        if key in known or any(re.search(p, key) for p in patterns):
            continue
        if value is False:
            yield _Problem("is not allowed", path=[key])
        else:
            yield from validator.descend(instance[key], value, path=key)


def _build_validator_class() -> type[Validator]:
    base = Draft202012Validator
    types = base.TYPE_CHECKER.redefine_many(
        {"number": lambda _, v: _is_number(v), "integer": lambda _, v: _is_integer(v)}
    )
    keywords: dict[str, Keyword] = {"required": _required, "additionalProperties": _additional}
    for name in _NUMBER_KEYWORDS:
        keywords[name] = _implies("number", _is_number, base.VALIDATORS[name])
    for name in _STRING_KEYWORDS:
        keywords[name] = _implies("string", lambda v: isinstance(v, str), base.VALIDATORS[name])
    return cast("type[Validator]", validators.extend(base, keywords, type_checker=types))  # type: ignore[no-untyped-call]


_StrictValidator = _build_validator_class()


def compile_schema(schema: Mapping[str, Any] | bool, *, known_keywords: bool = True) -> Validator:
    """A strict validator for `schema`; ValueError naming the place when the schema is refused.
    `known_keywords=False` lets keywords the validator does not know pass as annotations: for
    schemas written by others for their own tools (an MCP server's `x-...` or `nullable`), where
    refusing the tool would help nobody; a guard rule, written to block, keeps them refused."""
    _check_schema(schema, known_keywords=known_keywords)
    return _StrictValidator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER, registry=LOCAL_ONLY)


def problems(validator: Validator, value: Any) -> list[Problem]:
    """Every violation of `value`, each with where in the value it is."""
    try:
        errors = list(validator.iter_errors(value))
    except Exception as exc:  # e.g. a reference that cannot be resolved: fail closed
        return [("", f"could not be checked ({type(exc).__name__}: {exc})")]
    return _describe(errors, value)


def key_problems(
    validator: Validator, value: Any, *, noun: str = "key", known: Sequence[str] = ()
) -> list[KeyProblem]:
    """The violations of `value` as key-level problems worded like pydantic's (`validation`): a
    missing required key, a key that is not allowed (with a did-you-mean from `known`, the keys
    of the top level), and every other violation in this module's words (`n: must be <= 10`)."""
    try:
        errors = list(validator.iter_errors(value))
    except Exception as exc:  # e.g. a reference that cannot be resolved: fail closed
        return [KeyProblem((), "invalid", f"could not be checked ({type(exc).__name__}: {exc})")]
    out: list[KeyProblem] = []
    for loc, what in _located(errors, value):
        if what == "is required":
            out.append(KeyProblem(loc, "missing", f"required {noun} is missing"))
        elif what == "is not allowed" and loc:
            out.append(unknown_key(loc, known if len(loc) == 1 else (), noun))
        else:
            out.append(KeyProblem(loc, "invalid", what))
    return out


# --- checking the schema itself ---------------------------------------------------------------


def _check_schema(schema: Any, *, known_keywords: bool = True) -> None:
    """Raise ValueError naming the place of anything that would not be checked as written."""
    if not isinstance(schema, Mapping | bool):
        raise ValueError(f"schema must be an object (or true/false), got {type(schema).__name__}")
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ValueError(
            f"invalid JSON schema at schema{_path(exc.absolute_path)}: {_schema_problem(exc)}"
        ) from None
    for where, subschema in _subschemas(schema, "schema") if known_keywords else ():
        unknown = sorted(set(subschema) - KNOWN_KEYWORDS)
        if unknown:
            raise ValueError(
                f"unknown JSON-schema keyword {unknown[0]!r} in {where} (a misspelt keyword would be "
                "ignored by the validator and let through what it should block)"
            )
    check_local_refs(schema)


def _schema_problem(error: SchemaError | ValidationError) -> str:
    """The metaschema's most telling complaint ("not one of [...]" rather than "not valid under
    any of the given schemas")."""
    if error.validator in ("anyOf", "oneOf") and error.context:
        telling = [e for e in error.context if e.validator != "type"] or list(error.context)
        return _schema_problem(telling[0])
    if error.validator == "format" and error.validator_value == "regex":
        return f"{error.instance!r} is not a valid regular expression"
    return error.message


def _subschemas(schema: Any, where: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if not isinstance(schema, Mapping):
        return
    yield where, schema
    for key in _SCHEMA_KEYS:
        if key in schema:
            yield from _subschemas(schema[key], f"{where}.{key}")
    for key in _SCHEMA_MAP_KEYS:
        for name, sub in (schema.get(key) or {}).items():
            yield from _subschemas(sub, f"{where}.{key}.{name}")
    for key in _SCHEMA_LIST_KEYS:
        for index, sub in enumerate(schema.get(key) or ()):
            yield from _subschemas(sub, f"{where}.{key}[{index}]")


# --- describing the errors ----------------------------------------------------------------------


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _path(parts: Iterable[Any]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def _position(value: Any, path: Iterable[Any]) -> tuple[int, ...]:
    """Where `path` is in `value`, as indices (a missing key sorts first, like `required`)."""
    out: list[int] = []
    for part in path:
        if isinstance(value, Mapping):
            keys = list(value)
            out.append(keys.index(part) if part in value else -1)
            value = value.get(part)
        elif isinstance(part, int):
            out.append(part)
            value = value[part] if isinstance(value, list | tuple) and part < len(value) else None
        else:
            out.append(-1)
    return tuple(out)


def _describe(errors: list[ValidationError], value: Any, base: str = "") -> list[Problem]:
    """Problems in the order of the value; a wrong type hides the other complaints of its schema."""
    return [(base + _path(loc), what) for loc, what in _located(errors, value)]


def _located(errors: list[ValidationError], value: Any) -> list[tuple[Loc, str]]:
    """(key path, what) per error, in the order of the value, a wrong type hiding the rest."""
    mistyped = {(tuple(e.path), id(e.schema)) for e in errors if e.validator == "type"}
    out: list[tuple[Loc, str]] = []
    for error in sorted(errors, key=lambda e: _position(value, e.path)):
        if error.validator != "type" and (tuple(error.path), id(error.schema)) in mistyped:
            continue
        problem = (tuple(error.path), _what(error))
        if problem not in out:
            out.append(problem)
    return out


def _alternatives(error: ValidationError) -> str:
    branches: dict[Any, list[ValidationError]] = {}
    for sub in error.context or ():
        branches.setdefault(sub.schema_path[0], []).append(sub)
    return " or ".join(
        "(" + ", ".join(f"{where} {what}".lstrip() for where, what in _describe(subs, error.instance)) + ")"
        for subs in branches.values()
    )


def _what(error: ValidationError) -> str:
    kind = error.validator
    spec: Any = error.validator_value
    if isinstance(error, _Problem):
        return error.message
    simple: dict[Any, Callable[[], str]] = {
        None: lambda: "is not allowed",  # the `false` schema
        "type": lambda: f"must be of type {' or '.join(spec) if isinstance(spec, list) else spec}",
        "enum": lambda: f"must be one of {', '.join(_json(option) for option in spec)}",
        "const": lambda: f"must be {_json(spec)}",
        "minimum": lambda: f"must be >= {spec}",
        "maximum": lambda: f"must be <= {spec}",
        "exclusiveMinimum": lambda: f"must be > {spec}",
        "exclusiveMaximum": lambda: f"must be < {spec}",
        "multipleOf": lambda: f"must be a multiple of {spec}",
        "minLength": lambda: f"must be at least {spec} character(s) long",
        "maxLength": lambda: f"must be at most {spec} character(s) long",
        "pattern": lambda: f"must match the pattern {spec!r}",
        "format": lambda: f"must be a valid {spec}",
        "minItems": lambda: f"must have at least {spec} item(s)",
        "maxItems": lambda: f"must have at most {spec} item(s)",
        "uniqueItems": lambda: "must not contain duplicate items",
        "not": lambda: f"must not match {_json(spec)}",
        "anyOf": lambda: f"must satisfy one of: {_alternatives(error)}",
    }
    if kind in simple:
        return simple[kind]()
    if kind == "oneOf":
        if error.context:
            return f"must satisfy exactly one of: {_alternatives(error)}"
        return "must satisfy exactly one of the alternatives, but satisfies several"
    return f"violates '{kind}' ({error.message})"
