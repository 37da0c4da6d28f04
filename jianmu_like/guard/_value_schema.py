"""ValueSchema: a JSON Schema for one tool argument's value, checked strictly.

Draft 2020-12 through `jsonschema`, without coercion (`{"maximum": 100}` rejects `"1000"`),
NaN and infinity refused as numbers, and schemas with unknown keywords or dangling `$ref`s
refused when built; see `json_schema` for the rules. `jsonschema` is imported on first use:
it takes a noticeable part of a second to import, and most agents have no argument rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Problem = tuple[str, str]
"""(where, what): `where` is a JSON path suffix ("", ".key", "[0]"), `what` starts with a verb."""


class ValueSchema:
    """A checked schema that lists every way a value violates it."""

    def __init__(self, schema: Mapping[str, Any] | bool) -> None:
        from .._base.json_schema import compile_schema

        self._validator = compile_schema(schema)
        self.schema = schema

    def problems(self, value: Any) -> list[Problem]:
        """Every violation, each with where in the value it is; empty when the value conforms."""
        from .._base.json_schema import problems

        return problems(self._validator, value)

    def __repr__(self) -> str:
        return f"ValueSchema({self.schema!r})"
