"""The pieces a context guard compacts a prompt with: turns that must stay together, pinned
messages, cut tool results, the transcript a summary is written from.

Pure functions over messages, so the rules (an assistant tool-call message never leaves or
stays without its tool results; system and pinned messages always stay) are checked in one place.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..models._messages import Message
from ..models._usage import CHARS_PER_TOKEN

INTERRUPT_PREFIX = "[USER INTERRUPT]"
"""Starts the user message that carries follow-ups injected into a run (`Agent.inject`)."""

SUMMARY_PREFIX = "[CONVERSATION SUMMARY]"
"""Starts the message that stands for summarised earlier turns."""


def is_pinned(message: Message) -> bool:
    """Messages a compaction never removes: system messages and injected user interrupts."""
    return message.role == "system" or (
        message.role == "user" and (message.content or "").startswith(INTERRUPT_PREFIX)
    )


def turn_units(messages: Sequence[Message]) -> list[tuple[int, int]]:
    """`messages` as `(start, end)` slices that stay together: an assistant message with tool
    calls and the tool messages that follow it form one unit; any other message is its own."""
    units: list[tuple[int, int]] = []
    index, count = 0, len(messages)
    while index < count:
        end = index + 1
        if messages[index].tool_calls:
            while end < count and messages[end].role == "tool":
                end += 1
        units.append((index, end))
        index = end
    return units


def cut_text(text: str, max_chars: int, why: str) -> str:
    """`text` shortened to about `max_chars`, with a note saying how much was cut and why."""
    if len(text) <= max_chars:
        return text
    keep = max(max_chars, 0)
    return f"{text[:keep]}\n[... {len(text) - keep} more characters cut: {why}]"


def cut_tool_result(message: Message, max_tokens: int) -> Message:
    """A tool message whose content is cut to about `max_tokens` (the same message if shorter)."""
    content = message.content or ""
    max_chars = max_tokens * CHARS_PER_TOKEN
    if len(content) <= max_chars:
        return message
    cut = cut_text(content, max_chars, "the context window is full")
    return message.model_copy(update={"content": cut})


def transcript(messages: Sequence[Message], max_chars: int, per_message: int = 2000) -> str:
    """The messages as plain text for a summary request, each cut to `per_message` characters
    and the whole to its last `max_chars` (the oldest part goes first)."""
    lines: list[str] = []
    for message in messages:
        text = message.content or ""
        if message.tool_calls:
            calls = ", ".join(f"{c.name}({c.arguments_json})" for c in message.tool_calls)
            text = f"{text}\n[calls {calls}]".strip()
        lines.append(f"{message.role}: {cut_text(text, per_message, 'too long')}")
    whole = "\n\n".join(lines)
    if len(whole) > max_chars:
        whole = "[... earlier part cut]\n" + whole[len(whole) - max(max_chars, 0) :]
    return whole
