"""Embedded llama.cpp backends behind one interface (`LocalBackend`).

`xllamacpp` (the default, a prebuilt wheel: the `local` extra) and `llama_cpp_python`
(compiled from source: the `llama-cpp` extra). Pick one with `models.local_backend` in the
configuration or `LlamaCppProvider(..., backend="llama_cpp_python")`. Nothing here imports a
binding: each backend does in `load()`.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import Any, Literal, get_args

from ._base import (
    LOCAL_OPTIONS,
    Generation,
    GenerationStopped,
    LocalBackend,
    SamplingParams,
    import_failure,
)
from ._llama_cpp_python_backend import LlamaCppPythonBackend
from ._xllamacpp_backend import XllamacppBackend

BackendName = Literal["xllamacpp", "llama_cpp_python"]
BACKENDS: tuple[str, ...] = get_args(BackendName)
DEFAULT_BACKEND: BackendName = "xllamacpp"

_CLASSES: dict[str, type[LocalBackend]] = {
    "xllamacpp": XllamacppBackend,
    "llama_cpp_python": LlamaCppPythonBackend,
}
_MODULES = {"xllamacpp": "xllamacpp", "llama_cpp_python": "llama_cpp"}
_PACKAGES = {"xllamacpp": "xllamacpp", "llama_cpp_python": "llama-cpp-python"}
_EXTRAS = {"xllamacpp": "pip install -e '.[local]'", "llama_cpp_python": "pip install -e '.[llama-cpp]'"}


def _check_name(name: str) -> str:
    if name not in _CLASSES:
        raise ValueError(f"unknown local backend {name!r}; valid: {', '.join(BACKENDS)}")
    return name


def create_backend(name: str, model_path: str | Path, **options: Any) -> LocalBackend:
    """A backend by name (`ValueError` naming the valid ones otherwise); nothing is loaded.
    `options` are `LocalBackend`'s: n_ctx, n_threads, seed, chat_format, verbose."""
    return _CLASSES[_check_name(name)](model_path, **options)


def backend_installed(name: str) -> bool:
    """Whether the backend's binding is installed (found, not imported)."""
    return importlib.util.find_spec(_MODULES[_check_name(name)]) is not None


def backend_problem(name: str, *, import_it: bool = False) -> str | None:
    """Why the backend cannot run here (not installed, or with `import_it` also a missing
    system library), or None."""
    module = _MODULES[_check_name(name)]
    if not backend_installed(name):
        return f"{_PACKAGES[name]} is not installed ({_EXTRAS[name]})"
    if import_it:
        try:
            importlib.import_module(module)
        except (ImportError, OSError) as exc:
            return import_failure(exc, module=module, install=_EXTRAS[name]).message
    return None


__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "LOCAL_OPTIONS",
    "BackendName",
    "Generation",
    "GenerationStopped",
    "LlamaCppPythonBackend",
    "LocalBackend",
    "SamplingParams",
    "XllamacppBackend",
    "backend_installed",
    "backend_problem",
    "create_backend",
]
