"""Runs recorded before the implementation modules became private (issue 19) still recover.

DBOS pickles what a step returns and the error it raises: a model call's `ModelResponse`, a tool
call's artifacts, a `ModelCallFailed`. A pickle names each class by the module that defined it,
and those modules moved (`models._types` is now `models._types`), so a
run recorded by an older worker could not be replayed by a newer one: unpickling its steps would
fail, although nothing in them changed.

So that the old path resolves, this finder answers an import of a module of this package that
does not exist, `a.b.c`, with the module `a.b._c` when that one exists, and with nothing
otherwise (the import fails as before). It serves only the processes that replay DBOS records
(imported by the workflow, which the worker and the client both load), and it is lazy: no module
is imported before something asks for its old path.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType

PACKAGE = __name__.split(".")[0]

REGROUPED = {
    "_agent": "_run.agent",
    "_config": "_base.config",
    "_extras": "_base.extras",
    "_hostnames": "_base.hostnames",
    "_installations": "_base.installations",
    "_json_schema": "_base.json_schema",
    "_keys": "models._keys",
    "_names": "_base.names",
    "_redact": "_base.redact",
    "_results": "nodes._results",
    "_review": "_run.review",
    "_schema_refs": "_base.schema_refs",
    "_sources": "_base.sources",
    "_speed": "_base.speed",
    "_template": "_run.template",
    "_tool_text": "_base.tool_text",
    "_validation": "_base.validation",
}
"""Root modules regrouped into their layer's package (issue 35): old path → new, under PACKAGE."""


def private_path(name: str) -> str | None:
    """`a.b._c` for the old path `a.b.c` of a module of this package that is now private, and the
    new path of a root module regrouped into its layer's package (`REGROUPED`)."""
    regrouped = REGROUPED.get(name.removeprefix(f"{PACKAGE}.")) if name.startswith(f"{PACKAGE}.") else None
    if regrouped is not None:
        return f"{PACKAGE}.{regrouped}"
    parent, _, last = name.rpartition(".")
    if not parent or not (parent == PACKAGE or parent.startswith(f"{PACKAGE}.")) or last.startswith("_"):
        return None
    if parent not in sys.modules:
        return None  # asked before its package: the normal import of the package comes first
    candidate = f"{parent}._{last}"
    try:
        return candidate if importlib.util.find_spec(candidate) is not None else None
    except ModuleNotFoundError:
        return None


class OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Old module path → the private module itself (one module object under two names)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if importlib.machinery.PathFinder.find_spec(fullname, path) is not None:
            return None  # a real module of that name: never shadowed
        new = private_path(fullname)
        return None if new is None else importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = private_path(spec.name)
        assert new is not None  # find_spec said so
        module = importlib.import_module(new)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._spec  # the import system set the old name's spec: put it back


def install() -> None:
    """Add the finder once (idempotent), after the regular ones."""
    if not any(isinstance(finder, OldPaths) for finder in sys.meta_path):
        sys.meta_path.append(OldPaths())
