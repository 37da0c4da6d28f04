"""Approvals: tool calls a guard policy marked PENDING, waiting for a human decision.

An `Approval` lives in the agent's state (`pending_approvals`) until a decision for it is
recorded (`approval_decisions`, keyed by the approval id, which is the tool call's id). Both are
plain state, so they survive checkpoints and can be decided from another process.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from ..errors import JianmuError


class ApprovalError(LookupError, JianmuError):
    """An approval id that is unknown, or already decided."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "approval error"


class AlreadyDecided(ApprovalError):
    """A decision on an approval that was decided before (by anyone): the first one stands.

    Every place that refuses a second decision raises this one error, so the API, the command
    line and `Agent.decide` all say "already decided (approved|denied)" the same way."""

    def __init__(
        self,
        approval_id: str,
        decision: ApprovalDecision,
        thread_id: str | None = None,
        *,
        where: str | None = None,
    ) -> None:
        """`where` names the place in the message when it is not a thread ("run '<id>'" for a
        durable run); by default the thread, if known."""
        where = where or (f"thread {thread_id!r}" if thread_id is not None else None)
        at = datetime.fromtimestamp(decision.decided_at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        place = f" in {where}" if where else ""
        super().__init__(f"approval {approval_id!r}{place} was already decided ({verdict(decision)}) at {at}")
        self.approval_id = approval_id
        self.decision = decision
        self.thread_id = thread_id


class Approval(BaseModel):
    """A tool call waiting for a human."""

    id: str
    """The approval id: the tool call's id (unique within the batch that waits)."""
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    reason: str = ""
    """Why approval is needed (the policy's reason)."""
    policy: str | None = None
    namespace: str | None = None
    requested_at: float = Field(default_factory=time.time)


class ApprovalDecision(BaseModel):
    """A human's answer to one approval."""

    approved: bool
    reason: str = ""
    decided_at: float = Field(default_factory=time.time)


def verdict(decision: ApprovalDecision) -> str:
    """ "approved" or "denied"."""
    return "approved" if decision.approved else "denied"


def parse_decision(value: bool | str | ApprovalDecision | tuple[Any, ...]) -> ApprovalDecision:
    """Accept the shorthand forms of `Agent.resume(decisions={...})`:
    True/"approve"/"approved", False/"deny"/"denied", ("deny", reason), or an ApprovalDecision."""
    if isinstance(value, ApprovalDecision):
        return value
    reason = ""
    if isinstance(value, tuple):
        if not value:
            raise ValueError("empty decision tuple")
        reason = str(value[1]) if len(value) > 1 else ""
        value = value[0]
    if value is True or (isinstance(value, str) and value.lower() in ("approve", "approved", "allow", "yes")):
        return ApprovalDecision(approved=True, reason=reason)
    if value is False or (isinstance(value, str) and value.lower() in ("deny", "denied", "reject", "no")):
        return ApprovalDecision(approved=False, reason=reason)
    raise ValueError(f"not a decision: {value!r} (use True/'approve' or False/'deny', or ('deny', reason))")
