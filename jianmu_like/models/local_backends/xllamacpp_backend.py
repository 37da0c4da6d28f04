"""The `xllamacpp` backend (the default): llama.cpp's own server code, in-process.

xllamacpp ships a prebuilt manylinux CPU wheel, so installing it compiles nothing. Requests are
OpenAI chat completions run by llama.cpp's server loop on its own thread: the GGUF's chat
template, usage and finish_reason come from llama.cpp itself, and the prompt prefix shared with
the previous turn is reused from the KV cache. Replies are streamed so `should_stop` is checked
once per token; JSON schemas become llguidance grammars with `json.dumps`'s exact layout. It
needs `libgomp.so.1` (Debian/Ubuntu package `libgomp1`) and an x86-64 CPU with AVX2.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ModelError
from .base import Generation, GenerationStopped, LocalBackend, SamplingParams, import_failure

INSTALL = "pip install -e '.[local]'"

JSON_LAYOUT = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
"""llguidance's layout options: exactly `json.dumps`'s, the one the prompt's examples show (a
small model let loose on spacing drifts into `{ "tool": … } } …` until `max_tokens`). JSON
strings never hold raw control characters (no newline), as the JSON grammar says."""


def schema_to_grammar(schema: dict[str, Any]) -> str:
    """The llguidance grammar (llama.cpp's `grammar` field accepts it) for `schema`."""
    return "%llguidance {}\nstart: %json " + json.dumps({**schema, "x-guidance": JSON_LAYOUT})


class XllamacppBackend(LocalBackend):
    """A `LocalBackend` on xllamacpp's `Server` (one slot, `n_ctx` tokens)."""

    name = "xllamacpp"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._server: Any = None

    @property
    def loaded(self) -> bool:
        return self._server is not None

    def load(self) -> None:
        if self._server is not None:
            return
        self._check_file()
        try:
            import xllamacpp
        except (ImportError, OSError) as exc:
            raise import_failure(exc, module="xllamacpp", install=INSTALL) from exc
        params = xllamacpp.CommonParams()
        params.model.path = str(self.model_path)
        params.n_ctx = self.n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = self.n_threads
        params.cpuparams_batch.n_threads = self.n_threads
        params.sampling.seed = self.seed
        params.warmup = False
        params.cache_ram_mib = 0  # the slot's own KV cache is enough for one conversation
        params.verbosity = 1 if self.verbose else -1
        if self.chat_format is not None:
            params.chat_template = self.chat_format
        try:
            self._server = xllamacpp.Server(params)
        except Exception as exc:  # RuntimeError("Failed to init server, ...")
            raise ModelError(
                f"could not load local model {self.model_path}: {exc}",
                base_url=f"local://{self.model_path.name}",
            ) from exc

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
        request = self._chat_request(turns, params)
        request["stream"] = True
        request["stream_options"] = {"include_usage": True}
        if schema is not None:
            grammar = schema_to_grammar(schema)
        if grammar is not None:
            request["grammar"] = grammar
        reply = _Reply(should_stop)
        try:
            self._server.handle_chat_completions(request, reply.on_chunk)
        except Exception as exc:
            raise ModelError(f"local generation failed: {exc}") from exc
        if reply.error is not None:
            raise ModelError(f"local generation failed: {reply.error}")
        if reply.stopped:
            raise GenerationStopped
        return Generation(
            text="".join(reply.parts),
            prompt_tokens=int(reply.usage.get("prompt_tokens", 0)),
            completion_tokens=int(reply.usage.get("completion_tokens", 0)),
            finish_reason=reply.finish_reason,
        )

    def close(self) -> None:
        self._server = None  # the destructor stops llama.cpp's loop and frees the model


class _Reply:
    """Accumulates a streamed chat completion; `on_chunk` returns True to stop the stream
    (exceptions raised in it would be swallowed by the binding, hence the flags)."""

    def __init__(self, should_stop: Callable[[], bool] | None) -> None:
        self.should_stop = should_stop
        self.parts: list[str] = []
        self.usage: dict[str, Any] = {}
        self.finish_reason: str | None = None
        self.error: str | None = None
        self.stopped = False

    def on_chunk(self, chunk: dict[str, Any]) -> bool:
        if "error" in chunk:
            error = chunk["error"]
            self.error = str(error.get("message", error) if isinstance(error, dict) else error)
            return True
        for choice in chunk.get("choices") or ():
            content = (choice.get("delta") or {}).get("content")
            if content:
                self.parts.append(str(content))
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
        if chunk.get("usage"):
            self.usage = dict(chunk["usage"])
        if self.should_stop is not None and self.finish_reason is None and self.should_stop():
            self.stopped = True
            return True
        return False
