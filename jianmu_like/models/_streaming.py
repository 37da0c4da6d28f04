"""Reassembling a streamed chat completion into one assistant message.

Streaming APIs send the answer in pieces: content deltas, and tool calls split into an
opening delta (index, id, name) followed by argument fragments that only make sense once
concatenated. The merge is kept here, pure and free of SDK types, so every quirk it tolerates
is unit-tested without a server.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ._messages import Message, ToolCall
from ._types import Usage


@dataclass(slots=True)
class _PartialToolCall:
    index: int | None
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class StreamAccumulator:
    """Collects the deltas of one streamed choice and builds the final `Message`.

    Tool-call deltas are merged by `index`: the id is taken from the first delta that carries
    one, argument fragments are concatenated in arrival order, and the name is concatenated
    too, except that a delta repeating the full name again (some OpenAI-compatible servers
    resend id and name on every delta) is not appended twice. A delta naming a different id
    at an index already holding one starts a new call, which keeps servers that reuse index 0
    for parallel calls working; a delta without an index continues the latest call unless it
    brings a new id.
    """

    __slots__ = ("_by_index", "_calls", "_content", "_reasoning", "finish_reason", "saw_choice", "usage")

    def __init__(self) -> None:
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[_PartialToolCall] = []
        self._by_index: dict[int, _PartialToolCall] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.saw_choice = False
        """Whether any choice arrived at all; a stream without one is an error, not an empty answer."""

    def add_content(self, text: str) -> None:
        """Append one content delta."""
        self._content.append(text)

    def add_reasoning(self, text: str) -> None:
        """Append one `reasoning_content` delta (servers with a reasoning parser send them)."""
        self._reasoning.append(text)

    def add_tool_call(
        self,
        index: int | None,
        id: str | None = None,
        name: str | None = None,
        arguments: str | None = None,
    ) -> None:
        """Merge one tool-call delta into the call it continues (or open a new one)."""
        call = self._find(index, id)
        if call is None:
            call = _PartialToolCall(index=index)
            self._calls.append(call)
            if index is not None:
                self._by_index[index] = call
        if id and not call.id:
            call.id = id
        if name and name != call.name:
            call.name += name
        if arguments:
            call.arguments.append(arguments)

    def _find(self, index: int | None, id: str | None) -> _PartialToolCall | None:
        if index is None:
            if not self._calls:
                return None
            last = self._calls[-1]
            return None if id and last.id and id != last.id else last
        call = self._by_index.get(index)
        if call is not None and id and call.id and id != call.id:
            return None
        return call

    @property
    def content(self) -> str | None:
        """The concatenated content, or None when the stream carried no text at all."""
        return "".join(self._content) if self._content else None

    def tool_calls(self) -> list[ToolCall]:
        """The merged calls in order of first appearance; a missing id becomes `call_<n>`."""
        return [
            ToolCall.from_raw(call.id or f"call_{n}", call.name, "".join(call.arguments))
            for n, call in enumerate(self._calls)
        ]

    def message(self) -> Message:
        """The assistant message the stream amounts to."""
        tool_calls = self.tool_calls()
        reasoning = "".join(self._reasoning) if self._reasoning else None
        return Message(
            role="assistant", content=self.content, tool_calls=tool_calls or None, reasoning_content=reasoning
        )
