"""The `llama_cpp_python` backend: llama-cpp-python's `Llama.create_chat_completion`.

Selectable with `models.local_backend: llama_cpp_python`. PyPI has no wheel of it: pip
compiles llama.cpp (4–19 min), see docs/guides/models.md, 'Embedded local model'.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from .._errors import ModelError
from ._base import Generation, GenerationStopped, LocalBackend, SamplingParams, import_failure

INSTALL = "pip install -e '.[llama-cpp]' (compiles llama.cpp, see docs/guides/models.md)"


class LlamaCppPythonBackend(LocalBackend):
    """A `LocalBackend` on llama-cpp-python; grammars are compiled once per schema."""

    name = "llama_cpp_python"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._llama: Any = None
        self._grammars: dict[str, Any] = {}

    @property
    def loaded(self) -> bool:
        return self._llama is not None

    def load(self) -> None:
        if self._llama is not None:
            return
        self._check_file()
        try:
            import llama_cpp
            from llama_cpp._utils import suppress_stdout_stderr
        except (ImportError, OSError) as exc:
            raise import_failure(exc, module="llama_cpp", install=INSTALL) from exc
        if not self.verbose:
            logging.getLogger("llama-cpp-python").setLevel(logging.CRITICAL)
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

    def _grammar(self, gbnf: str) -> Any:
        grammar = self._grammars.get(gbnf)
        if grammar is None:
            from llama_cpp.llama_grammar import LlamaGrammar

            grammar = LlamaGrammar.from_string(gbnf, verbose=self.verbose)
            self._grammars[gbnf] = grammar
        return grammar

    def generate(
        self,
        turns: Sequence[dict[str, str]],
        *,
        schema: dict[str, Any] | None = None,
        grammar: str | None = None,
        params: SamplingParams,
        should_stop: Callable[[], bool] | None = None,
    ) -> Generation:
        self._check_constraint(schema, grammar)
        self.load()
        kwargs = self._chat_request(turns, params)
        if schema is not None:
            grammar = schema_to_gbnf(schema)
        if grammar is not None:
            kwargs["grammar"] = self._grammar(grammar)
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
    """llama-cpp-python's GBNF for `schema`, tightened for small models: JSON strings hold
    printable characters only (a raw newline is where they start to ramble) and the layout is
    exactly `json.dumps`'s (`{"a": 1, "b": 2}`), the one the prompt's examples and history
    show, so the model never drifts into a spacing it has not seen."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    grammar = str(json_schema_to_gbnf(json.dumps(schema))).replace(_ANY_CHAR, _SINGLE_LINE_CHAR)
    for loose, exact in _LAYOUT:
        grammar = grammar.replace(loose, exact)
    return grammar
