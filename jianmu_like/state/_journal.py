"""The tool-call journal hook: how a ToolExecutor makes each call's outcome durable at once.

With a checkpointer, the agent's recorder puts a `ToolJournal` on the state manager; the
executor records every call as *started* before it runs and as *finished* with its outcome right
after, so a crash mid-batch loses nothing that finished. Without a checkpointer the hook is None
and nothing is recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol

from pydantic import BaseModel

JournalStatus = Literal["started", "finished"]


class JournalEntry(BaseModel):
    """One tool call of a thread: started (outcome unknown) or finished (with its outcome)."""

    key: str
    """Identifies the call within its thread: namespace, batch and call (see ToolExecutor)."""
    tool_call_id: str
    tool: str
    status: JournalStatus
    outcome: dict[str, Any] | None = None
    started_at: float = 0.0
    finished_at: float | None = None


class ToolJournal(Protocol):
    """What a ToolExecutor needs from the journal of the thread being run."""

    @property
    def thread_id(self) -> str | None:
        """The thread recorded into (None: journaling is off for now)."""
        ...

    def entries(self) -> Mapping[str, JournalEntry]:
        """Every recorded call of the thread, by key."""
        ...

    def started(self, key: str, tool_call_id: str, tool: str) -> None:
        """Record that a call is about to run (raises if this process no longer owns the thread)."""
        ...

    def finished(self, key: str, outcome: dict[str, Any]) -> None:
        """Record a call's outcome."""
        ...
