"""Replies cut off by the length limit (`finish_reason: "length"`) are never silent successes.

A final answer that stopped at `max_tokens` is half an answer: the ReAct loop asks the model
once to continue where it stopped (the continuation is joined to the part already written),
and a second cut ends the run with termination reason `truncated`, the partial answer kept and
the reason said (`answers.on_truncated`: `continue`, `end` at the first cut, or `accept` the
cut answer as before). A tool call cut off may carry incomplete arguments that still parse
(`{"n": 12` closed by a lenient reader, a string stopped short): its last call becomes an
invalid-arguments observation the model reads and can retry.
"""

from __future__ import annotations

import json
from typing import Literal

from ..models._messages import Message, ToolCall, human

OnTruncated = Literal["continue", "end", "accept"]

CONTINUE_PREFIX = "Your answer was cut off by the length limit"
"""Starts the message asking the model to continue a cut-off answer."""

TRUNCATED = "truncated"
"""Starts the `error` a run ends with after a cut-off answer (termination reason `truncated`)."""

CUT_CALL = (
    "the reply was cut off by the length limit (max_tokens) while writing this call, so its "
    "arguments may be incomplete; call the tool again with shorter arguments"
)


def is_length(finish_reason: str | None) -> bool:
    """Whether the server stopped the reply at its length limit."""
    return finish_reason == "length"


def continuation_request() -> Message:
    """The user message asking to continue a cut-off answer."""
    return human(f"{CONTINUE_PREFIX}. Continue it exactly where it stopped, without repeating any of it.")


def is_continuation_request(message: Message | None) -> bool:
    return (
        message is not None and message.role == "user" and (message.content or "").startswith(CONTINUE_PREFIX)
    )


def truncated_error(max_tokens: int | None, *, continued: bool) -> str:
    """The `error` of a run ended by a cut-off answer (it becomes the termination's reason)."""
    limit = f"max_tokens={max_tokens}" if max_tokens is not None else "the server's length limit"
    again = " again after being asked to continue" if continued else ""
    return (
        f"{TRUNCATED}: the final answer was cut off at {limit}{again}; the partial answer is kept "
        "(raise llm.max_tokens, or set answers.on_truncated)"
    )


def mark_cut_call(calls: list[ToolCall]) -> list[ToolCall]:
    """`calls` with the last one (the one the cut fell in) made an invalid-arguments call."""
    if not calls or calls[-1].arguments_error:
        return calls
    last = calls[-1]
    raw = last.raw_arguments if last.raw_arguments is not None else json.dumps(last.arguments)
    cut = ToolCall(id=last.id, name=last.name, raw_arguments=raw, arguments_error=CUT_CALL)
    return [*calls[:-1], cut]
