"""The tool-call journal hook: how a ToolExecutor makes each call's outcome durable at once.

With a checkpointer, the agent's recorder puts a `ToolJournal` on the state manager; the
executor records every call as *started* before it runs and as *finished* with its outcome right
after, so a crash mid-batch loses nothing that finished. Without a checkpointer the hook is None
and nothing is recorded.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
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
    after: str | None = None
    """The call of the same batch that runs before this one (a serial batch, journaled as
    started in one write): while that one has no outcome, this one has not begun."""


def never_began(entry: JournalEntry, entries: Mapping[str, JournalEntry]) -> bool:
    """Whether a started call certainly did not run: it waits in a serial batch behind a call
    that never finished (each outcome of a serial batch is durable before the next call starts)."""
    before = entries.get(entry.after) if entry.after is not None else None
    return before is not None and before.status != "finished"


def finish_entry(entry: JournalEntry, outcome: dict[str, Any]) -> JournalEntry | None:
    """`entry` finished with `outcome`; None when it is finished already (an outcome, once
    recorded, is never replaced: a replay marking a call unknown cannot overwrite a real one)."""
    if entry.status != "started":
        return None
    return entry.model_copy(update={"status": "finished", "outcome": outcome, "finished_at": time.time()})


class ToolJournal(Protocol):
    """What a ToolExecutor needs from the journal of the thread being run."""

    @property
    def thread_id(self) -> str | None:
        """The thread recorded into (None: journaling is off for now)."""
        ...

    def entries(self) -> Mapping[str, JournalEntry]:
        """Every recorded call of the thread, by key."""
        ...

    async def started(self, calls: Sequence[tuple[str, str, str]], *, serial: bool) -> None:
        """Record that a batch's calls, (key, tool_call id, tool) each, are about to run, in one
        write before the first of them runs (raises if this process no longer owns the thread);
        `serial`: they run one after another, in this order. The batch is open until each of
        them has `finished`."""
        ...

    async def finished(self, key: str, outcome: dict[str, Any]) -> None:
        """Record a call's outcome: durable when this returns, except the last outcome of an
        open batch, which is written with the checkpoint saved after the tick (one write; before
        the next observation depends on it). Awaited: the store may be async, and outcomes that
        finish while a write is in flight go together in the next one."""
        ...
