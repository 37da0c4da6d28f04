"""How a served run's state changed, as an RFC 6902 patch: one rule for the AG-UI face's
`STATE_DELTA` and the console timeline's per-step state changes (the `nodes` stream's `state`).

Key by key at the top level: a state's keys are its schema's fields, the unit a person reads and
a breakpoint edits; a deeper diff would spell list indices that shift as messages or actions are
appended.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _pointer(key: str) -> str:
    return "/" + key.replace("~", "~0").replace("/", "~1")


def state_patch(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An RFC 6902 patch from `before` to `after`, key by key at the top level."""
    patch: list[dict[str, Any]] = [
        {"op": "remove", "path": _pointer(key)} for key in before if key not in after
    ]
    for key, value in after.items():
        if key not in before:
            patch.append({"op": "add", "path": _pointer(key), "value": value})
        elif before[key] != value:
            patch.append({"op": "replace", "path": _pointer(key), "value": value})
    return patch
