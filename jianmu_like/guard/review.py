"""Reviewing approvals straight from a checkpoint store, without running any agent.

This is what an operator's tool (the `jianmu-like approvals` command) uses: list the tool calls
waiting in every suspended thread, and record a decision into the thread's checkpoint. The agent
that later resumes the thread (`Agent.resume(thread_id=...)`) finds the decision there.
"""

from __future__ import annotations

from pydantic import BaseModel

from ..checkpoint.store import Checkpoint, Checkpointer
from ..state.schema import StateKeys
from .approvals import Approval, ApprovalDecision, ApprovalError, parse_decision


class PendingApproval(BaseModel):
    """One waiting tool call, where it waits, and its decision if one was recorded."""

    thread_id: str
    approval: Approval
    decision: ApprovalDecision | None = None


def _slots(checkpoint: Checkpoint, keys: StateKeys) -> list[tuple[str, str]]:
    """(pending key, decisions key) for the top level and every namespace of the state."""
    suffix = "." + keys.pending_approvals
    found = []
    for key in checkpoint.state:
        if key == keys.pending_approvals:
            found.append((key, keys.approval_decisions))
        elif key.endswith(suffix):
            found.append((key, key[: -len(keys.pending_approvals)] + keys.approval_decisions))
    return found


def list_pending(checkpointer: Checkpointer, *, keys: StateKeys | None = None) -> list[PendingApproval]:
    """Every approval waiting in a suspended thread of `checkpointer`."""
    keys = keys or StateKeys()
    out: list[PendingApproval] = []
    for thread_id in checkpointer.threads():
        checkpoint = checkpointer.load(thread_id)
        if checkpoint is None or checkpoint.status != "suspended":
            continue
        for pending_key, decisions_key in _slots(checkpoint, keys):
            decisions = checkpoint.state.get(decisions_key) or {}
            for raw in checkpoint.state.get(pending_key) or []:
                approval = Approval.model_validate(raw)
                decided = decisions.get(approval.id)
                out.append(
                    PendingApproval(
                        thread_id=thread_id,
                        approval=approval,
                        decision=ApprovalDecision.model_validate(decided) if decided else None,
                    )
                )
    return out


def record_decision(
    checkpointer: Checkpointer,
    thread_id: str,
    approval_id: str,
    decision: object,
    *,
    keys: StateKeys | None = None,
) -> ApprovalDecision:
    """Write a decision for one approval into the thread's checkpoint (nothing runs)."""
    keys = keys or StateKeys()
    parsed = parse_decision(decision)  # type: ignore[arg-type]
    checkpoint = checkpointer.load(thread_id)
    if checkpoint is None:
        raise ApprovalError(f"no checkpoint for thread {thread_id!r}")
    if checkpoint.status != "suspended":
        raise ApprovalError(f"thread {thread_id!r} is not waiting for approvals (status {checkpoint.status})")
    for pending_key, decisions_key in _slots(checkpoint, keys):
        ids = [raw.get("id") for raw in checkpoint.state.get(pending_key) or []]
        if approval_id not in ids:
            continue
        decisions = dict(checkpoint.state.get(decisions_key) or {})
        if approval_id in decisions:
            verdict = "approved" if decisions[approval_id].get("approved") else "denied"
            raise ApprovalError(f"approval {approval_id!r} was already {verdict}")
        decisions[approval_id] = parsed.model_dump(mode="json")
        state = {**checkpoint.state, decisions_key: decisions}
        checkpointer.save(checkpoint.model_copy(update={"state": state, "seq": checkpoint.seq + 1}))
        return parsed
    waiting = [p.approval.id for p in list_pending(checkpointer, keys=keys) if p.thread_id == thread_id]
    listed = ", ".join(waiting) or "none"
    raise ApprovalError(f"unknown approval id {approval_id!r} in thread {thread_id!r} (pending: {listed})")
