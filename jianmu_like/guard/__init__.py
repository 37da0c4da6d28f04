"""The guard: policies that allow, deny or hold a tool call for human approval, the enforcer
that applies them, and the approvals of suspended runs (list and decide them)."""

from typing import TYPE_CHECKING

from ..exports import lazy_exports

_EXPORTS = {
    ".approvals": (
        "AlreadyDecided",
        "Approval",
        "ApprovalDecision",
        "ApprovalError",
        "InvalidEdit",
    ),
    ".config": (
        "GuardConfig",
        "policies_from_config",
    ),
    ".decisions": (
        "Decision",
        "GuardDecision",
    ),
    ".enforcer": (
        "GuardConfigError",
        "GuardContext",
        "GuardEnforcer",
    ),
    ".policies": (
        "AllowList",
        "ArgumentRule",
        "Breakpoint",
        "DenyList",
        "GuardPolicy",
        "MaxToolCalls",
        "RateLimit",
        "RequireApproval",
        "policy",
    ),
    ".review": (
        "PendingApproval",
        "ThreadSuspendedError",
        "list_pending",
        "record_decision",
    ),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names for type checkers; tests/test_public_api.py checks they match
    from .approvals import AlreadyDecided as AlreadyDecided
    from .approvals import Approval as Approval
    from .approvals import ApprovalDecision as ApprovalDecision
    from .approvals import ApprovalError as ApprovalError
    from .approvals import InvalidEdit as InvalidEdit
    from .config import GuardConfig as GuardConfig
    from .config import policies_from_config as policies_from_config
    from .decisions import Decision as Decision
    from .decisions import GuardDecision as GuardDecision
    from .enforcer import GuardConfigError as GuardConfigError
    from .enforcer import GuardContext as GuardContext
    from .enforcer import GuardEnforcer as GuardEnforcer
    from .policies import AllowList as AllowList
    from .policies import ArgumentRule as ArgumentRule
    from .policies import Breakpoint as Breakpoint
    from .policies import DenyList as DenyList
    from .policies import GuardPolicy as GuardPolicy
    from .policies import MaxToolCalls as MaxToolCalls
    from .policies import RateLimit as RateLimit
    from .policies import RequireApproval as RequireApproval
    from .policies import policy as policy
    from .review import PendingApproval as PendingApproval
    from .review import ThreadSuspendedError as ThreadSuspendedError
    from .review import list_pending as list_pending
    from .review import record_decision as record_decision
