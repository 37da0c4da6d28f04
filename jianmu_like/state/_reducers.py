"""`add_messages`: LangGraph's message reducer, for users who want its replace-by-id semantics.

The ReAct preset's `messages` field appends (`operator.add`, extended in place: the hot path).
Some applications edit history instead — correct a user turn, replace a placeholder with the
real message — and LangGraph's `add_messages` does that by id. Declare the field with this
reducer to get the same: `messages: Annotated[list[Message], add_messages]`.

The kernel knows no `Message` (models/ sits above it): the reducer reads only an optional `id`,
so it merges any items that carry one (`HasId`), messages first among them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar


class HasId(Protocol):
    """An item with an optional id (`models.Message` is one)."""

    @property
    def id(self) -> str | None: ...


M = TypeVar("M", bound=HasId)


def add_messages(current: Sequence[M], new: Sequence[M] | M) -> list[M]:
    """`current` with `new` merged: a message whose `id` is already in `current` replaces that
    one where it stands; every other message (any without an id) is appended, in order."""
    incoming: list[M] = list(new) if isinstance(new, Sequence) else [new]
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
