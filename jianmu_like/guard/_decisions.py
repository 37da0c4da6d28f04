"""Guard decisions: what a policy says about one requested tool call."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel


class Decision(StrEnum):
    """ALLOW runs the call; DENY answers the model with the reason; PENDING waits for a human."""

    ALLOW = "allow"
    DENY = "deny"
    PENDING = "pending"


class GuardDecision(BaseModel):
    """A decision with the reason shown to the model (DENY) or to the approver (PENDING)."""

    decision: Decision
    reason: str = ""
    policy: str | None = None

    @classmethod
    def allow(cls) -> GuardDecision:
        return _ALLOW

    @classmethod
    def deny(cls, reason: str, policy: str | None = None) -> GuardDecision:
        return cls(decision=Decision.DENY, reason=reason, policy=policy)

    @classmethod
    def pending(cls, reason: str, policy: str | None = None) -> GuardDecision:
        return cls(decision=Decision.PENDING, reason=reason, policy=policy)


_ALLOW = GuardDecision(decision=Decision.ALLOW)
