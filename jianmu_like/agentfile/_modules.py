"""Which modules an agent file may name as `module:attr` tools.

An agent file is data, but importing a module runs its code and the tool it names runs more.
So a reference is honoured only for modules the user allowed: the built-in tools, modules listed
in the configuration (`agents.allowed_modules`) or given with `--allow-module`, and the agent
file's own code: modules whose file lies under the agent file's directory tree *and* not inside
a Python installation. The second condition matters because installations sit under the
folders agent files live in: pyenv keeps the standard library in the home directory, a project
keeps its `.venv` beside its agent files; "under the folder" alone would let an agent file name
`subprocess:getoutput` or any installed package. Paths are compared after resolving symlinks.
The module is located without executing anything (no parent package is imported) and refused
before it is imported.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from .._base.installations import installation_of
from ..errors import JianmuError

ALWAYS_ALLOWED = ("jianmu_like.tools.builtin",)
HOW_TO_ALLOW = (
    "allow it with --allow-module {name} or list it under agents.allowed_modules in the configuration"
)


class ModuleRefused(ValueError, JianmuError):
    """A module an agent file may not import; the message says which setting allows it."""


@dataclass(frozen=True)
class ModulePolicy:
    """Modules allowed by name (with their submodules) and directory trees whose modules are."""

    names: tuple[str, ...] = ()
    roots: tuple[Path, ...] = field(default_factory=tuple)

    def with_root(self, root: Path) -> ModulePolicy:
        real = Path(os.path.realpath(root))
        return self if real in self.roots else ModulePolicy(self.names, (*self.roots, real))

    def allows_name(self, module: str) -> bool:
        return any(module == name or module.startswith(name + ".") for name in (*ALWAYS_ALLOWED, *self.names))

    def import_module(self, module: str) -> ModuleType:
        """Import `module` if allowed; ModuleRefused (naming the setting) otherwise."""
        if self.allows_name(module):
            return importlib.import_module(module)
        origin, extra = locate(module, self.roots)
        if origin is None:
            raise ModuleRefused(
                f"cannot find module {module!r} (looked on sys.path and under {_roots(self.roots)})"
            )
        root = next((root for root in self.roots if _under(origin, root)), None)
        if root is None:
            raise ModuleRefused(
                f"module {module!r} ({origin}) is not under the agent file's directory "
                f"{_roots(self.roots)}; agent files may only name tools from allowed modules: "
                + HOW_TO_ALLOW.format(name=module)
            )
        installed = installation_of(origin, root)
        if installed is not None:
            raise ModuleRefused(
                f"module {module!r} ({origin}) is part of a Python installation ({installed}), "
                "not the agent file's own code; agent files may only name tools from modules under "
                "their directory that are not installed packages or the standard library: "
                + HOW_TO_ALLOW.format(name=module)
            )
        if extra is None:
            return importlib.import_module(module)
        sys.path.insert(0, str(extra))
        try:
            return importlib.import_module(module)
        finally:
            sys.path.remove(str(extra))


def locate(module: str, roots: Sequence[Path] = ()) -> tuple[str | None, Path | None]:
    """(origin, extra search directory) of `module`, found without executing any code.

    The origin is the file that would be imported ("built-in"/"frozen" for such modules). The
    search follows sys.path first, then `roots`, as an import with those roots appended would."""
    parts = module.split(".")
    loaded = sys.modules.get(module)
    if loaded is not None:
        return getattr(loaded, "__file__", None) or "built-in", None
    for extra in (None, *roots):
        origin = _find(parts, [*sys.path] if extra is None else [str(extra)])
        if origin is not None:
            return origin, extra
    return None, None


def _find(parts: list[str], search: list[str]) -> str | None:
    top = parts[0]
    if len(parts) == 1 and (
        importlib.machinery.BuiltinImporter.find_spec(top) is not None
        or importlib.machinery.FrozenImporter.find_spec(top) is not None
    ):
        return "built-in"
    locations: list[str] | None = search
    spec = None
    for part in parts:
        if locations is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(part, locations)
        if spec is None:
            return None
        locations = list(spec.submodule_search_locations or []) or None
    if spec is None:
        return None
    if spec.origin in (None, "namespace"):
        paths = list(spec.submodule_search_locations or [])
        return paths[0] if paths else None
    return spec.origin


def _under(origin: str, root: Path) -> bool:
    if origin in ("built-in", "frozen"):
        return False
    return Path(os.path.realpath(origin)).is_relative_to(root)


def _roots(roots: Sequence[Path]) -> str:
    return ", ".join(str(r) for r in roots) or "(none)"
