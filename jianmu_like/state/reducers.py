"""`add_messages`: LangGraph's message reducer, for users who want its replace-by-id semantics.

The ReAct preset's `messages` field appends (`operator.add`, extended in place: the hot path).
Some applications edit history instead — correct a user turn, replace a placeholder with the
real message — and LangGraph's `add_messages` does that by id. Declare the field with this
reducer to get the same: `messages: Annotated[list[Message], add_messages]`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..models.messages import Message


def add_messages(current: Sequence[Message], new: Sequence[Message] | Message) -> list[Message]:
    """`current` with `new` merged: a message whose `id` is already in `current` replaces that
    one where it stands; every other message (any without an id) is appended, in order."""
    incoming = [new] if isinstance(new, Message) else list(new)
    merged = list(current)
    where = {m.id: i for i, m in enumerate(merged) if m.id is not None}
    for message in incoming:
        index = where.get(message.id) if message.id is not None else None
        if index is None:
            if message.id is not None:
                where[message.id] = len(merged)
            merged.append(message)
        else:
            merged[index] = message
    return merged
