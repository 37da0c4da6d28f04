"""`LlamaCppProvider`: a `ChatProvider` running a small GGUF model in-process with llama.cpp.

The binding is a `LocalBackend` (`local_backends`): xllamacpp by default, llama-cpp-python
when selected (`backend="llama_cpp_python"`, or `models.local_backend` in the configuration).

Small local models have no native function calling, so tools go through the JSON/text
protocol (`text_protocol`): the tools and the reply format are rendered into the prompt and
every reply is sampled under a grammar that admits only `{"tool": ..., "arguments": ...}` for
an offered tool or `{"answer": ...}`. The model is loaded lazily and runs one generation at a
time on the provider's own worker thread: the event loop never blocks on it, and waiting calls
queue there instead of holding threads of the loop's default executor.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from ..errors import JianmuError
from . import weights
from ._errors import ModelError
from ._messages import Message
from ._provider import DeltaCallback
from ._text_protocol import WorkedExample, parse_reply, reply_schema, to_chat_messages, tool_functions
from ._tool_protocol import replied_finish
from ._types import ModelRequest, ModelResponse, Usage
from .local_backends import (
    DEFAULT_BACKEND,
    LOCAL_OPTIONS,
    GenerationStopped,
    LocalBackend,
    SamplingParams,
    backend_problem,
    create_backend,
)

T = TypeVar("T")

DEFAULT_MAX_TOKENS = 256
"""Reply length cap when the request sets none: a tool call or a short answer fits easily."""


class LlamaCppProvider:
    """An in-process model behind the `ChatProvider` protocol.

    `system_role=False` folds the system prompt into the first user turn, for chat templates
    without a system role (Gemma's). `examples` replace the built-in worked examples shown in
    the prompt (each is shown only when its tool is offered). `backend` is a backend name
    (`local_backends.BACKENDS`) or a `LocalBackend` instance (then the model options are its
    own). `request.timeout` bounds each
    generation (checked per token); a generation that runs out of time or whose caller is
    cancelled is abandoned at the next token. Errors are non-retryable `ModelError`s: a
    deterministic local model would fail the same way again.
    """

    def __init__(
        self,
        model_path: str | Path,
        *,
        n_ctx: int = 2048,
        n_threads: int = 1,
        seed: int = 0,
        chat_format: str | None = None,
        system_role: bool = True,
        examples: Sequence[WorkedExample] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        backend: str | LocalBackend = DEFAULT_BACKEND,
    ) -> None:
        self.model_path = Path(model_path)
        self.base_url: str | None = f"local://{self.model_path.name}"
        self.system_role = system_role
        self.examples = examples
        self.max_tokens = max_tokens
        self.backend = (
            create_backend(
                backend, self.model_path, n_ctx=n_ctx, n_threads=n_threads, seed=seed, chat_format=chat_format
            )
            if isinstance(backend, str)
            else backend
        )
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama")
        self._ids = itertools.count(1)
        self.closed = False

    def __repr__(self) -> str:
        name, loaded = self.backend.name, self.backend.loaded
        return f"LlamaCppProvider({str(self.model_path)!r}, backend={name!r}, loaded={loaded})"

    def _new_id(self) -> str:
        return f"call_{next(self._ids)}"

    async def load(self) -> None:
        """Load the model now (otherwise the first `chat` does), off the event loop."""
        await self._run(self.backend.load)

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`fn` on the worker thread, after the calls queued before it (unless closed by then)."""

        def guarded() -> T:
            if self.closed:  # closed while this call was queued
                raise self._closed_error()
            return fn(*args, **kwargs)

        if self.closed:
            raise self._closed_error()
        return await asyncio.get_running_loop().run_in_executor(self._worker, guarded)

    def _closed_error(self) -> ModelError:
        return ModelError("the local model provider is closed", base_url=self.base_url)

    def _params(self, request: ModelRequest) -> SamplingParams:
        extra = tuple((k, v) for k, v in request.extra_params.items() if k in LOCAL_OPTIONS)
        return SamplingParams(
            temperature=request.temperature if request.temperature is not None else 0.0,
            max_tokens=request.max_tokens or self.max_tokens,
            top_p=request.top_p,
            top_k=request.top_k,
            extra=extra,
        )

    async def chat(
        self,
        request: ModelRequest,
        *,
        model: str,
        on_delta: DeltaCallback | None = None,
    ) -> ModelResponse:
        protocol = bool(tool_functions(request.tools))
        turns = to_chat_messages(
            request.messages,
            request.tools,
            system_role=self.system_role,
            examples=self.examples,
            persona=request.persona,
        )
        schema = reply_schema(request.tools, request.tool_choice) if protocol else None
        cancelled = threading.Event()
        timeout = request.timeout
        deadline = time.monotonic() + timeout if timeout else None

        def should_stop() -> bool:
            return cancelled.is_set() or (deadline is not None and time.monotonic() > deadline)

        try:
            generation = await self._run(
                self.backend.generate,
                turns,
                schema=schema,
                params=self._params(request),
                should_stop=should_stop,
            )
        except asyncio.CancelledError:
            cancelled.set()
            raise
        except GenerationStopped as exc:
            raise ModelError(
                f"local generation exceeded the {timeout:g}s timeout", model=model, base_url=self.base_url
            ) from exc
        except ModelError as exc:
            exc.base_url = exc.base_url or self.base_url
            raise
        if protocol:
            names = {function["name"] for function in tool_functions(request.tools)}
            message = parse_reply(generation.text, self._new_id, names)
        else:
            message = Message(role="assistant", content=generation.text.strip())
        if request.stream and on_delta is not None and message.content:
            on_delta(message.content)  # one delta: the answer is known only once the JSON is parsed
        prompt, completion = generation.prompt_tokens, generation.completion_tokens
        return ModelResponse(
            message=message,
            usage=Usage(
                prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion, calls=1
            ),
            model=model,
            finish_reason=replied_finish(generation.finish_reason, message),
        )

    async def aclose(self) -> None:
        """Free the model once the running generation ends; later calls fail with `ModelError`."""
        if self.closed:
            return
        self.closed = True
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._worker, self.backend.close)
        self._worker.shutdown(wait=False)


NO_LOCAL_MODEL_ENV = "JIANMU_NO_LOCAL_MODEL"
"""Set to 1 to keep `ModelClient.resolve()` from falling back to the embedded model."""


class LocalModelUnavailable(JianmuError):
    """The embedded model cannot be used here; the message says why."""


def embedded_model(
    name: str | None = None, *, backend: str = DEFAULT_BACKEND
) -> tuple[LlamaCppProvider, str]:
    """A provider for the pulled embedded model `name` (default `weights.DEFAULT`, a `local/`
    prefix allowed) on `backend`, and its client model name `local/<name>`;
    `LocalModelUnavailable` when it is disabled, the backend is not installed or the weights
    are not pulled (`ValueError` for an unknown backend). Nothing is loaded."""
    if os.environ.get(NO_LOCAL_MODEL_ENV, "").strip() not in ("", "0"):
        raise LocalModelUnavailable(f"disabled by {NO_LOCAL_MODEL_ENV}")
    problem = backend_problem(backend)
    if problem is not None:
        raise LocalModelUnavailable(problem)
    try:
        spec = weights.spec_of(name)
    except weights.WeightsError as exc:
        raise LocalModelUnavailable(str(exc)) from exc
    path = weights.local_model_path(spec.name)
    if path is None:
        raise LocalModelUnavailable(f"the {spec.name} weights are not pulled")
    provider = LlamaCppProvider(
        path, chat_format=spec.chat_format, system_role=spec.system_role, backend=backend
    )
    return provider, f"local/{spec.name}"
