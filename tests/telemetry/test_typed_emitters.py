"""Every emitter of the package builds its event's class (mypy checks the fields it sends): no
`emit`/`on_event` call names an event by its catalogue name (`ev.TEXT_DELTA`, a string). The
name path stays for users' code and for events read back from a recording (`emit_named`)."""

from __future__ import annotations

import ast
from pathlib import Path

import jianmu_like

PACKAGE = Path(jianmu_like.__file__).parent


def _named_emits(source: str) -> list[tuple[int, str]]:
    """`emit(...)`/`on_event(...)` calls whose event is a name: `ev.SOME_NAME` or a string."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if not (name.endswith("emit") or name == "on_event"):
            continue
        first = node.args[0]
        if isinstance(first, ast.Attribute) and first.attr.isupper():
            found.append((node.lineno, first.attr))
        elif isinstance(first, ast.Constant) and isinstance(first.value, str):
            found.append((node.lineno, first.value))
    return found


def test_no_emitter_of_the_package_names_its_event_instead_of_building_its_class() -> None:
    strays = [
        f"{path.relative_to(PACKAGE)}:{line}: {what}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, what in _named_emits(path.read_text(encoding="utf-8"))
    ]
    assert strays == []


def test_the_scan_finds_what_it_looks_for() -> None:
    code = (
        'on_event(ev.TEXT_DELTA, {"delta": "x"})\n'
        'self.emit("loop.iteration", iteration=1)\n'
        'hub.emit(ev.TextDelta, delta="x")\n'
    )
    assert _named_emits(code) == [(1, "TEXT_DELTA"), (2, "loop.iteration")]
