"""`ScriptedOpenAIServer`: a real OpenAI-compatible HTTP server on localhost that plays a script.

Tests that go through the real SDK, HTTP, SSE parsing, timeouts and status codes catch what an
in-process fake cannot (wire shapes, error mapping, streamed fragments). The server runs in a
background thread (stdlib only) and serves requests concurrently, so several agents can share it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import socket
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from .._base.config import ResilienceConfig
from ..models._client import ModelClient
from ..models._server_probe import PROBES
from ._openai_rules import RequestRejected, check_chat_request, error_code, error_type
from ._script import Script, ScriptedReply, ScriptSource
from ._scripted import fast_resilience
from ._waiting import PATIENCE


def _error_body(
    status: int, message: str, *, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    """OpenAI's error body (`message`, `type`, `param`, `code`), which the SDK turns into the
    exception's message; `code` defaults to what the API sends for `status`."""
    return {
        "error": {
            "message": message,
            "type": error_type(status),
            "param": param,
            "code": code if code is not None else error_code(status),
        }
    }


def _choices(body: Mapping[str, Any]) -> int:
    """How many choices the request asks for (`n`; the scripted reply is each of them)."""
    n = body.get("n")
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 1 else 1


def _fragments(text: str, parts: int = 3) -> list[str]:
    """`text` cut into up to `parts` pieces, so clients must concatenate argument fragments."""
    if not text:
        return []
    size = max(1, math.ceil(len(text) / parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


_BROKEN_BODIES: dict[str, tuple[str, bytes]] = {
    "malformed_json": ("application/json", b'{"id": "chatcmpl-1", "choices": [{"index": 0, "mess'),
    "html": ("text/html", b"<html><body><h1>502 Bad Gateway</h1></body></html>"),
    "no_choices": ("application/json", b'{"id": "chatcmpl-1", "object": "chat.completion"}'),
}
"""Bodies of the `fault` replies answered with a 200 that is not a chat completion."""


def _has_field(body: Mapping[str, Any], field: str) -> bool:
    """Whether `body` has `field`: a top-level key, or `messages[].<key>` on any message."""
    if field.startswith("messages[]."):
        key = field.removeprefix("messages[].")
        return any(isinstance(m, dict) and key in m for m in body.get("messages") or ())
    return field in body


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True  # a handler stuck on a slow client must not block interpreter exit
    request_queue_size = 1024  # listen backlog: the default 5 overflows when thousands connect at once

    def __init__(self, owner: ScriptedOpenAIServer, port: int = 0) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", port), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: clients that time out and disconnect are expected in tests."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 60  # idle keep-alive connections eventually release their thread
    disable_nagle_algorithm = True  # headers and body go out in separate writes: without this,
    # Nagle's algorithm and the client's delayed ACK add ~40 ms to every response
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: no request logging to stderr."""

    def _read_body(self) -> bytes:
        """The whole request body: read on every route, so the next request on a keep-alive
        connection starts where this one ended."""
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def do_GET(self) -> None:
        self._read_body()
        if urlsplit(self.path).path.rstrip("/") == "/v1/models":
            self._send_json(200, self.server.owner.models_listing())
        elif urlsplit(self.path).path.rstrip("/") == "/props" and self.server.owner.props is not None:
            self._send_json(200, self.server.owner.props)
        else:
            self._send_json(404, _error_body(404, f"Invalid URL (GET {self.path})", code=None))

    def do_POST(self) -> None:
        owner = self.server.owner
        data = self._read_body()
        if urlsplit(self.path).path.rstrip("/") != "/v1/chat/completions":
            self._send_json(404, _error_body(404, f"Invalid URL (POST {self.path})", code=None))
            return
        try:
            body = json.loads(data or b"null")
        except ValueError as exc:
            self._send_json(400, _error_body(400, f"We could not parse the JSON body of your request: {exc}"))
            return
        if not isinstance(body, dict):
            self._send_json(400, _error_body(400, "We could not parse the JSON body of your request."))
            return
        owner.record(body)
        if not owner.lenient:
            try:
                check_chat_request(body)
            except RequestRejected as exc:
                owner.rejected.append(exc.message)
                self._send_json(400, _error_body(400, exc.message, param=exc.param, code=exc.code))
                return
        rejected = [field for field in owner.reject_fields if _has_field(body, field)]
        if rejected:  # like a server without function calling / JSON mode
            message = f"unsupported parameter: {rejected[0]!r} is not supported by this model"
            self._send_json(400, _error_body(400, message))
            return
        try:
            reply = owner.script.next_reply(body.get("model"), body)
        except Exception as exc:  # a broken responder must fail the test, not the server
            message = f"scripted responder raised {type(exc).__name__}: {exc}"
            self._send_json(500, _error_body(500, message))
            return
        if reply.delay and owner.stopping.wait(reply.delay):
            self.close_connection = True  # shutting down: drop the request unanswered
            return
        if reply.error_status is not None:
            headers = {"Retry-After": reply.retry_after} if reply.retry_after is not None else {}
            self._send_json(reply.error_status, _error_body(reply.error_status, reply.error_message), headers)
        elif reply.fault in _BROKEN_BODIES:
            self._send_raw(200, *_BROKEN_BODIES[reply.fault])
        elif owner.honours_format and (unfaithful := owner.unfaithful(body, reply)) is not None:
            # A real server constrains decoding to the requested format: a scripted reply that
            # breaks it is a test that would pass here and fail against any real server.
            self._send_json(500, _error_body(500, f"scripted server: {unfaithful}"))
        elif body.get("stream"):
            options = body.get("stream_options") or {}
            chunks = owner.chunks(body, reply, bool(options.get("include_usage")))
            self._send_stream(chunks, cut=reply.fault)
        else:
            self._send_json(200, owner.completion(body, reply))

    def _send_json(
        self, status: int, payload: Mapping[str, Any], headers: Mapping[str, str] | None = None
    ) -> None:
        self._send_raw(status, "application/json", json.dumps(payload).encode(), headers)

    def _send_raw(
        self, status: int, content_type: str, data: bytes, headers: Mapping[str, str] | None = None
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.close_connection = True

    def _send_stream(self, chunks: Iterator[dict[str, Any]], *, cut: str | None = None) -> None:
        """Stream `chunks` as SSE; `cut` ("truncated_stream" | "dropped_stream") stops before the
        finish reason: a clean early end of the body, or a dropped connection."""
        truncated = cut in ("truncated_stream", "dropped_stream")
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for chunk in chunks:
                if truncated and chunk["choices"] and chunk["choices"][0]["finish_reason"] is not None:
                    if cut == "dropped_stream":  # the connection dies mid-body: no terminating chunk
                        self.wfile.flush()
                        self.connection.shutdown(socket.SHUT_RDWR)
                        self.close_connection = True
                        return
                    break  # cut off: no finish reason, no usage, no [DONE]
                self._write_chunk(f"data: {json.dumps(chunk)}\n\n".encode())
            else:
                self._write_chunk(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))


class ScriptedOpenAIServer:
    """Serves `POST /v1/chat/completions` (JSON or SSE) and `GET /v1/models` from a script.

    Use it as `with ScriptedOpenAIServer([...]) as srv:` (or `async with`, which also closes the
    clients made by `srv.client()`). Request bodies are recorded in `requests`. Stopping wakes
    requests sleeping on a scripted `delay`, so a timeout test cannot hang shutdown.
    `reject_fields` (e.g. `("tools",)`, `("response_format",)`, `("messages[].name",)`) are
    request fields answered with HTTP 400 without consuming a reply, like a server that lacks the
    feature (or a provider that refuses the field, see `models._named_providers`). `props` makes it
    describe itself as llama.cpp does (`GET /props`, see `llama_cpp_props`).

    Every request is checked as OpenAI's API checks it (`testing._openai_rules`: message order
    and pairing, tool-call ids, roles, tool names, `n`, `response_format`) and refused with a 400
    and OpenAI's error body; a scripted text reply to a `json_object`/`json_schema` request must
    be JSON (valid against the schema), as a real server's constrained decoding makes it. The
    refusals are kept in `rejected`. `lenient=True` turns both checks off, for a test that needs
    to send what the API refuses; `ignores_response_format=True` keeps the request checks but
    plays a server that ignores `response_format` (as some OpenAI-compatible servers do: it
    answers prose in JSON mode), for tests of how the framework copes with one.
    """

    def __init__(
        self,
        script: ScriptSource = (),
        *,
        fail_models: Mapping[str, int] | None = None,
        models: Sequence[str] = ("scripted-model",),
        reject_fields: Sequence[str] = (),
        props: Mapping[str, Any] | None = None,
        lenient: bool = False,
        ignores_response_format: bool = False,
        port: int = 0,
    ) -> None:
        self.port = port
        """The port to bind on 127.0.0.1 (0: a free one; `base_url` says which)."""
        self.reject_fields = tuple(reject_fields)
        self.props = props
        """Served at `GET /props` (llama.cpp's server description, see `llama_cpp_props`);
        None: 404, like any other server."""
        self.lenient = lenient
        self.honours_format = not (lenient or ignores_response_format)
        self.rejected: list[str] = []
        """Messages of the requests refused as OpenAI would refuse them, oldest first."""
        if fail_models and isinstance(script, Script):
            raise TypeError("pass fail_models to Script(...) when giving a Script")
        self.script = script if isinstance(script, Script) else Script(script, fail_models=fail_models)
        self.models = list(models)
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._call_ids = itertools.count(1)
        self._clients: list[ModelClient] = []
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._base_url: str | None = None

    # lifecycle

    def start(self) -> ScriptedOpenAIServer:
        """Bind `port` (a free one by default) on 127.0.0.1 and serve in a daemon thread
        (idempotent)."""
        if self._httpd is None:
            self.stopping.clear()
            self._httpd = _HTTPServer(self, self.port)
            self._base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
            PROBES.forget(self._base_url)  # an earlier server on this port is not this one
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="scripted-openai-server",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and wake delayed requests; safe to call twice."""
        httpd, self._httpd = self._httpd, None
        self.stopping.set()
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> ScriptedOpenAIServer:
        return self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        clients, self._clients = self._clients, []
        for client in clients:
            await client.aclose()
        await asyncio.to_thread(self.stop)

    # client side

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>/v1`, the value for `OPENAI_BASE_URL` (kept after stopping,
        for assertions on error messages)."""
        if self._base_url is None:
            raise RuntimeError("ScriptedOpenAIServer is not running: use `with` or call start()")
        return self._base_url

    def client(
        self,
        *,
        model: str = "scripted-model",
        timeout: float = PATIENCE,
        resilience: ResilienceConfig | None = None,
        api_key: str = "test-key",
        **resilience_fields: Any,
    ) -> ModelClient:
        """A `ModelClient` over the real OpenAI SDK pointed at this server. Without `resilience`,
        the policy has zero backoff, with `resilience_fields` (e.g. `fallback_models=[...]`,
        `max_retries=1`) applied."""
        from ..models._openai_provider import OpenAIProvider  # deferred: importing openai is slow

        if resilience is not None and resilience_fields:
            raise TypeError("pass either resilience or resilience fields, not both")
        policy = resilience if resilience is not None else fast_resilience(**resilience_fields)
        client = ModelClient(
            OpenAIProvider(self.base_url, api_key, timeout=timeout), model=model, resilience=policy
        )
        self._clients.append(client)
        return client

    # recording

    def record(self, body: dict[str, Any]) -> None:
        with self._lock:
            self._requests.append(body)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies received so far, oldest first (a snapshot)."""
        with self._lock:
            return list(self._requests)

    @property
    def request_models(self) -> list[str | None]:
        """The `model` of each request received so far."""
        return [body.get("model") for body in self.requests]

    # wire shapes

    def models_listing(self) -> dict[str, Any]:
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "jianmu"} for m in self.models]
        return {"object": "list", "data": data}

    @staticmethod
    def unfaithful(body: Mapping[str, Any], reply: ScriptedReply) -> str | None:
        """Why `reply` could not come from a server honouring the request's `response_format`
        (None when it could: tool calls, a text format, or JSON that fits)."""
        fmt = body.get("response_format")
        if not isinstance(fmt, dict):
            return None
        kind = fmt.get("type")
        if kind not in ("json_object", "json_schema") or reply.tool_calls or reply.content is None:
            return None
        if reply.fault or reply.error_status is not None:
            return None
        try:
            value = json.loads(reply.content)
        except ValueError:
            return f"the scripted reply is not JSON, but the request asked for response_format {kind}"
        schema = (fmt.get("json_schema") or {}).get("schema") if kind == "json_schema" else None
        if kind == "json_object" and not isinstance(value, dict):
            return "the scripted reply is JSON but not an object, as response_format json_object requires"
        if isinstance(schema, dict):
            from .._base.json_schema import compile_schema, problems

            try:
                found = problems(compile_schema(schema, known_keywords=False), value)
            except ValueError as exc:  # the request's schema itself is refused
                return f"the request's response_format schema is invalid: {exc}"
            if found:
                where, what = found[0]
                place = where or "value"
                return f"the scripted reply does not match the response_format schema: {place} {what}"
        return None

    def _tool_calls(self, reply: ScriptedReply) -> list[tuple[str, str, str]]:
        return [
            (tc.id or f"call_{next(self._call_ids)}", tc.name, tc.arguments_text) for tc in reply.tool_calls
        ]

    @staticmethod
    def _usage(reply: ScriptedReply) -> dict[str, int] | None:
        if reply.fault == "no_usage":
            return None
        usage = reply.effective_usage
        wire = {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens}
        if reply.fault != "no_total":
            wire["total_tokens"] = usage.total_tokens
        return wire

    def completion(self, body: Mapping[str, Any], reply: ScriptedReply) -> dict[str, Any]:
        """A non-streaming `chat.completion` object for `reply`."""
        message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None}
        if reply.reasoning_content is not None:
            message[reply.reasoning_field] = reply.reasoning_content
        tool_calls = self._tool_calls(reply)
        if tool_calls:
            message["tool_calls"] = [
                {"id": id_, "type": "function", "function": {"name": name, "arguments": args}}
                for id_, name, args in tool_calls
            ]
        return {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [
                {
                    "index": index,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": reply.effective_finish_reason,
                }
                for index in range(_choices(body))
            ],
            "usage": self._usage(reply),
            "system_fingerprint": None,
        }

    def chunks(
        self, body: Mapping[str, Any], reply: ScriptedReply, include_usage: bool
    ) -> Iterator[dict[str, Any]]:
        """The `chat.completion.chunk` objects streaming `reply`: reasoning then content word by
        word, each tool call as an opening delta then argument fragments, the finish reason,
        then usage."""
        base: dict[str, Any] = {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model"),
            "system_fingerprint": None,
        }
        if include_usage:
            base["usage"] = None

        count = _choices(body)

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            choices = [
                {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
                for index in range(count)
            ]
            return {**base, "choices": choices}

        yield chunk({"role": "assistant", "content": "" if reply.content is not None else None})
        for piece in reply.reasoning_pieces:
            yield chunk({reply.reasoning_field: piece})
        for piece in reply.content_pieces:
            yield chunk({"content": piece})
        for index, (id_, name, args) in enumerate(self._tool_calls(reply)):
            opening = {"index": index, "id": id_, "type": "function"}
            yield chunk({"tool_calls": [{**opening, "function": {"name": name, "arguments": ""}}]})
            for fragment in _fragments(args):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
        yield chunk({}, reply.effective_finish_reason)
        usage = self._usage(reply)
        if include_usage and usage is not None:
            yield {**base, "choices": [], "usage": usage}


def llama_cpp_props(*, supports_tools: bool = False, n_ctx: int = 2048, alias: str = "-") -> dict[str, Any]:
    """The parts of llama.cpp's `GET /props` the server probe reads (`models._server_probe`)."""
    return {
        "default_generation_settings": {"n_ctx": n_ctx, "params": {}},
        "model_alias": alias,
        "chat_template_caps": {"supports_tools": supports_tools, "supports_tool_calls": supports_tools},
    }
