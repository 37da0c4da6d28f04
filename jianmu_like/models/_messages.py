"""Chat messages and tool calls: the one data shape every node, client and tool shares.

Messages are frozen pydantic models so a message appended to the history can be shared by
reference (snapshots, prompts, telemetry) without defensive copies; their OpenAI wire form is
computed once and cached, which keeps prompt assembly cheap as the history grows.
"""

from __future__ import annotations

import json
from functools import cached_property
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from ._json_text import MAX_ARGUMENTS_CHARS, JSONTextError, kept_arguments, loads_arguments, value_problem

Role = Literal["system", "user", "assistant", "tool"]


class _Derived(BaseModel):
    """A frozen model caching values derived from its fields (`cached_property`, kept in the
    instance's `__dict__`): a copy — `model_copy(update=...)` in particular — must not carry
    them over, or it would serve the values of the fields it replaced."""

    _derived: ClassVar[tuple[str, ...]] = ()

    def __copy__(self) -> Self:
        copied = super().__copy__()
        for name in self._derived:
            copied.__dict__.pop(name, None)
        return copied

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        copied = super().__deepcopy__(memo)
        for name in self._derived:
            copied.__dict__.pop(name, None)
        return copied


class ToolCall(_Derived):
    """One tool invocation requested by the model.

    `arguments` holds the decoded JSON object. When the model sent arguments that are not a
    JSON object, `arguments` is empty, `raw_arguments` keeps the exact text and
    `arguments_error` says what is wrong, so the executor can report it back to the model
    instead of crashing or silently calling the tool with nothing.
    """

    model_config = ConfigDict(frozen=True)
    _derived = ("arguments_json",)

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str | None = None
    arguments_error: str | None = None

    @classmethod
    def from_raw(cls, id: str, name: str, raw_arguments: str | dict[str, Any] | None) -> ToolCall:
        """Decode the model's argument text, keeping a precise error when it is not valid.

        Whatever the model sent — invalid JSON, a value that is not an object, nesting deeper
        than `json_text.MAX_DEPTH`, a 5,000-digit integer, megabytes of text — the result is a
        call (with `arguments_error` set) the executor reports back, never an exception; the
        text of unreadable arguments is kept only up to `json_text.KEPT_INVALID_CHARS`.
        """
        if isinstance(raw_arguments, dict):
            problem = value_problem(raw_arguments, max_chars=MAX_ARGUMENTS_CHARS)
            if problem is None:
                return cls(id=id, name=name, arguments=raw_arguments)
            return cls(id=id, name=name, arguments_error=f"arguments are not usable: {problem}")
        text = (raw_arguments or "").strip()
        if not text:
            return cls(id=id, name=name, arguments={}, raw_arguments=raw_arguments)
        try:
            decoded = loads_arguments(text)
        except JSONTextError as exc:
            return cls(
                id=id, name=name, raw_arguments=kept_arguments(raw_arguments or ""), arguments_error=str(exc)
            )
        if not isinstance(decoded, dict):
            return cls(
                id=id,
                name=name,
                raw_arguments=raw_arguments,
                arguments_error=f"arguments must be a JSON object, got {type(decoded).__name__}",
            )
        return cls(id=id, name=name, arguments=decoded, raw_arguments=raw_arguments)

    @cached_property
    def arguments_json(self) -> str:
        """The arguments as the model sent them (or re-encoded, once, when built from a dict)."""
        if self.raw_arguments is not None:
            return self.raw_arguments
        return json.dumps(self.arguments, ensure_ascii=False)

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments_json},
        }


class Message(_Derived):
    """A chat message in OpenAI's shape (system, user, assistant with tool calls, tool)."""

    model_config = ConfigDict(frozen=True)
    _derived = ("_wire",)

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    reasoning_content: str | None = None
    """The model's reasoning where a provider returns it (or a text-protocol `Thought:`); kept
    for the record, never sent back (some servers reject it in a request)."""
    id: str | None = None
    """Your own identifier, for the `add_messages` reducer (a message with a known id replaces
    the one before it); never sent to a model."""

    @cached_property
    def _wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [tc.to_openai() for tc in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None and self.role != "tool":
            out["name"] = self.name
        return out

    def to_openai(self) -> dict[str, Any]:
        """The message as the OpenAI chat-completions API expects it (cached, do not mutate)."""
        return self._wire


def human(content: str) -> Message:
    """A user message."""
    return Message(role="user", content=content)


def ai(content: str | None = None, tool_calls: list[ToolCall] | None = None) -> Message:
    """An assistant message, optionally carrying tool calls."""
    return Message(role="assistant", content=content, tool_calls=tool_calls or None)


def system(content: str) -> Message:
    """A system message."""
    return Message(role="system", content=content)


def tool_message(content: str, tool_call_id: str, name: str | None = None) -> Message:
    """The observation for one tool call, paired with it by `tool_call_id`."""
    return Message(role="tool", content=content, tool_call_id=tool_call_id, name=name)
