"""The run's reasoning as the chat completions API carries it (`/v1/chat/completions`).

Reasoning servers (llama.cpp, DeepSeek, vLLM's reasoning parsers) send it beside the answer as
`reasoning_content`: on each streamed chunk's `delta`, and on the whole reply's `message`. The
served agent does the same with its own run: every model call's reasoning, in order, calls
separated by a blank line — streamed as it arrives (the run's `reasoning` channel), or whole when
a model call was not streamed (its `step` thinking `done`). Chat front-ends (Open WebUI,
LibreChat) show it as the model's thinking, apart from the answer.

Both answers read the same channel messages through one `ChatReasoning`, so the whole reply's
`reasoning_content` is what a stream sent — except for an attempt cut off mid-stream and
retried: the run withdraws its reasoning (`reset`), which a chat-completions stream cannot take
back; the whole reply leaves it out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SEPARATOR = "\n\n"
"""Between the reasoning of two model calls."""


class ChatReasoning:
    """The reasoning of one run, read from its channel messages (`take`), kept per model call."""

    def __init__(self) -> None:
        self._calls: dict[int, str] = {}
        """The reasoning of each model call (by the channels' `iteration`), separator included."""

    def take(self, channel: str, data: Mapping[str, Any]) -> str:
        """The reasoning text one channel message adds, to stream now ("" when none)."""
        if channel == "reasoning":
            iteration = _iteration(data)
            if data.get("status") == "reset":
                self._calls.pop(iteration, None)  # void: the retry streams its own
                return ""
            return self._add(iteration, data.get("content"))
        if channel == "step" and data.get("type") == "thinking" and data.get("status") == "done":
            iteration = _iteration(data)
            if iteration not in self._calls:  # not streamed: the call's reasoning arrives whole
                return self._add(iteration, data.get("reasoning_content"))
        return ""

    @property
    def whole(self) -> str | None:
        """All of the run's reasoning (None when the model sent none)."""
        text = "".join(self._calls[n] for n in sorted(self._calls))
        return text or None

    def _add(self, iteration: int, piece: object) -> str:
        if not isinstance(piece, str) or not piece:
            return ""
        if iteration not in self._calls and any(self._calls.values()):
            piece = SEPARATOR + piece
        self._calls[iteration] = self._calls.get(iteration, "") + piece
        return piece


def _iteration(data: Mapping[str, Any]) -> int:
    value = data.get("iteration")
    return value if isinstance(value, int) else 0
