"""A griffe extension: a package's public names are its `_EXPORTS` table.

jianmu_like's packages build `__all__` at import time from one `_EXPORTS` table (module → the
names it gives; see `jianmu_like.exports`), so static analysis cannot see `__all__`. This reads
the table from the source instead — a dict literal — and makes its names the module's exports, so
the API reference shows exactly the public tier, without importing anything (importing would run
code, and `jianmu_like.__main__` is a command line).
"""

from __future__ import annotations

import ast
from typing import Any

import griffe


class LazyExports(griffe.Extension):
    """Sets `exports` of every module that defines `_EXPORTS` as a dict literal."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        self._visit(pkg)

    def _visit(self, module: griffe.Module) -> None:
        table = module.members.get("_EXPORTS")
        if isinstance(table, griffe.Attribute) and table.value is not None:
            names = [name for names in ast.literal_eval(str(table.value)).values() for name in names]
            module.exports = sorted(set(names))
        for member in module.modules.values():
            if not member.is_alias:
                self._visit(member)
