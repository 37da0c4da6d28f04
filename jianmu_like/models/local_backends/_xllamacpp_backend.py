"""The `xllamacpp` backend (the default): llama.cpp's own server code, in-process.

xllamacpp ships a prebuilt manylinux CPU wheel, so installing it compiles nothing. Requests are
OpenAI chat completions run by llama.cpp's server loop on its own thread: the GGUF's chat
template, usage and finish_reason come from llama.cpp itself, and the prompt prefix shared with
the previous turn is reused from the KV cache. Replies are streamed so `should_stop` is checked
once per token; JSON schemas become llguidance grammars with `json.dumps`'s exact layout. It
needs `libgomp.so.1` (Debian/Ubuntu package `libgomp1`) and an x86-64 CPU with AVX2.

xllamacpp's `Server` always starts llama.cpp's HTTP API too (no setting turns it off), by
default on a random TCP port of 127.0.0.1 without authentication, answering any local process
and — its CORS reflects every `Origin` — any web page the user opens, which could run the
model, read its settings and slots. We never use that API (requests are handed over
in-process), so it is shut away twice: it listens on a Unix socket in a private temporary
folder (mode 0700: no TCP port at all, nothing for other users or browsers to reach), and it
requires an API key (`secrets.token_urlsafe`) that only this object knows, so even the user's
own processes get 401 (llama.cpp leaves only `/health` open). Where Unix sockets are not
available it stays on a loopback port, behind the key.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

from .._errors import ModelError
from ._base import Generation, GenerationStopped, LocalBackend, SamplingParams, import_failure

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
        self._socket_dir: str | None = None

    @property
    def loaded(self) -> bool:
        return self._server is not None

    @property
    def listening_address(self) -> str | None:
        """Where llama.cpp's unused HTTP API listens (`unix:///...` or `http://127.0.0.1:<port>`),
        None before loading. It answers only requests bearing a key this object never shares."""
        return str(self._server.listening_address) if self._server is not None else None

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
        self._shut_http_api(params)
        try:
            self._server = xllamacpp.Server(params)
        except Exception as exc:  # RuntimeError("Failed to init server, ...")
            self._remove_socket_dir()
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
        self._remove_socket_dir()

    def _shut_http_api(self, params: Any) -> None:
        """Put llama.cpp's HTTP API on a private Unix socket behind a key nobody is told (see
        the module)."""
        params.api_keys = [secrets.token_urlsafe(32)]
        if os.name != "posix":
            return  # a loopback port, behind the key
        folder = tempfile.mkdtemp(prefix="jianmu-llama-")  # mode 0700
        path = os.path.join(folder, "api.sock")
        if len(path.encode()) > _SUN_PATH_MAX and os.path.isdir("/tmp"):  # a long $TMPDIR
            os.rmdir(folder)
            folder = tempfile.mkdtemp(prefix="jianmu-llama-", dir="/tmp")
            path = os.path.join(folder, "api.sock")
        self._socket_dir = folder
        params.hostnames = [path]  # a name ending in ".sock" makes llama.cpp bind AF_UNIX

    def _remove_socket_dir(self) -> None:
        folder, self._socket_dir = self._socket_dir, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


_SUN_PATH_MAX = 107
"""The longest Unix socket path Linux accepts (`sun_path` holds 108 bytes with the NUL)."""


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
