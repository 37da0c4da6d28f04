"""What a durable run hands back across processes: plain data, no state model.

The workflow's return value is stored by DBOS and read by any client, which may not have the
agent's state schema or tools importable: so the result is this small JSON-able model rather
than an `AgentResult`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from .._agent import AgentResult
from ..bt._runner import EndStatus
from ..guard._approvals import Approval
from ..models._types import Usage

WorkflowStatus = Literal[
    "ENQUEUED", "PENDING", "SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"
]
"""DBOS's statuses of a workflow, as DBOS spells them (its wire format): not a run status of
this package (`bt.runner.RunStatus`), which `DurableRunResult.status` uses."""


class DurableRunResult(BaseModel):
    """The outcome of one durable run (as `AgentResult`, without the state)."""

    run_id: str
    status: EndStatus
    final_answer: str | None = None
    fallback_answer: str | None = None
    error: str | None = None
    termination: dict[str, Any] | None = None
    usage: Usage = Field(default_factory=Usage)
    pending_approvals: list[Approval] = Field(default_factory=list)
    messages: list[dict[str, Any]] = Field(default_factory=list)
    """The conversation at the end of the run (the agent's namespace), as JSON objects."""

    @classmethod
    def of(cls, run_id: str, result: AgentResult, messages: list[dict[str, Any]]) -> DurableRunResult:
        return cls(
            run_id=run_id,
            status=result.status,
            final_answer=result.final_answer,
            fallback_answer=result.fallback_answer,
            error=result.error,
            termination=result.termination,
            usage=result.usage,
            pending_approvals=result.pending_approvals,
            messages=messages,
        )
