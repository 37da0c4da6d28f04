"""Errors as types: one `JianmuError` base under every exception the package defines, and
`jianmu_like.errors` showing (and re-exporting) the hierarchy."""

from __future__ import annotations

import builtins
import importlib
import inspect
import pkgutil

import jianmu_like
import jianmu_like.errors as errors


def _every_module() -> list[str]:
    """Every module of the package (`__main__` would run the CLI), imported."""
    names = [
        i.name
        for i in pkgutil.walk_packages(jianmu_like.__path__, "jianmu_like.")
        if i.name != "jianmu_like.__main__"
    ]
    for name in names:
        importlib.import_module(name)
    return names


def test_every_exception_of_the_package_derives_from_jianmu_error() -> None:
    defined = [
        obj
        for module in _every_module()
        for obj in vars(importlib.import_module(module)).values()
        if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module
    ]
    assert len(defined) > 40  # the walk found the package's exceptions
    strays = sorted(
        f"{c.__module__}.{c.__qualname__}" for c in defined if not issubclass(c, errors.JianmuError)
    )
    assert strays == []


def test_the_errors_module_re_exports_each_public_exception_once() -> None:
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, errors.JianmuError), name
        assert cls.__name__ == name
    assert jianmu_like.ThreadConflictError is errors.ThreadConflictError
    assert jianmu_like.JianmuError is errors.JianmuError


def test_builtin_bases_callers_catch_are_kept() -> None:
    assert issubclass(errors.InputError, ValueError)
    assert issubclass(errors.ConfigError, ValueError)
    assert issubclass(errors.CheckpointError, RuntimeError)
    assert issubclass(errors.StateError, KeyError)
    assert issubclass(errors.ApprovalError, LookupError)


def _tree() -> str:
    """The hierarchy of `errors.__all__`, one class a line, indented under its nearest exported
    ancestor, with the builtin bases it keeps."""
    classes = {getattr(errors, name): name for name in errors.__all__}
    children: dict[type, list[type]] = {}
    for cls in classes:
        if cls is not errors.JianmuError:
            parent = next(base for base in cls.__mro__[1:] if base in classes)
            children.setdefault(parent, []).append(cls)
    lines: list[str] = []

    def draw(cls: type, depth: int) -> None:
        kept = [
            b.__name__
            for b in cls.__bases__
            if getattr(builtins, b.__name__, None) is b and b is not Exception
        ]
        lines.append("    " + "  " * depth + cls.__name__ + (f" ({', '.join(kept)})" if kept else ""))
        for child in sorted(children.get(cls, []), key=lambda c: c.__name__):
            draw(child, depth + 1)

    draw(errors.JianmuError, 0)
    return "\n".join(lines)


def test_the_module_docstring_draws_the_hierarchy() -> None:
    tree = _tree()
    assert tree in (errors.__doc__ or ""), f"update the tree in jianmu_like/errors.py:\n{tree}"
