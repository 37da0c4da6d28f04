"""How a state schema declares merge rules and lifetimes, read once per schema.

A field's `Annotated[...]` metadata carries its reducer (any two-argument callable such as
`operator.add`) and optionally an `Ephemeral` marker. `FieldSpec`s are computed once per schema
class and cached, so writes on the hot path never re-inspect type annotations.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

Reducer = Callable[[Any, Any], Any]
Scope = Literal["run", "step"]


@dataclass(frozen=True, slots=True)
class Ephemeral:
    """Marks a field that is reset to its default: at every fresh run (`scope="run"`) or at
    every loop iteration (`scope="step"`). Restoring a checkpoint keeps the saved value."""

    scope: Scope = "run"

    def __post_init__(self) -> None:
        if self.scope not in ("run", "step"):
            raise ValueError(f"Ephemeral scope must be 'run' or 'step', got {self.scope!r}")


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """What the state manager needs to know about one field."""

    name: str
    reducer: Reducer | None
    scope: Scope | None
    default: Any
    default_factory: Callable[[], Any] | None
    append_in_place: bool
    """True for `list` fields reduced with `operator.add`: extend in place, O(new items)."""

    def fresh_default(self) -> Any:
        if self.default_factory is not None:
            return self.default_factory()
        # Immutable defaults are shared; mutable ones are copied so resets never alias.
        if isinstance(self.default, (list, dict, set)):
            return copy.copy(self.default)
        return self.default


@dataclass(frozen=True, slots=True)
class SchemaSpec:
    """Field specs of a schema, by field name and by alias (e.g. `usage` aliased `llm.usage`)."""

    fields: dict[str, FieldSpec]
    by_key: dict[str, FieldSpec]
    allows_extra: bool


def merge_dicts(current: dict[Any, Any], new: dict[Any, Any]) -> dict[Any, Any]:
    """Reducer: a dict field updated key by key (new keys win)."""
    return {**current, **new}


def _is_list_type(annotation: Any) -> bool:
    origin = getattr(annotation, "__origin__", annotation)
    return origin is list


@cache
def schema_spec(schema: type[BaseModel]) -> SchemaSpec:
    """Inspect `schema` once: reducers, ephemeral scopes, defaults, aliases."""
    fields: dict[str, FieldSpec] = {}
    by_key: dict[str, FieldSpec] = {}
    for name, info in schema.model_fields.items():
        reducer: Reducer | None = None
        scope: Scope | None = None
        for meta in info.metadata:
            if isinstance(meta, Ephemeral):
                scope = meta.scope
            elif callable(meta) and not isinstance(meta, type):
                reducer = meta
        if info.default is PydanticUndefined and info.default_factory is None:
            if scope is not None:
                raise TypeError(f"{schema.__name__}.{name}: an Ephemeral field needs a default")
            default: Any = None
        else:
            default = None if info.default is PydanticUndefined else info.default
        factory = info.default_factory
        spec = FieldSpec(
            name=name,
            reducer=reducer,
            scope=scope,
            default=default,
            default_factory=factory,  # type: ignore[arg-type]
            append_in_place=reducer is operator.add and _is_list_type(info.annotation),
        )
        fields[name] = spec
        by_key[name] = spec
        if info.alias and info.alias != name:
            by_key[info.alias] = spec
    allows_extra = schema.model_config.get("extra") == "allow"
    return SchemaSpec(fields=fields, by_key=by_key, allows_extra=allows_extra)
