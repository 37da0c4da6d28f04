"""Reading threads straight from a checkpoint store, without building any agent.

What an operator's tools show (the `jianmu-like threads` command, the server's
`/api/threads` routes): every thread with its newest version, one thread's conversation, one
thread's versions. One implementation, so the command line and the API always agree.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from ..models._keys import StateKeys
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


class VersionView(BaseModel):
    """One saved version of a thread, as a person inspects it before forking from it."""

    version: CheckpointInfo
    messages: list[dict[str, Any]] = Field(default_factory=list)
    """The version's messages (the top level's, as saved)."""
    tree: dict[str, str] = Field(default_factory=dict)
    """Each node's status when it was saved, by path (nodes not listed had not run: INVALID)."""
    pending_approvals: list[dict[str, Any]] = Field(default_factory=list)
    """The tool calls it waited for a human on (every namespace's)."""


def version_view(
    store: Checkpointer, thread_id: str, seq: int, *, label: str, keys: StateKeys | None = None
) -> VersionView:
    """Version `seq` of the thread (CheckpointError naming the kept versions, or the known
    threads, when the store has no such version)."""
    history = store.history(thread_id)
    if not history:
        raise unknown_thread(store, thread_id, label)
    info = next((item for item in history if item.seq == seq), None)
    checkpoint = store.load(thread_id, seq) if info is not None else None
    if info is None or checkpoint is None:
        kept = ", ".join(str(item.seq) for item in sorted(history, key=lambda item: item.seq))
        raise UnknownThreadError(
            f"{label}: thread {thread_id!r} has no version {seq} (kept versions: {kept})"
        )
    keys = keys or StateKeys()
    state = checkpoint.state
    messages = state.get(keys.messages) or []
    suffix = "." + keys.pending_approvals
    pending = [
        item
        for key, value in state.items()
        if (key == keys.pending_approvals or key.endswith(suffix)) and isinstance(value, list)
        for item in value
        if isinstance(item, dict)
    ]
    return VersionView(
        version=info,
        messages=[m for m in messages if isinstance(m, dict)],
        tree={path: str(progress.get("status")) for path, progress in checkpoint.tree.items()},
        pending_approvals=pending,
    )
