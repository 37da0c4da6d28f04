"""Reviewing approvals straight from a checkpoint store, without running any agent.

This is what an operator's tool (the `jianmu-like approvals` command) uses: list the tool calls
waiting in every suspended thread, and record a decision for one of them. Decisions are rows of
their own in the store (one transaction each), never part of the checkpoint's state that a later
save rewrites: concurrent operators never lose one, and the agent that resumes the thread
(`Agent.resume(thread_id=...)`) merges them in. An approval is decided once: a second decision
on it, by anyone, is an `AlreadyDecided` error ("already decided (approved|denied)") and the first
stays. Storing a decision on PostgreSQL also notifies listeners (`LISTEN jianmu_decisions`) in
the same transaction, so a server holding the suspended run resumes it at once.

It sits above both `guard` (approvals) and `checkpoint` (the store), which stay independent of
each other, and reads the approval keys of the nodes' `StateKeys`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from pydantic import BaseModel

from ..checkpoint._owner import Owner, owner_alive
from ..checkpoint._store import Checkpoint, Checkpointer, CheckpointError
from ..guard._approvals import (
    AlreadyDecided,
    Approval,
    ApprovalDecision,
    ApprovalError,
    check_answer,
    check_edit,
    parse_decision,
    verdict,
)
from ..guard._interruptions import InterruptionError
from ..models._keys import StateKeys
from ..tools._questions import Question


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


def approval_digest(approval: Approval) -> str:
    """Fingerprint of one approval: a stored decision applies to this approval only (a later
    call that happens to reuse the id is a new approval). The tool's schema (`parameters`) is
    not part of it, so decisions stored before approvals carried it still apply."""
    raw = json.dumps(approval.model_dump(mode="json", exclude={"parameters"}), sort_keys=True, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:24]


def unknown_approval(approval_id: str, where: str, pending: Iterable[str]) -> ApprovalError:
    """The error for a decision on an approval nobody waits for (checkpoint threads and durable runs)."""
    listed = ", ".join(pending) or "none"
    return ApprovalError(f"unknown approval id {approval_id!r} in {where} (pending: {listed})")


def store_decision(
    checkpointer: Checkpointer,
    thread_id: str,
    approval: Approval,
    decision: ApprovalDecision,
    *,
    where: str | None = None,
) -> ApprovalDecision:
    """Store a decision for `approval` (atomically); a decision already stored for it, by this
    process or another, is `AlreadyDecided` naming the verdict that stands. `where` names the
    thread in that message (default: "thread '<id>'"; a durable run says "run '<id>'")."""
    stored = checkpointer.record_decision(
        thread_id, approval.id, approval_digest(approval), decision.model_dump(mode="json")
    )
    kept = ApprovalDecision.model_validate(stored.decision)
    if not stored.new:
        raise AlreadyDecided(approval.id, kept, thread_id, where=where)
    return kept


def stored_decisions(
    checkpointer: Checkpointer, thread_id: str, approvals: Iterable[Approval]
) -> dict[str, ApprovalDecision]:
    """The stored decisions for these approvals, by approval id."""
    stored = checkpointer.decisions(thread_id)
    found: dict[str, ApprovalDecision] = {}
    for approval in approvals:
        row = stored.get(approval.id)
        if row is not None and row.digest == approval_digest(approval):
            found[approval.id] = ApprovalDecision.model_validate(row.decision)
    return found


def list_pending(checkpointer: Checkpointer, *, keys: StateKeys | None = None) -> list[PendingApproval]:
    """Every approval waiting in a suspended thread of `checkpointer`."""
    keys = keys or StateKeys()
    out: list[PendingApproval] = []
    for thread_id in checkpointer.threads():
        checkpoint = checkpointer.load(thread_id)
        if checkpoint is not None and checkpoint.status in _DECIDABLE:
            out.extend(_pending_in(checkpointer, checkpoint, keys))
    return out


def recent_pending(
    checkpointer: Checkpointer,
    *,
    keys: StateKeys | None = None,
    limit: int = 50,
    skip: Iterable[str] = (),
) -> list[PendingApproval]:
    """The approvals waiting in the `limit` most recently saved suspended threads (other than
    `skip`), newest thread first: what a server that restarted on the store offers to decide,
    bounded however many threads the store holds (one read of the heads, one load per thread)."""
    keys, skipped = keys or StateKeys(), set(skip)
    heads = [h for h in checkpointer.heads() if h.status == "suspended" and h.thread_id not in skipped]
    heads.sort(key=lambda head: head.saved_at, reverse=True)
    out: list[PendingApproval] = []
    for head in heads[:limit]:
        checkpoint = checkpointer.load(head.thread_id)
        if checkpoint is not None and checkpoint.status == "suspended":
            out.extend(_pending_in(checkpointer, checkpoint, keys))
    return out


def pending_of_thread(
    checkpointer: Checkpointer, thread_id: str, *, keys: StateKeys | None = None
) -> list[PendingApproval]:
    """The approvals the thread's newest checkpoint waits for when it is suspended ([] else)."""
    checkpoint = checkpointer.load(thread_id)
    if checkpoint is None or checkpoint.status != "suspended":
        return []
    return _pending_in(checkpointer, checkpoint, keys or StateKeys())


def _pending_in(checkpointer: Checkpointer, checkpoint: Checkpoint, keys: StateKeys) -> list[PendingApproval]:
    """The approvals a checkpoint waits for, with the decision stored (or in its state) for each."""
    thread_id, out = checkpoint.thread_id, []
    for pending_key, decisions_key in _slots(checkpoint, keys):
        in_state = checkpoint.state.get(decisions_key) or {}
        approvals = [Approval.model_validate(raw) for raw in checkpoint.state.get(pending_key) or []]
        stored = stored_decisions(checkpointer, thread_id, approvals)
        for approval in approvals:
            decided = in_state.get(approval.id)
            decision = stored.get(approval.id) or (
                ApprovalDecision.model_validate(decided) if decided else None
            )
            out.append(PendingApproval(thread_id=thread_id, approval=approval, decision=decision))
    return out


_HINT = "decide them (approve or deny) and resume the thread first, or run on another thread"


class ThreadSuspendedError(CheckpointError):
    """A fresh run on a thread that is suspended waiting for approvals: it would silently drop
    them (the model would read "not run: it was waiting for human approval"), so it is refused
    and the saved approvals are kept as they are."""

    def __init__(self, thread_id: str, waiting: list[PendingApproval], *, hint: str = _HINT) -> None:
        listed = ", ".join(
            f"{p.approval.id} ({p.approval.tool}, {verdict(p.decision) if p.decision else 'waiting'})"
            for p in waiting
        )
        super().__init__(
            f"thread {thread_id!r} is suspended waiting for approvals: {listed}; a new run would "
            f"discard them: {hint}"
        )
        self.thread_id = thread_id
        self.waiting = waiting


def refuse_fresh_run(
    checkpointer: Checkpointer, checkpoint: Checkpoint | None, *, keys: StateKeys | None = None
) -> None:
    """Raise ThreadSuspendedError when `checkpoint` is a thread suspended with pending approvals."""
    if checkpoint is None or checkpoint.status != "suspended":
        return
    waiting = _pending_in(checkpointer, checkpoint, keys or StateKeys())
    if waiting:
        raise ThreadSuspendedError(checkpoint.thread_id, waiting)


_DECIDABLE = ("suspended", "running")
"""A thread waits for approvals when suspended, or while still running other branches (or
after its process died)."""


def record_decision(
    checkpointer: Checkpointer,
    thread_id: str,
    approval_id: str,
    decision: object,
    *,
    keys: StateKeys | None = None,
) -> ApprovalDecision:
    """Store a decision for one approval of the thread (nothing runs; the checkpoint itself is
    not rewritten). A second decision on one approval is `AlreadyDecided`, also once the run has
    taken the first one and moved on."""
    keys = keys or StateKeys()
    parsed = parse_decision(decision)  # type: ignore[arg-type]
    checkpoint = checkpointer.load(thread_id)
    if checkpoint is None:
        raise ApprovalError(f"no checkpoint for thread {thread_id!r}")
    if checkpoint.status in _DECIDABLE:
        for pending_key, decisions_key in _slots(checkpoint, keys):
            for raw in checkpoint.state.get(pending_key) or []:
                if raw.get("id") != approval_id:
                    continue
                earlier = (checkpoint.state.get(decisions_key) or {}).get(approval_id)
                if earlier is not None:
                    raise AlreadyDecided(approval_id, ApprovalDecision.model_validate(earlier), thread_id)
                approval = Approval.model_validate(raw)
                check_answer(approval, parsed)
                check_edit(approval, parsed)
                return store_decision(checkpointer, thread_id, approval, parsed)
    stored = checkpointer.decisions(thread_id).get(approval_id)
    if stored is not None:  # decided, and the run has taken it since (resumed, maybe finished)
        raise AlreadyDecided(approval_id, ApprovalDecision.model_validate(stored.decision), thread_id)
    if checkpoint.status not in _DECIDABLE:
        raise ApprovalError(f"thread {thread_id!r} is not waiting for approvals (status {checkpoint.status})")
    waiting = [p.approval.id for p in list_pending(checkpointer, keys=keys) if p.thread_id == thread_id]
    raise unknown_approval(approval_id, f"thread {thread_id!r}", waiting)


# ---------------------------------------------------------------------------------- questions
class StoredQuestion(BaseModel):
    """A question a run's tool held open when its thread was last saved, and whether the process
    that asked it (the only one that can answer it) still runs."""

    thread_id: str
    question: Question
    owner: str | None = None
    """The asking process's claim on the thread (`checkpoint._owner`)."""
    alive: bool = False

    @property
    def expired(self) -> str | None:
        """Why it can no longer be answered (None: its process still waits for the answer)."""
        return None if self.alive else f"expired: {_ended(self.owner)}"


class QuestionExpired(InterruptionError):
    """An answer to a question that no process here holds open: its asking process ended
    (`expired`), or it is another live process (answer it there). Nothing is recorded: a
    tool's question is a live request of the process that asked it, not a row of the store."""

    def __init__(self, stored: StoredQuestion) -> None:
        question, thread = stored.question, stored.thread_id
        if stored.alive:
            message = (
                f"question {question.id!r} of thread {thread!r} waits in {_who(stored.owner)}, the "
                "process that asked it: answer it there (a tool's question is a live request of "
                "that process, not a record this one can answer)"
            )
        else:
            message = (
                f"question {question.id!r} of thread {thread!r} has expired: {_ended(stored.owner)}, "
                "and the tool call waiting for the answer ended with it; nothing was recorded. "
                "Resume the thread to go on: the call runs "
                "again if its tool is idempotent (and asks again), otherwise the model reads that "
                "its outcome is unknown"
            )
        super().__init__(message)
        self.stored = stored


def _ended(owner: str | None) -> str:
    """Why a stored question's asker is gone: its process ended, or (no owner: the run let go
    of the thread, cancelled or stopped) the run did."""
    if owner is None:
        return "the run that asked it has stopped (cancelled, or ended without its answer)"
    return f"the process that asked it ({_who(owner)}) has ended"


def _who(owner: str | None) -> str:
    decoded = Owner.decode(owner) if owner else None
    return decoded.describe() if decoded is not None else "unknown process"


def stored_questions(
    checkpointer: Checkpointer,
    *,
    thread_id: str | None = None,
    limit: int = 50,
    skip: Iterable[str] = (),
) -> list[StoredQuestion]:
    """The questions open in the newest version of `thread_id`, or of the `limit` most recently
    saved running threads (other than `skip`), oldest question first: what a run waits on that a
    process which does not hold it (a restarted server, another command) can list. Each says
    whether its asking process still runs (`alive`); one that does not is expired."""
    skipped = set(skip)
    if thread_id is not None:
        threads = [] if thread_id in skipped else [thread_id]
    else:
        heads = [h for h in checkpointer.heads() if h.status == "running" and h.thread_id not in skipped]
        heads.sort(key=lambda head: head.saved_at, reverse=True)
        threads = [head.thread_id for head in heads[:limit]]
    out: list[StoredQuestion] = []
    for tid in threads:
        checkpoint = checkpointer.load(tid)
        if checkpoint is None or checkpoint.status != "running" or not checkpoint.questions:
            continue
        owner = checkpoint.owner
        alive = owner is not None and owner_alive(owner)
        for raw in checkpoint.questions:
            question = Question.model_validate(raw)
            out.append(StoredQuestion(thread_id=tid, question=question, owner=owner, alive=alive))
    return sorted(out, key=lambda stored: stored.question.requested_at)


def refuse_stored_question(
    checkpointer: Checkpointer, question_id: str, thread_id: str | None = None, *, skip: Iterable[str] = ()
) -> None:
    """A `QuestionExpired` when the store lists `question_id` open (in `thread_id`, if given):
    the answer cannot reach it from here, and saying "unknown id" would hide why."""
    for stored in stored_questions(checkpointer, thread_id=thread_id, skip=skip):
        if stored.question.id == question_id:
            raise QuestionExpired(stored)
