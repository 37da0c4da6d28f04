"""The run core's own error: an agent or a conversation asked for what it cannot serve."""

from __future__ import annotations

from ..errors import JianmuError


class ConversationError(RuntimeError, JianmuError):
    """An agent or conversation used in a way it cannot serve: a second run while one is in
    progress (each serves one run at a time), a checkpointer on a `Conversation`."""
