"""Lazy public surfaces: each package writes its public names once, as the imports a type
checker reads.

Every curated package (`jianmu_like`, `jianmu_like.bt`, `.state`, `.nodes`, `.errors`, ...)
ends with one block:

    if TYPE_CHECKING:  # the public names (jianmu_like.exports reads this block)
        from ._run.agent import Agent as Agent
        from ._run.agent import AgentResult as AgentResult

and calls `__all__, __getattr__, __dir__ = lazy_exports(__name__)` under `if not TYPE_CHECKING:`.
Type checkers see the imports (the `X as X` form marks an explicit re-export under
`mypy --strict`) and no `__getattr__`, so a misspelt name is an error to them, not `Any`; at run
time the block never executes, and `lazy_exports` reads the same lines from the package's source to build
`__all__`, a PEP 562 `__getattr__` that imports a name's module on first access (so
`import jianmu_like` stays cheap and a subpackage never drags in its siblings) and `__dir__`.
This is the design of scientific-python's `lazy_loader.attach_stub`, with the package's own
`TYPE_CHECKING` block playing the stub: one list, so the runtime and the type checker cannot
disagree.

Why a reader of a few line shapes rather than `ast`: `import ast` plus one parse costs 3-7 ms,
paid by `jianmu-like --help`; splitting the block's lines into words costs about 0.1 ms per
package. The shapes are exactly what `ruff format` writes for such a block: `from .module import
Name as Name` on one line, or wrapped in parentheses when too long; comments and blank lines.
Anything else in the block is an `ImportError` (a broken package, as Python's own import errors
are), never a name silently left out; `tests/test_public_api.py` checks the reading against
`ast`'s.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from typing import Any


def lazy_exports(module: str) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """`__all__`, `__getattr__` and `__dir__` of `module` (its `__name__`), from the
    `if TYPE_CHECKING:` imports of its source; relative modules resolve as its own imports do."""
    origin = export_origins(module)
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


def export_origins(module: str) -> dict[str, str]:
    """Name → absolute path of the module that defines it, for an imported `module`."""
    loaded = sys.modules[module]
    path = loaded.__file__
    if path is None or not path.endswith(".py"):
        raise ImportError(f"{module}: its public names are read from its source, and {path} is none")
    with open(path, encoding="utf-8") as file:
        declared = declared_exports(file.read(), path)
    anchor = loaded.__package__ or module
    absolute = {source: importlib.util.resolve_name(source, anchor) for source in set(declared.values())}
    return {name: absolute[source] for name, source in declared.items()}


def declared_exports(source: str, filename: str = "<source>") -> dict[str, str]:
    """Name → relative module, from the one top-level `if TYPE_CHECKING:` block of a package's
    source (the shapes the module docstring lists; anything else is an `ImportError`)."""
    lines = source.splitlines()
    starts = [number for number, line in enumerate(lines) if line.startswith("if TYPE_CHECKING:")]
    if len(starts) != 1:
        found = len(starts)
        raise ImportError(f"{filename}: expected one top-level `if TYPE_CHECKING:` block, found {found}")
    declared: dict[str, str] = {}
    number = starts[0] + 1
    while number < len(lines) and not lines[number][:1].strip():  # the block: indented or blank
        first = number + 1  # 1-based, for the message
        code = lines[number].partition("#")[0]
        number += 1
        if code.rstrip().endswith("("):  # wrapped by the formatter: read up to the parenthesis
            while ")" not in code and number < len(lines):
                code += " " + lines[number].partition("#")[0]
                number += 1
            code = code.replace("(", " ").replace(")", " ").replace(",", " ", 1)
        words = code.split()
        if not words:
            continue
        if not (
            len(words) == 6
            and (words[0], words[2], words[4]) == ("from", "import", "as")
            and words[1].startswith(".")
            and words[3].isidentifier()
            and words[5].isidentifier()
        ):
            raise ImportError(
                f"{filename}:{first}: {code.strip()!r}: the TYPE_CHECKING block holds only "
                "`from .module import Name as Name` lines"
            )
        name, alias = words[3], words[5]
        if name != alias:
            raise ImportError(f"{filename}:{first}: write `{name} as {name}` (an explicit re-export)")
        if name in declared:
            raise ImportError(f"{filename}:{first}: {name!r} is exported twice")
        declared[name] = words[1]
    return declared
