"""Scripts: what a fake model answers, shared by the HTTP test server and the in-process provider.

A test states the model's side of the conversation up front (texts, tool calls, errors, delays)
and the fake backends play it back, so agent behaviour is deterministic and assertions can be
exact. Replies are frozen and precompute their derived forms once, which keeps the in-process
provider cheap enough for overhead benchmarks.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from functools import cached_property
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from ..models._messages import Message, ToolCall
from ..models._types import Usage

DEFAULT_USAGE = Usage(prompt_tokens=10, completion_tokens=5, total_tokens=15, calls=1)
"""Usage reported for a reply that sets none, so token-budget tests have fixed numbers."""

_WORDS = re.compile(r"\s*\S+\s*|\s+")

Fault: TypeAlias = Literal[
    "malformed_json", "html", "no_choices", "truncated_stream", "dropped_stream", "no_usage", "no_total"
]
"""A broken answer: a 200 whose body is malformed JSON, an HTML page or JSON without `choices`; a
stream that ends cleanly but early, before its finish reason and `[DONE]` (`truncated_stream`); a
stream whose connection drops after the content, mid-body, without a finish reason
(`dropped_stream`: the HTTP body is never terminated, as when a proxy or the server dies); usage
missing, or without `total_tokens`."""


class ScriptedToolCall(BaseModel):
    """A tool call the fake model makes. String arguments are sent verbatim (to test malformed
    JSON); a dict is JSON-encoded. Without `id` the backend assigns `call_<n>`."""

    model_config = ConfigDict(frozen=True)

    name: str
    arguments: str | dict[str, Any] = Field(default_factory=dict)
    id: str | None = None

    @cached_property
    def arguments_text(self) -> str:
        """The arguments exactly as they go on the wire."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False)


class ScriptedReply(BaseModel):
    """One answer of the fake model: content and/or tool calls, or an HTTP error.

    `usage=None` reports `DEFAULT_USAGE`; `error_status` makes the backend fail with that status
    and `error_message`; `delay` seconds pass before the answer (for timeout tests);
    `finish_reason` defaults to "tool_calls" when there are tool calls, else "stop";
    `retry_after` is sent as the `Retry-After` header of an error reply; `fault` breaks the answer
    (see `Fault`); `reasoning_content` is the model's reasoning, as some servers return it.
    """

    model_config = ConfigDict(frozen=True)

    content: str | None = None
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    usage: Usage | None = None
    error_status: int | None = None
    error_message: str = "scripted error"
    delay: float = Field(default=0.0, ge=0.0)
    finish_reason: str | None = None
    retry_after: str | None = None
    fault: Fault | None = None
    reasoning_content: str | None = None
    """Sent as the message's non-standard `reasoning_content` (non-streaming answers)."""

    @cached_property
    def effective_usage(self) -> Usage:
        """The usage reported; counts as one call even when the scripted usage says 0 calls."""
        usage = self.usage
        if usage is None:
            return DEFAULT_USAGE
        return usage if usage.calls else usage.model_copy(update={"calls": 1})

    @cached_property
    def effective_finish_reason(self) -> str:
        if self.finish_reason is not None:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"

    @cached_property
    def content_pieces(self) -> tuple[str, ...]:
        """The content split into word-sized deltas for streaming (joined, they are `content`)."""
        if not self.content:
            return ()
        return tuple(_WORDS.findall(self.content))

    @cached_property
    def message_template(self) -> Message:
        """The assistant message this reply amounts to; tool calls without a scripted id carry
        an empty id the backend replaces per answer."""
        tool_calls = [ToolCall.from_raw(tc.id or "", tc.name, tc.arguments_text) for tc in self.tool_calls]
        return Message(role="assistant", content=self.content, tool_calls=tool_calls or None)


ScriptItem: TypeAlias = ScriptedReply | ScriptedToolCall | str
"""A reply, or shorthand for one: a string is a text reply, a tool call a one-call reply."""

Responder: TypeAlias = Callable[[dict[str, Any]], ScriptItem]
"""Chooses the reply from the request body (OpenAI JSON shape): for tests where concurrent
agents share one backend and the order of requests is not deterministic."""


def reply(content: str | None = None, **fields: Any) -> ScriptedReply:
    """A text reply; `fields` are other `ScriptedReply` fields (usage, delay...)."""
    return ScriptedReply(content=content, **fields)


def call(name: str, /, **arguments: Any) -> ScriptedToolCall:
    """A tool call with keyword arguments as its JSON arguments."""
    return ScriptedToolCall(name=name, arguments=arguments)


def calls(*tool_calls: ScriptedToolCall, content: str | None = None, **fields: Any) -> ScriptedReply:
    """A reply making several (parallel) tool calls."""
    return ScriptedReply(content=content, tool_calls=list(tool_calls), **fields)


def error_reply(status: int, message: str = "scripted error", **fields: Any) -> ScriptedReply:
    """A reply that fails with HTTP `status`."""
    return ScriptedReply(error_status=status, error_message=message, **fields)


def fault_reply(fault: Fault, content: str | None = "partial answer", **fields: Any) -> ScriptedReply:
    """A reply broken in the way `fault` names (HTTP-server only)."""
    return ScriptedReply(content=content, fault=fault, **fields)


def as_reply(item: ScriptItem) -> ScriptedReply:
    """Expand the shorthand forms of `ScriptItem`."""
    if isinstance(item, ScriptedReply):
        return item
    if isinstance(item, ScriptedToolCall):
        return ScriptedReply(tool_calls=[item])
    if isinstance(item, str):
        return ScriptedReply(content=item)
    raise TypeError(f"not a scripted reply: {item!r}")


BodySource: TypeAlias = Mapping[str, Any] | Callable[[], dict[str, Any]]


class Script:
    """Hands out replies: a list consumed in order, or a responder asked per request.

    `fail_models` maps a model name to an HTTP status returned on every request for it (a dead
    primary) without consuming a reply. Once a list is used up, every further request gets an
    HTTP 500 saying so, which makes a test that needs more replies fail with a clear message.
    Thread-safe: the HTTP server serves requests from several threads.
    """

    def __init__(
        self,
        replies: Iterable[ScriptItem] | Responder = (),
        *,
        fail_models: Mapping[str, int] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._responder: Responder | None = None
        self._queue: deque[ScriptedReply] = deque()
        if callable(replies):
            self._responder = replies
        else:
            self._queue.extend(as_reply(item) for item in replies)
        self.fail_models: dict[str, int] = dict(fail_models or {})
        self._failures = {
            model: error_reply(status, f"scripted failure: model {model!r} is unavailable")
            for model, status in self.fail_models.items()
        }
        self.served = 0
        """Replies handed out so far (failures for `fail_models` not counted)."""

    @classmethod
    def of(cls, source: ScriptSource) -> Script:
        """Accept a `Script`, a list of replies or a responder."""
        return source if isinstance(source, Script) else cls(source)

    @property
    def uses_responder(self) -> bool:
        """Whether replies depend on the request (then callers must supply its body)."""
        return self._responder is not None

    @property
    def remaining(self) -> int | None:
        """Replies left in a list script (None for a responder)."""
        return None if self._responder is not None else len(self._queue)

    def next_reply(self, model: str | None, body: BodySource | None = None) -> ScriptedReply:
        """The reply to a request for `model`; `body` (or a function building it) is only used
        by responders, so in-process callers can skip building it."""
        if self._failures and model in self._failures:
            return self._failures[model]
        responder = self._responder
        if responder is not None:
            data = body() if callable(body) else dict(body or {})
            reply_ = as_reply(responder(data))
            with self._lock:
                self.served += 1
            return reply_
        with self._lock:
            if self._queue:
                self.served += 1
                return self._queue.popleft()
            served = self.served
        return error_reply(500, f"scripted server: script exhausted after {served} requests")


ScriptSource: TypeAlias = Script | Iterable[ScriptItem] | Responder
"""What the fake backends accept as their script."""
