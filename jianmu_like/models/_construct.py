"""`construct`: build a pydantic model from trusted, complete values without validating them.

The hot path of a ReAct iteration makes a handful of small models from values the framework
produced itself (a tool's outcome, a usage sum, a tool message); validating them again cost
more than the rest of their handling. `model_construct` is no cheaper: it re-examines every
field's alias and default (and a default factory's signature) on each call. This is what
`model_construct` leaves behind when every field is given, at a fraction of its cost.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from .._base.speed import fast

M = TypeVar("M", bound=BaseModel)

_object_setattr = object.__setattr__
_object_new = object.__new__
"""Called directly, not as `cls.__new__`: pydantic's metaclass defines `__getattr__`, so on
CPython 3.11 reading any attribute of a model class (`cls.__new__`) goes through that slot and
calls `type.__getattribute__` as a Python-level call (several hundred instructions)."""
_FIELD_SETS: dict[type[BaseModel], set[str]] = {}
"""Per model class: the set of all its field names, shared by every constructed instance
(every field is set, so pydantic never needs to add to it)."""


def _construct(cls: type[M], values: dict[str, Any]) -> M:
    """An instance of `cls` whose fields are exactly `values` (every field, none other: not
    checked, this is the hot path; a missing one would be an AttributeError when read).

    `values` becomes the instance's `__dict__` (do not reuse the dict). For models without
    private attributes or extra storage; the first use per class checks that."""
    fields_set = _FIELD_SETS.get(cls)
    if fields_set is None:
        fields_set = _field_set(cls)
    instance = _object_new(cls)
    _object_setattr(instance, "__dict__", values)
    _object_setattr(instance, "__pydantic_fields_set__", fields_set)
    _object_setattr(instance, "__pydantic_extra__", None)
    _object_setattr(instance, "__pydantic_private__", None)
    return instance


def _field_set(cls: type[BaseModel]) -> set[str]:
    if cls.__private_attributes__ or cls.model_config.get("extra") == "allow":
        raise TypeError(f"construct() cannot build {cls.__name__}: it has private attributes or extras")
    if cls.__new__ is not _object_new:
        raise TypeError(f"construct() cannot build {cls.__name__}: it defines __new__")
    fields_set = _FIELD_SETS[cls] = set(cls.model_fields)
    return fields_set


def _construct_plain(cls: type[M], values: dict[str, Any]) -> M:
    """`construct` without the `construct` fast path: pydantic's public `model_construct`."""
    return cls.model_construct(**values)


construct = _construct if fast("construct") else _construct_plain
