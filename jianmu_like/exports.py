"""Lazy public surfaces: one table per package says which name comes from which module.

Every curated package (`jianmu_like`, `jianmu_like.bt`, `.state`, `.nodes`, ...) lists its public
names once, grouped by the module that defines them; `lazy_exports` turns that table into the
package's `__all__`, its PEP 562 `__getattr__` (a name's module is imported on first access, so
`import jianmu_like` stays cheap and a subpackage never drags in its siblings) and `__dir__`.

Type checkers do not run `__getattr__`: each package also imports its names under
`TYPE_CHECKING` (`from .agent import Agent as Agent`), and `tests/test_public_api.py` checks those
imports against the table, so the two cannot drift.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

ExportTable = Mapping[str, Sequence[str]]
"""Module (relative to the package, e.g. ".agent") → the public names it defines."""


def lazy_exports(
    module: str, table: ExportTable
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """`__all__`, `__getattr__` and `__dir__` of `module` (its `__name__`) from its export table;
    the table's relative modules are resolved as the module's own relative imports are."""
    origin = export_origins(module, table)
    public = sorted(origin)
    namespace = sys.modules[module].__dict__

    def __getattr__(name: str) -> Any:
        source = origin.get(name)
        if source is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        namespace[name] = value  # later lookups skip this hook
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *public})

    return public, __getattr__, __dir__


def export_origins(module: str, table: ExportTable) -> dict[str, str]:
    """Name → absolute path of the module that defines it. A name listed twice is an error (the
    table is the one place a name is written, so a duplicate is a mistake)."""
    anchor = sys.modules[module].__package__ or module
    origin: dict[str, str] = {}
    for source, names in table.items():
        for name in names:
            if name in origin:
                raise ValueError(f"{module} exports {name!r} twice ({origin[name]} and {source})")
            origin[name] = importlib.util.resolve_name(source, anchor)
    return origin
