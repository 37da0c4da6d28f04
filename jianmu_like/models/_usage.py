"""Token usage a budget can rely on, whatever the server reports.

Servers differ: most report prompt, completion and total tokens; some omit `total_tokens`;
some (older llama.cpp builds, proxies, streams without `include_usage`) report nothing. A token
budget that reads a 0 never binds, so the provider fills the gaps here: the total is the sum of
the parts when they are known, and without any report both parts are estimated from the text
at `CHARS_PER_TOKEN` characters per token (a common rule of thumb for English with BPE
tokenizers; it errs on the high side for code and on the low side for CJK text), marked
`estimated=True`.
"""

from __future__ import annotations

from collections.abc import Iterable

from ._messages import Message
from ._types import Usage

CHARS_PER_TOKEN = 4


def message_chars(message: Message) -> int:
    """The characters of a message that cost tokens: its text and its tool calls."""
    size = len(message.content or "")
    for call in message.tool_calls or ():
        size += len(call.name) + len(call.arguments_json)
    return size


def chars_to_tokens(chars: int) -> int:
    """The estimate: `CHARS_PER_TOKEN` characters per token."""
    return -(-chars // CHARS_PER_TOKEN)  # rounded up: a non-empty text costs at least a token


def estimate_usage(prompt: Iterable[Message], reply: Message) -> Usage:
    """An estimate of one call's usage from the length of its prompt and reply texts."""
    prompt_tokens = chars_to_tokens(sum(message_chars(m) for m in prompt))
    completion_tokens = chars_to_tokens(message_chars(reply))
    return Usage(
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        total_tokens=prompt_tokens + completion_tokens,
        calls=1,
        estimated=True,
    )


def complete_usage(
    prompt_tokens: int | None,
    completion_tokens: int | None,
    total_tokens: int | None,
    *,
    prompt: Iterable[Message],
    reply: Message,
) -> Usage:
    """One call's usage from what the server reported (None = not reported), gaps filled."""
    if not (prompt_tokens or completion_tokens or total_tokens):
        return estimate_usage(prompt, reply)
    prompt_tokens, completion_tokens = prompt_tokens or 0, completion_tokens or 0
    return Usage(
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        total_tokens=total_tokens or prompt_tokens + completion_tokens,
        calls=1,
    )
