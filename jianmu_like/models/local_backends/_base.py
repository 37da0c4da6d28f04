"""The one interface every embedded llama.cpp binding implements: load a GGUF, run one chat.

A backend is synchronous and not thread-safe: `LlamaCppProvider` calls it from one worker
thread at a time. Backends import their binding lazily (in `load()`), so the package imports
without the optional `[local]` extra.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import JianmuError
from .._errors import ModelError

LOCAL_OPTIONS = frozenset(
    {"repeat_penalty", "min_p", "presence_penalty", "frequency_penalty", "seed", "stop"}
)
"""Extra request parameters passed through to the backend; others are ignored."""


class GenerationStopped(JianmuError):
    """Raised when the caller's `should_stop` asked a running generation to stop."""


@dataclass(frozen=True)
class Generation:
    """The text of one completion and the backend's token counts."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None


@dataclass(frozen=True)
class SamplingParams:
    """Sampling settings of one completion (None: llama.cpp's default)."""

    temperature: float = 0.0
    max_tokens: int = 256
    top_p: float | None = None
    top_k: int | None = None
    extra: tuple[tuple[str, Any], ...] = ()


class LocalBackend(ABC):
    """One GGUF model in-process. `load()` is explicit (slow, may fail); `generate()` loads
    lazily; `close()` frees the memory (a later `generate()` loads again).

    `n_threads` is used for both prompt processing and generation: on small shared machines
    more threads than cores makes llama.cpp's OpenMP spin-waiting collapse throughput (2
    threads ran at 0.6 tok/s where 1 ran at 38), so the default is 1 and `OMP_WAIT_POLICY`
    is set to PASSIVE (before the binding is imported) unless the environment says otherwise.
    `chat_format` names a built-in chat template for GGUFs without one (None: the GGUF's own).
    """

    name: str = ""
    """The backend's name, as `backend:` in the configuration spells it."""

    def __init__(
        self,
        model_path: str | Path,
        *,
        n_ctx: int = 2048,
        n_threads: int = 1,
        seed: int = 0,
        chat_format: str | None = None,
        verbose: bool = False,
    ) -> None:
        self.model_path = Path(model_path)
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.seed = seed
        self.chat_format = chat_format
        self.verbose = verbose

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.model_path)!r}, loaded={self.loaded})"

    @property
    @abstractmethod
    def loaded(self) -> bool:
        """Whether the model is in memory."""

    @abstractmethod
    def load(self) -> None:
        """Load the model (once); raise a non-retryable `ModelError` naming the cause."""

    @abstractmethod
    def generate(
        self,
        turns: Sequence[dict[str, str]],
        *,
        schema: dict[str, Any] | None = None,
        grammar: str | None = None,
        params: SamplingParams,
        should_stop: Callable[[], bool] | None = None,
    ) -> Generation:
        """One chat completion with the model's chat template.

        The reply is constrained to the JSON `schema` (in `json.dumps`'s layout, strings on one
        line) or to the GBNF `grammar` when one is given (not both). `should_stop` is polled
        once per token; when it returns True the generation is abandoned with
        `GenerationStopped`. Context overflows and binding failures become non-retryable
        `ModelError`s.
        """

    @abstractmethod
    def close(self) -> None:
        """Free the model's memory; a later `generate()` loads it again."""

    def _check_file(self) -> None:
        """Raise the `ModelError` for a missing model file; prepare the OpenMP environment."""
        if not self.model_path.is_file():
            raise ModelError(
                f"local model file not found: {self.model_path} (run `jianmu-like models pull`)",
                base_url=f"local://{self.model_path.name}",
            )
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

    @staticmethod
    def _check_constraint(schema: dict[str, Any] | None, grammar: str | None) -> None:
        if schema is not None and grammar is not None:
            raise ValueError("pass a JSON schema or a GBNF grammar, not both")

    def _chat_request(self, turns: Sequence[dict[str, str]], params: SamplingParams) -> dict[str, Any]:
        """The OpenAI-style chat arguments both bindings take (each adds its own constraint and
        streaming options), so sampling settings are mapped in one place."""
        request: dict[str, Any] = {
            "messages": list(turns),
            "temperature": params.temperature,
            "max_tokens": params.max_tokens,
            "seed": self.seed,
        }
        if params.top_p is not None:
            request["top_p"] = params.top_p
        if params.top_k is not None:
            request["top_k"] = params.top_k
        request.update(params.extra)
        return request


SYSTEM_LIBRARIES = {
    "libgomp.so.1": "libgomp1",
    "libstdc++.so.6": "libstdc++6",
    "libgcc_s.so.1": "libgcc-s1",
}
"""Shared libraries the llama.cpp wheels link against, and the Debian/Ubuntu package of each."""


def import_failure(exc: ImportError | OSError, *, module: str, install: str) -> ModelError:
    """The `ModelError` for a binding that does not import: not installed (say how to install
    it) or installed but missing a system library (name it and its apt package)."""
    message = str(exc)
    for library, package in SYSTEM_LIBRARIES.items():
        if library in message:
            return ModelError(
                f"{module} is installed but cannot load: the system library {library} is missing "
                f"(Debian/Ubuntu: apt-get install {package}; see docs/guides/models.md#embedded-local-model)"
            )
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] == module:
        return ModelError(
            f"{module} is not installed: {install} (see docs/guides/models.md#embedded-local-model)"
        )
    return ModelError(f"{module} cannot be imported: {message}")
