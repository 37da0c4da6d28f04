"""`LlamaHTTPServer`: llama.cpp's own OpenAI-compatible HTTP server (xllamacpp) on 127.0.0.1.

The project's `ScriptedOpenAIServer` answers what a test scripts; this one runs a real model
behind llama.cpp's real HTTP API (`/v1/chat/completions`, `/props`, `/v1/models`), with the
Jinja chat template of the GGUF (`use_jinja`), so the agent meets what users' local servers
do: tools ignored by templates without tool support, `response_format` turned into grammars,
`finish_reason: "length"`. Used by the `local` tests and `bench/real_server.py`.
"""

from __future__ import annotations

import socket
from pathlib import Path
from types import TracebackType
from typing import Any

from ..models import weights
from ..models._server_probe import PROBES
from ..models.local_backends import backend_problem


def unavailable() -> str | None:
    """Why the real llama.cpp server cannot run here (None: it can)."""
    problem = backend_problem("xllamacpp", import_it=True)
    if problem is not None:
        return problem
    if weights.local_model_path() is None:
        return f"the {weights.DEFAULT} weights are not pulled (python -m jianmu_like.models.weights pull)"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LlamaHTTPServer:
    """xllamacpp's `Server` listening on a free loopback port, serving the pulled weights of
    `name` (default `weights.DEFAULT`) as model `alias` with a `n_ctx`-token context."""

    def __init__(
        self,
        name: str | None = None,
        *,
        alias: str | None = None,
        n_ctx: int = 2048,
        n_threads: int = 1,
        seed: int = 0,
    ) -> None:
        spec = weights.spec_of(name)
        path = weights.local_model_path(spec.name)
        if path is None:
            raise RuntimeError(f"the {spec.name} weights are not pulled")
        self.model_path: Path = path
        self.alias = alias or spec.name
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.seed = seed
        self.port: int | None = None
        self._server: Any = None

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (`http://127.0.0.1:<port>/v1`)."""
        if self.port is None:
            raise RuntimeError("the llama.cpp server is not started")
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LlamaHTTPServer:
        import xllamacpp

        params = xllamacpp.CommonParams()
        params.model.path = str(self.model_path)
        params.model_alias = {self.alias}  # a set of names in the binding
        params.n_ctx = self.n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = self.n_threads
        params.cpuparams_batch.n_threads = self.n_threads
        params.sampling.seed = self.seed
        params.warmup = False
        params.use_jinja = True
        params.verbosity = -1
        self.port = _free_port()
        params.hostnames = ["127.0.0.1"]
        params.port = self.port
        self._server = xllamacpp.Server(params)
        PROBES.forget(self.base_url)
        return self

    def stop(self) -> None:
        self._server = None  # the destructor stops llama.cpp's loop and its HTTP thread

    def __enter__(self) -> LlamaHTTPServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
