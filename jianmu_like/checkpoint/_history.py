"""A thread's history: what one saved version of it looks like in a listing.

Every save of a thread is a new version (`seq` counts them per thread); a run continued from an
older version (`Agent.run(..., from_checkpoint=seq)`) forks: its first save names that version
as `parent_seq`. A listing must not parse every version's whole state, so each save carries a
small `CheckpointSummary` computed by the recorder from what it just captured (the state
snapshot and the tree progress), stored next to the checkpoint; versions written before
summaries existed (a migrated store) are summarised from their data when listed.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from ..models._keys import StateKeys

_DEFAULT_KEYS = StateKeys()


class CheckpointSummary(BaseModel):
    """What a history listing shows of one version, without its state."""

    node: str | None = None
    """The deepest node running when it was saved (its path), None for a finished run."""
    iteration: int | None = None
    """Model rounds of the run so far (the state's `rounds`), when the state has them."""
    messages: int = 0
    """Messages in the conversation (every namespace)."""
    pending_approvals: list[str] = Field(default_factory=list)
    """Ids of the tool calls waiting for a human."""


class CheckpointInfo(CheckpointSummary):
    """One version of a thread (`Agent.history`, `jianmu-like threads history`, the API)."""

    thread_id: str
    seq: int
    parent_seq: int | None = None
    """The version this one continues: `seq - 1` along a run, an older one where a run was
    continued from it (a fork); None for a thread's first version."""
    status: str
    saved_at: float


def summarize(
    state: dict[str, Any], tree: dict[str, dict[str, Any]], keys: StateKeys | None = None
) -> CheckpointSummary:
    """The summary of a state snapshot and tree progress (both as a checkpoint stores them)."""
    keys = keys or _DEFAULT_KEYS
    messages = 0
    pending: list[str] = []
    iteration: int | None = None
    msg_suffix, pend_suffix = "." + keys.messages, "." + keys.pending_approvals
    for key, value in state.items():
        if key == keys.messages or key.endswith(msg_suffix):
            messages += len(value) if isinstance(value, list) else 0
        elif key == keys.pending_approvals or key.endswith(pend_suffix):
            if isinstance(value, list):
                pending.extend(str(item.get("id")) for item in value if isinstance(item, dict))
        elif key == keys.rounds and isinstance(value, int):
            iteration = value
    node = None
    for path, progress in tree.items():
        if progress.get("status") == "RUNNING" and (node is None or path.startswith(node + "/")):
            node = path
    return CheckpointSummary(node=node, iteration=iteration, messages=messages, pending_approvals=pending)


def info_of(
    thread_id: str,
    seq: int,
    parent_seq: int | None,
    status: str,
    saved_at: float,
    summary: str | None,
    data: str | None,
) -> CheckpointInfo:
    """A listing row from stored columns: the stored summary (JSON), else one made from `data`."""
    if summary is not None:
        made = CheckpointSummary.model_validate_json(summary)
    elif data is not None:
        raw = json.loads(data)
        made = summarize(raw.get("state") or {}, raw.get("tree") or {})
    else:
        made = CheckpointSummary()
    return CheckpointInfo(
        thread_id=thread_id,
        seq=seq,
        parent_seq=parent_seq,
        status=status,
        saved_at=saved_at,
        **made.model_dump(),
    )
