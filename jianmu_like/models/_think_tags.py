"""Reasoning written inline as `<think>...</think>` (DeepSeek-R1 distills, Qwen3, QwQ): split off
the answer.

A server with a reasoning parser sends such thoughts apart (`reasoning_content`); a model run
in-process has no parser, so the embedded provider does the same split for plain (tool-less)
replies: the block becomes the message's `reasoning_content` — shown to people, never sent back
— and only the rest is the answer. Replies sampled under the tool protocol's grammar cannot
contain the tags (the grammar admits one JSON object), so they are never looked at.
"""

from __future__ import annotations

OPEN = "<think>"
CLOSE = "</think>"


def split_think(text: str) -> tuple[str | None, str]:
    """`(reasoning, answer)` of a reply: a leading `<think>` block is the reasoning (None when
    there is none or it is empty). A block never closed — the reply was cut off while thinking
    — is all reasoning and leaves no answer."""
    stripped = text.lstrip()
    if not stripped.startswith(OPEN):
        return None, text.strip()
    end = stripped.find(CLOSE, len(OPEN))
    if end < 0:
        return stripped[len(OPEN) :].strip() or None, ""
    return stripped[len(OPEN) : end].strip() or None, stripped[end + len(CLOSE) :].strip()
