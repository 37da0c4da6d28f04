"""What a durable run hands back across processes: plain data, no state model.

The workflow's return value is stored by DBOS and read by any client, which may not have the
agent's state schema or tools importable: so the result is this small JSON-able model rather
than an `AgentResult`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from .._run.agent import AgentResult
from ..bt._runner import EndStatus
from ..guard._approvals import Approval
from ..models._types import Usage
from ..tools._artifact import Artifact

WorkflowStatus = Literal[
    "ENQUEUED", "PENDING", "SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"
]
"""DBOS's statuses of a workflow, as DBOS spells them (its wire format): not a run status of
this package (`bt._runner.RunStatus`), which `DurableRunResult.status` uses."""


class DurableRunResult(BaseModel):
    """The outcome of one durable run (as `AgentResult`, without the state)."""

    run_id: str
    status: EndStatus
    final_answer: str | None = None
    output: Any = None
    """The structured answer of an agent with an output type, as JSON data (the client may not
    have its pydantic model importable)."""
    fallback_answer: str | None = None
    error: str | None = None
    termination: dict[str, Any] | None = None
    usage: Usage = Field(default_factory=Usage)
    pending_approvals: list[Approval] = Field(default_factory=list)
    messages: list[dict[str, Any]] = Field(default_factory=list)
    """The conversation at the end of the run (the agent's namespace), as JSON objects."""
    artifacts: list[Artifact] = Field(default_factory=list)
    """Documents the run's tools produced, whole (the model saw placeholders), as on `AgentResult`."""

    @classmethod
    def of(cls, run_id: str, result: AgentResult, messages: list[dict[str, Any]]) -> DurableRunResult:
        return cls(
            run_id=run_id,
            status=result.status,
            final_answer=result.final_answer,
            output=result.output.model_dump(mode="json")
            if isinstance(result.output, BaseModel)
            else result.output,
            fallback_answer=result.fallback_answer,
            error=result.error,
            termination=result.termination,
            usage=result.usage,
            pending_approvals=result.pending_approvals,
            messages=messages,
            artifacts=result.artifacts,
        )
