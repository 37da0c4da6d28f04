"""Approvals: tool calls a guard policy marked PENDING, waiting for a human decision.

An `Approval` lives in the agent's state (`pending_approvals`) until a decision for it is
recorded (`approval_decisions`, keyed by the approval id, which is the tool call's id). Both are
plain state, so they survive checkpoints and can be decided from another process.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from .._base.json_schema import compile_schema, problems
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


class InvalidEdit(ApprovalError, ValueError):
    """A reviewer's corrected arguments that do not match the tool's schema: nothing is
    recorded, the approval still waits (the API answers 422, the command line exits 2)."""


WaitKind = Literal["approval", "client_tool", "breakpoint"]
"""Whom a waiting tool call waits for: a human's decision (`approval`), or the client that
offered the tool and runs it itself (`client_tool`, the OpenAI-compatible endpoint's client
tools), whose answer is the call's result. Both suspend the run the same way and are answered
through the same decide path; a `breakpoint` is a run paused before a node ticks
(`_run.breakpoints`): approved it goes on, denied the node fails unticked. Each is a kind of
`Interruption` (`guard._interruptions`), where a kind that is not a tool call (a question) is
registered."""


class Approval(BaseModel):
    """A tool call waiting for someone: a human's decision, or a client's result (`kind`)."""

    id: str
    """The approval id: the tool call's id (unique within the batch that waits)."""
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    reason: str = ""
    """Why approval is needed (the policy's reason)."""
    policy: str | None = None
    namespace: str | None = None
    requested_at: float = Field(default_factory=time.time)
    parameters: dict[str, Any] | None = None
    """The tool's parameter schema, so a reviewer's corrected arguments are checked against it
    wherever the decision is made (the command line has no tools, only the stored approval)."""
    kind: WaitKind = "approval"
    """Whom the call waits for (`WaitKind`): an `approval` is decided, a `client_tool` is
    answered with its result (`ApprovalDecision.output`)."""


class ApprovalDecision(BaseModel):
    """A human's answer to one approval.

    A reviewer may approve with corrected `arguments` (the call then runs with them, after the
    tool's own validation and the guard's check of the corrected call; the model's observation
    says so). A denial's `reason` is what the model reads: "denied by a human reviewer: <reason>".
    """

    approved: bool
    reason: str = ""
    decided_at: float = Field(default_factory=time.time)
    arguments: dict[str, Any] | None = None
    """The arguments the reviewer approved the call with, replacing the model's (None: as the
    model asked)."""
    output: str | None = None
    """The result of a call someone else ran (a `client_tool` call: the client's tool message):
    it becomes the call's observation, nothing runs here."""

    @model_validator(mode="after")
    def _edits_are_approvals(self) -> ApprovalDecision:
        if self.arguments is not None and not self.approved:
            raise ValueError("corrected arguments come with an approval, not a denial")
        if self.output is not None and (not self.approved or self.arguments is not None):
            raise ValueError("a result (output) answers a call: it comes alone, as an approval")
        return self


def check_answer(approval: Approval, decision: ApprovalDecision) -> None:
    """Refuse a decision that does not fit what the call waits for, before it is recorded: a
    client's call is answered with its result (or denied), never approved to run here (the
    server has no such tool); a human's approval takes no result."""
    if approval.kind == "client_tool" and decision.approved and decision.output is None:
        raise ApprovalError(
            f"call {approval.id!r} of client tool {approval.tool!r} waits for the client's result "
            "(a tool message answering it), not for an approval"
        )
    if approval.kind in ("approval", "breakpoint") and decision.output is not None:
        raise ApprovalError(
            f"{approval.kind} {approval.id!r} is decided (approve or deny); it takes no result"
        )


def check_edit(approval: Approval, decision: ApprovalDecision) -> None:
    """Refuse corrected arguments that do not match the tool's schema (`InvalidEdit` naming
    every problem), before the decision is recorded: a reviewer's typo is theirs to fix, never the
    model's observation. Without a schema (an approval saved by an older version) the tool's own
    validation at run time is the check."""
    if decision.arguments is None or not approval.parameters:
        return
    try:  # the schema the tool declared (an MCP server's may carry keywords of its own)
        validator = compile_schema(approval.parameters, known_keywords=False)
    except ValueError as exc:
        raise InvalidEdit(
            f"tool {approval.tool!r}'s schema cannot check corrected arguments: {exc}"
        ) from None
    found = sorted(
        f"{where.lstrip('.') or 'arguments'} {what}"
        for where, what in problems(validator, decision.arguments)
    )
    if found:
        raise InvalidEdit(
            f"the corrected arguments for approval {approval.id!r} do not match tool "
            f"{approval.tool!r}'s schema: " + "; ".join(found)
        )


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
