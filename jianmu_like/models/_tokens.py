"""Counting the tokens of a prompt, for the context guard.

A real tokenizer is used where one is installed and usable offline: `tiktoken`, when it imports
and its encoding loads (from `TIKTOKEN_CACHE_DIR` or its cache; a machine without network and
without a cached encoding cannot load one, and the counter falls back instead of failing).
Otherwise the framework's one estimate (`models._usage`: ~4 characters per token) is used. Each
message also costs `MESSAGE_OVERHEAD` tokens (role and separators, as OpenAI counts them).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from ._messages import Message
from ._usage import chars_to_tokens, message_chars

MESSAGE_OVERHEAD = 4
"""Tokens every message costs besides its text (role, separators)."""

DEFAULT_ENCODING = "o200k_base"

_SCHEMA_CACHE_SIZE = 64
"""Tool lists whose token counts a counter keeps (cleared when full: a working set is small)."""


class TokenCounter:
    """Counts the tokens of texts and messages; `name` says which tokenizer ("estimate" or
    "tiktoken:<encoding>"), reported in `context.compacted` events."""

    def __init__(self, name: str, encode: Callable[[str], int] | None = None) -> None:
        self.name = name
        self._encode = encode
        self._schema_counts: dict[tuple[int, ...], tuple[Sequence[dict[str, Any]], int]] = {}

    def text(self, text: str) -> int:
        if self._encode is None:
            return chars_to_tokens(len(text))
        return self._encode(text)

    def message(self, message: Message) -> int:
        if self._encode is None:
            return chars_to_tokens(message_chars(message)) + MESSAGE_OVERHEAD
        size = self._encode(message.content or "")
        for call in message.tool_calls or ():
            size += self._encode(call.name) + self._encode(call.arguments_json)
        return size + MESSAGE_OVERHEAD

    def messages(self, messages: Sequence[Message]) -> int:
        return sum(self.message(m) for m in messages)

    def schemas(self, schemas: Sequence[dict[str, Any]] | None) -> int:
        """The tool schemas of a request (sent beside the messages, they fill the window too).

        Counted once per list of schema objects: tools hand out their cached, read-only schema
        (`Tool.schema()`), so every agent built with the same tools asks about the same dicts.
        The entry holds the dicts, so their ids in its key cannot be reused by other objects."""
        if not schemas:
            return 0
        key = tuple(map(id, schemas))
        cached = self._schema_counts.get(key)
        if cached is not None:
            return cached[1]
        count = self.text(json.dumps(list(schemas), ensure_ascii=False))
        if len(self._schema_counts) >= _SCHEMA_CACHE_SIZE:
            self._schema_counts.clear()
        self._schema_counts[key] = (tuple(schemas), count)
        return count


ESTIMATE = TokenCounter("estimate")


def token_counter(tokenizer: str = "auto") -> TokenCounter:
    """The counter for `tokenizer`: "estimate", "tiktoken" / "tiktoken:<encoding>" (falls back
    to the estimate, with a warning, when it cannot be loaded) or "auto" (tiktoken when usable
    offline, else the estimate, silently)."""
    if tokenizer == "estimate":
        return ESTIMATE
    if tokenizer == "auto":
        encoding = DEFAULT_ENCODING
    elif tokenizer == "tiktoken" or tokenizer.startswith("tiktoken:"):
        encoding = tokenizer.partition(":")[2] or DEFAULT_ENCODING
    else:
        raise ValueError(
            f"unknown tokenizer {tokenizer!r}: use auto, estimate, tiktoken or tiktoken:<encoding>"
        )
    counter = _tiktoken(encoding)
    if isinstance(counter, str):  # why tiktoken cannot serve: said when it was asked for by name
        if tokenizer != "auto":
            import structlog  # deferred: the core imports without it

            structlog.get_logger("jianmu_like.tokens").warning(
                "tokenizer.unavailable", tokenizer=tokenizer, fallback="estimate", cause=counter
            )
        return ESTIMATE
    return counter


@lru_cache(maxsize=8)
def _tiktoken(encoding: str) -> TokenCounter | str:
    """tiktoken's counter for `encoding`, or why there is none (not installed, or the encoding
    cannot be fetched offline)."""
    try:
        import tiktoken  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc} (the `tiktoken` extra: pip install 'jianmu_like[tiktoken]')"
    try:
        enc = tiktoken.get_encoding(encoding)
    except Exception as exc:  # any failure of an optional tokenizer falls back to the estimate
        return f"{type(exc).__name__}: {exc}"

    def encode(text: str) -> int:
        return len(enc.encode(text, disallowed_special=()))

    return TokenCounter(f"tiktoken:{encoding}", encode)
