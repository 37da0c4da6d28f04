"""Reading threads straight from a checkpoint store, without building any agent.

What an operator's tools show (the `jianmu-like threads` command, the server's
`/api/threads` routes): every thread with its newest version, one thread's conversation, one
thread's versions. One implementation, so the command line and the API always agree.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from .._keys import StateKeys
from ._contract import Checkpointer, CheckpointError
from ._history import CheckpointInfo


class ThreadView(BaseModel):
    """One thread: its newest version and the conversation saved in it."""

    thread: CheckpointInfo
    messages: list[dict[str, Any]] = Field(default_factory=list)
    """The newest version's messages (the top level's, as saved: role, content, tool calls...)."""
    versions: int
    """How many versions the store keeps of the thread (`history` lists them)."""
    source: str | None = None
    """The agent file the thread was built from, when recorded."""


class UnknownThreadError(CheckpointError):
    """The store holds no thread of that id (the message names the ones it holds)."""


def unknown_thread(store: Checkpointer, thread_id: str, label: str) -> UnknownThreadError:
    """The error for a thread the store does not hold, naming the ones it does."""
    known = ", ".join(store.threads()) or "none"
    return UnknownThreadError(f"{label}: no thread {thread_id!r} (threads: {known})")


def thread_view(
    store: Checkpointer, thread_id: str, *, label: str, keys: StateKeys | None = None
) -> ThreadView:
    """The thread's newest version and messages (CheckpointError naming the known threads when
    the store has no such thread)."""
    checkpoint = store.load(thread_id)
    history = store.history(thread_id)
    if checkpoint is None or not history:
        raise unknown_thread(store, thread_id, label)
    messages = checkpoint.state.get((keys or StateKeys()).messages) or []
    return ThreadView(
        thread=history[0],
        messages=[m for m in messages if isinstance(m, dict)],
        versions=len(history),
        source=checkpoint.source,
    )


def thread_history(store: Checkpointer, thread_id: str, *, label: str) -> list[CheckpointInfo]:
    """The thread's kept versions, newest first (CheckpointError for an unknown thread)."""
    history = store.history(thread_id)
    if not history:
        raise unknown_thread(store, thread_id, label)
    return history
