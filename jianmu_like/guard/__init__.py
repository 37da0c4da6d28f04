"""The guard: policies that allow, deny or hold a tool call for human approval, the enforcer
that applies them, and the approvals of suspended runs (list and decide them)."""

from typing import TYPE_CHECKING

from ..exports import lazy_exports

if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt name is an error there
    __all__, __getattr__, __dir__ = lazy_exports(__name__)

if TYPE_CHECKING:  # the public names, one source: jianmu_like.exports reads them at run time
    from .._run.review import PendingApproval as PendingApproval
    from .._run.review import QuestionExpired as QuestionExpired
    from .._run.review import StoredQuestion as StoredQuestion
    from .._run.review import ThreadSuspendedError as ThreadSuspendedError
    from .._run.review import list_pending as list_pending
    from .._run.review import record_decision as record_decision
    from .._run.review import stored_questions as stored_questions
    from ._approvals import AlreadyDecided as AlreadyDecided
    from ._approvals import Approval as Approval
    from ._approvals import ApprovalDecision as ApprovalDecision
    from ._approvals import ApprovalError as ApprovalError
    from ._approvals import InvalidEdit as InvalidEdit
    from ._config import GuardConfig as GuardConfig
    from ._config import policies_from_config as policies_from_config
    from ._decisions import Decision as Decision
    from ._decisions import GuardDecision as GuardDecision
    from ._enforcer import GuardConfigError as GuardConfigError
    from ._enforcer import GuardContext as GuardContext
    from ._enforcer import GuardEnforcer as GuardEnforcer
    from ._interruptions import Interruption as Interruption
    from ._interruptions import InterruptionError as InterruptionError
    from ._interruptions import InterruptionKind as InterruptionKind
    from ._interruptions import register_kind as register_kind
    from ._policies import AllowList as AllowList
    from ._policies import ArgumentRule as ArgumentRule
    from ._policies import Breakpoint as Breakpoint
    from ._policies import DenyList as DenyList
    from ._policies import GuardPolicy as GuardPolicy
    from ._policies import MaxToolCalls as MaxToolCalls
    from ._policies import RateLimit as RateLimit
    from ._policies import RequireApproval as RequireApproval
    from ._policies import policy as policy
