"""A catalogue event for a test that cares about a few of its fields: the others filled in."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from jianmu_like.telemetry import events as ev

_ZERO: dict[Any, Any] = {str: "", int: 0, float: 0.0, bool: False, list: [], dict: {}}


def sample(kind: str, namespace: str | None = None, **data: Any) -> ev.CatalogueEvent:
    """The event `kind` with `data`, each required field it leaves out set to its type's zero
    value (`""`, `0`, `False`, `[]`, `{}`), built through the hub's own path (`ev.build`)."""
    cls = ev.CATALOGUE[kind].payload
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        required = field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
        if required and field.name not in data:
            hint = hints[field.name]
            data[field.name] = _ZERO[typing.get_origin(hint) or hint]
    return typing.cast("ev.CatalogueEvent", ev.build(kind, data, namespace=namespace))
