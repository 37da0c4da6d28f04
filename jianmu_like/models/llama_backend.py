"""A small typed wrapper around llama-cpp-python: load a GGUF model, run one constrained chat.

Everything that touches `llama_cpp` lives here, so the rest of the package stays typed and
importable without the optional `[local]` extra. The wrapper is synchronous and not
thread-safe: `LlamaCppProvider` calls it from one worker thread at a time.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ModelError

LLAMA_OPTIONS = frozenset(
    {"repeat_penalty", "min_p", "presence_penalty", "frequency_penalty", "seed", "stop"}
)
"""Extra request parameters passed through to `create_chat_completion`; others are ignored."""


def llama_cpp_available() -> bool:
    """Whether the optional `llama_cpp` package is installed (without importing it)."""
    return importlib.util.find_spec("llama_cpp") is not None


class GenerationStopped(Exception):
    """Raised inside llama.cpp's sampling loop when the caller asked it to stop."""


@dataclass(frozen=True)
class Generation:
    """The text of one completion and llama.cpp's token counts."""

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


class LlamaBackend:
    """One loaded GGUF model. `load()` is explicit (slow, may fail); `generate()` loads lazily.

    `n_threads` is used for both prompt processing and generation: on small shared machines
    more threads than cores makes llama.cpp's OpenMP spin-waiting collapse throughput (2
    threads ran at 0.6 tok/s where 1 ran at 38), so the default is 1 and `OMP_WAIT_POLICY`
    is set to PASSIVE unless the environment already says otherwise.
    """

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
        self._llama: Any = None
        self._grammars: dict[str, Any] = {}

    @property
    def loaded(self) -> bool:
        return self._llama is not None

    def load(self) -> None:
        """Load the model (once); raise a non-retryable `ModelError` naming the cause."""
        if self._llama is not None:
            return
        if not self.model_path.is_file():
            raise ModelError(
                f"local model file not found: {self.model_path} (run `jianmu-like models pull`)",
                base_url=f"local://{self.model_path.name}",
            )
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import llama_cpp
        except ImportError as exc:
            raise ModelError(
                "llama-cpp-python is not installed: pip install -e '.[local]' "
                "(see README, 'Embedded local model')"
            ) from exc
        if not self.verbose:
            logging.getLogger("llama-cpp-python").setLevel(logging.CRITICAL)
        from llama_cpp._utils import suppress_stdout_stderr

        try:
            with suppress_stdout_stderr(disable=self.verbose):  # llama.cpp prints context notices
                self._llama = llama_cpp.Llama(
                    model_path=str(self.model_path),
                    n_ctx=self.n_ctx,
                    n_threads=self.n_threads,
                    n_threads_batch=self.n_threads,
                    seed=self.seed,
                    chat_format=self.chat_format,
                    verbose=self.verbose,
                )
        except Exception as exc:  # llama.cpp reports load failures as ValueError/RuntimeError
            raise ModelError(
                f"could not load local model {self.model_path}: {exc}",
                base_url=f"local://{self.model_path.name}",
            ) from exc

    def _grammar(self, schema: dict[str, Any]) -> Any:
        key = json.dumps(schema)
        grammar = self._grammars.get(key)
        if grammar is None:
            from llama_cpp.llama_grammar import LlamaGrammar

            grammar = LlamaGrammar.from_string(schema_to_gbnf(schema), verbose=self.verbose)
            self._grammars[key] = grammar
        return grammar

    def generate(
        self,
        turns: Sequence[dict[str, str]],
        *,
        schema: dict[str, Any] | None,
        params: SamplingParams,
        should_stop: Callable[[], bool] | None = None,
    ) -> Generation:
        """One chat completion, constrained to `schema` when given.

        `should_stop` is polled once per sampled token; when it returns True the generation is
        abandoned with `GenerationStopped`. Context overflows and llama.cpp failures become
        non-retryable `ModelError`s.
        """
        self.load()
        kwargs: dict[str, Any] = {
            "messages": list(turns),
            "temperature": params.temperature,
            "max_tokens": params.max_tokens,
            "seed": self.seed,
        }
        if params.top_p is not None:
            kwargs["top_p"] = params.top_p
        if params.top_k is not None:
            kwargs["top_k"] = params.top_k
        kwargs.update(params.extra)
        if schema is not None:
            kwargs["grammar"] = self._grammar(schema)
        if should_stop is not None:
            kwargs["logits_processor"] = [_stop_processor(should_stop)]
        try:
            result: Any = self._llama.create_chat_completion(**kwargs)
        except GenerationStopped:
            raise
        except Exception as exc:
            raise ModelError(f"local generation failed: {exc}") from exc
        choice = result["choices"][0]
        usage = result.get("usage") or {}
        return Generation(
            text=str(choice["message"].get("content") or ""),
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            finish_reason=choice.get("finish_reason"),
        )

    def close(self) -> None:
        """Free the model's memory; a later `generate()` loads it again."""
        llama, self._llama = self._llama, None
        if llama is not None:
            llama.close()


def _stop_processor(should_stop: Callable[[], bool]) -> Callable[[Any, Any], Any]:
    def check(input_ids: Any, scores: Any) -> Any:
        if should_stop():
            raise GenerationStopped
        return scores

    return check


_ANY_CHAR = 'char ::= [^"\\\\] |'
_SINGLE_LINE_CHAR = 'char ::= [^"\\\\\\x7F\\x00-\\x1F] |'
_LAYOUT = (('space ::= " "?', 'space ::= ""'), ('":" space', '": "'), ('"," space', '", "'))


def schema_to_gbnf(schema: dict[str, Any]) -> str:
    """llama.cpp's GBNF for `schema`, tightened for small models: JSON strings hold printable
    characters only (a raw newline is where they start to ramble) and the layout is exactly
    `json.dumps`'s (`{"a": 1, "b": 2}`), the one the prompt's examples and history show, so
    the model never drifts into a spacing it has not seen."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    grammar = str(json_schema_to_gbnf(json.dumps(schema))).replace(_ANY_CHAR, _SINGLE_LINE_CHAR)
    for loose, exact in _LAYOUT:
        grammar = grammar.replace(loose, exact)
    return grammar
