"""A griffe extension: a package's public names are its `if TYPE_CHECKING:` imports.

jianmu_like's packages build `__all__` at import time from the `from .module import Name as Name`
lines of their one `if TYPE_CHECKING:` block (see `jianmu_like.exports`), so static analysis
cannot see `__all__`. This reads the block from the source with the same reader the runtime uses
(`jianmu_like.exports.declared_exports`, which imports nothing else of the package) and makes its
names the module's exports, so the API reference shows exactly the public tier, without importing
the modules (importing would run code, and `jianmu_like.__main__` is a command line).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import griffe

from jianmu_like.exports import declared_exports


class LazyExports(griffe.Extension):
    """Sets `exports` of every module that imports `lazy_exports`, from its TYPE_CHECKING block."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        self._visit(pkg)

    def _visit(self, module: griffe.Module) -> None:
        built = module.members.get("lazy_exports")
        if built is not None and built.is_alias and isinstance(module.filepath, Path):
            module.exports = sorted(declared_exports(module.filepath.read_text(), str(module.filepath)))
        for member in module.modules.values():
            if not member.is_alias:
                self._visit(member)
