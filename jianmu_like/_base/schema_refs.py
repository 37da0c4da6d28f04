"""JSON schemas given as data resolve their `$ref`s inside themselves, never elsewhere.

A schema in an agent file (`output_schema:`, a guard argument rule's `schema:`) is data written
by someone else. Left to itself, `jsonschema` retrieves a `$ref` it cannot resolve in the
document: over HTTP(S), or from a `file://` path, and its errors quote what it found, which
would reach the model's retry prompt and `result.error`. So every such schema is validated
with `LOCAL_ONLY`, a `referencing` registry whose retrieve function refuses (what `jsonschema`
itself takes as `registry=`), and `check_local_refs` reports, when the schema is loaded, each
`$ref` that would need a retrieval or points at nothing: the run never starts with such a
schema, and no URI in it is ever contacted or read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from referencing import Registry, Resource
from referencing.exceptions import Unresolvable, Unretrievable
from referencing.jsonschema import DRAFT202012

from ..errors import JianmuError

REF_KEYWORDS = ("$ref", "$dynamicRef")
_LITERAL_KEYWORDS = frozenset({"const", "enum", "default", "examples"})
"""Keywords whose values are data, not schemas (a `$ref` key in them is not a reference)."""
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
"""Keywords whose values map names (any string, `const` too) to schemas."""


class RefOutsideDocument(ValueError, JianmuError):
    """A `$ref` that only a retrieval (network, file) could resolve."""

    def __init__(self, ref: str) -> None:
        super().__init__(
            f"$ref {ref!r} is outside the document: only local refs like '#/$defs/X' are allowed"
        )
        self.ref = ref


def _refuse(uri: str) -> Resource[Any]:
    raise RefOutsideDocument(uri)


LOCAL_ONLY: Registry[Any] = Registry(retrieve=_refuse)  # type: ignore[call-arg]
"""The registry every agent-supplied schema is validated with: nothing is ever retrieved."""


def check_local_refs(schema: Mapping[str, Any] | bool, where: str = "schema") -> None:
    """ValueError naming the place of the first `$ref` that does not resolve inside `schema`
    (nested `$id`s are honoured, as the validator would resolve the reference)."""
    if not isinstance(schema, Mapping):
        return
    root = LOCAL_ONLY.resolver_with_root(DRAFT202012.create_resource(dict(schema)))
    for path, node, resolver in _nodes(schema, where, root):
        for keyword in REF_KEYWORDS:
            ref = node.get(keyword)
            if not isinstance(ref, str):
                continue
            try:
                resolver.lookup(ref)
            except Unresolvable as exc:
                if _retrieval_refused(exc):
                    raise ValueError(f"{path}: {RefOutsideDocument(ref)}") from None
                raise ValueError(f"{path}: $ref {ref!r} does not resolve inside the document") from None


def _retrieval_refused(error: BaseException) -> bool:
    """Whether resolving needed a retrieval (`referencing` chains the refusal as the cause)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, Unretrievable | RefOutsideDocument):
            return True
        seen = seen.__cause__
    return False


def _nodes(node: Any, path: str, resolver: Any) -> Iterator[tuple[str, Mapping[str, Any], Any]]:
    """Every (sub)schema with its path and the resolver in force there."""
    if isinstance(node, list):
        for index, item in enumerate(node):
            yield from _nodes(item, f"{path}[{index}]", resolver)
        return
    if not isinstance(node, Mapping):
        return
    if isinstance(node.get("$id"), str):
        resolver = resolver.in_subresource(DRAFT202012.create_resource(dict(node)))
    yield path, node, resolver
    for key, value in node.items():
        if key in _SCHEMA_MAPS and isinstance(value, Mapping):  # names, then schemas
            for name, sub in value.items():
                yield from _nodes(sub, f"{path}.{key}.{name}", resolver)
        elif key not in _LITERAL_KEYWORDS:
            yield from _nodes(value, f"{path}.{key}", resolver)
