"""Where this interpreter's installation lies: what agent files and skills may not reach.

An agent file's code and a skill's files must be the user's own, not the standard library or an
installed package that happens to sit under the same folder (pyenv keeps the standard library in
the home directory, a project keeps its `.venv` beside its agent files). One rule, used by the
agent-file module policy (`agentfile._modules`) and by skill folders (`tools._skills`).
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
from pathlib import Path

INSTALL_DIR_NAMES = ("site-packages", "dist-packages")
"""Folders that hold installed packages, wherever they are."""

VENV_MARKER = "pyvenv.cfg"
"""The file at the top of every virtual environment (PEP 405)."""


def import_roots() -> dict[Path, str]:
    """The real folders of this interpreter's installation (what each is, by folder): the
    standard library, the prefixes, the site-packages folders (the user's included)."""
    found: dict[Path, str] = {}

    def add(path: str | None, what: str) -> None:
        if path:
            found.setdefault(Path(os.path.realpath(path)), what)

    paths = sysconfig.get_paths()
    add(paths.get("stdlib"), "the standard library")
    add(paths.get("platstdlib"), "the standard library")
    for scheme_path in ("purelib", "platlib"):
        add(paths.get(scheme_path), "installed packages")
    for path in getattr(site, "getsitepackages", list)():
        add(path, "installed packages")
    add(getattr(site, "getusersitepackages", lambda: None)(), "the user's installed packages")
    for prefix in ("prefix", "base_prefix", "exec_prefix", "base_exec_prefix"):
        add(getattr(sys, prefix, None), f"the Python installation (sys.{prefix})")
    return found


def installation_of(origin: str, root: Path) -> str | None:
    """What installation the module file `origin` (under `root`) belongs to, or None when it is
    the agent file's own code: under an import root of this interpreter, in a `site-packages`
    or `dist-packages` folder, or in a virtual environment inside `root` (any interpreter's)."""
    real = Path(os.path.realpath(origin))
    containing = [(path, what) for path, what in import_roots().items() if real.is_relative_to(path)]
    if containing:  # the deepest says most: a venv's site-packages lies inside its lib folder
        path, what = max(containing, key=lambda found: len(found[0].parts))
        return f"{what}, {path}"
    for part in real.parts[:-1]:
        if part in INSTALL_DIR_NAMES:
            return f"installed packages, a {part} folder"
    folder = real.parent
    while folder.is_relative_to(root):
        if (folder / VENV_MARKER).is_file():
            return f"the virtual environment {folder}"
        if folder == root:
            break
        folder = folder.parent
    return None
