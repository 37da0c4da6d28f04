"""What the served runs wait for someone to answer, over HTTP: one listing, one answer route.

Every way a run waits for someone is an interruption (`guard._interruptions`): a tool call
waiting for a person's decision (`approval`) or for its client's result (`client_tool`), a
question a tool puts to a person (`question`: an MCP server's elicitation, a sampling request
under `sampling: ask`, a remote agent's question). The routes:

- `GET /api/interruptions`: every interruption of every run kept, oldest first, each with its
  run and conversation; `GET /api/runs/{run_id}/interruptions`: one run's;
- `POST /api/interruptions/{id}`: the answer, whatever the kind: `{"decision": "approve" |
  "deny", "reason"?, "arguments"?}` for an approval (`{"output": ...}` for a client tool's call),
  `{"action": "accept" | "decline" | "cancel", "content"?}` for a question; `run_id` or
  `thread_id` names the run when the id waits in several. An answer of the other kind's form is
  a 422; an unknown id a 404 naming what waits; a decided one a 409.

An approval's answer takes the approval path (`RunRegistry.decide`: stored first, the run resumes
once every call is decided); a question's reaches the tool waiting on it through the run's agent
(`Agent.decide`). The older routes (`/api/approvals`, `/api/runs/{run_id}/elicitations`) stay, as
views of the same records.

A question lives in the process that asked it (a live request of a tool call); with a checkpoint
store it is saved with its thread, so a restarted server (or another one on the store) lists it
too, with `run_id` null and, once the asking process has ended, `expired` saying so: answering it
then is a 409 that says to resume the thread (nothing is recorded as answered), as is answering
one that another live process holds.

The events of both kinds reach the run's event stream on one channel, `approval` (the human
channel): each message there carries `interruptions`, the records
it concerns (`pending` / `decided` with their answer), beside the fields it always had.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from starlette.requests import Request
from starlette.responses import Response

from .._base.redact import redact, redact_secrets_in
from .._run.review import PendingApproval, QuestionExpired, StoredQuestion, stored_questions
from ..checkpoint._store import CheckpointError
from ..guard._approvals import ApprovalDecision, InvalidEdit
from ..guard._interruptions import from_approval
from ..tools._questions import AlreadyAnswered, ElicitationError, Question, UnknownElicitation
from ._errors import error_response
from ._routes import ApiRoute, BadRequest
from ._run_record import NotFound, RunConflict, RunRecord
from ._runs import RunRegistry
from ._schemas import ServedInterruption, ServedRunStatus
from ._stored_threads import STORED_LIMIT
from ._watch import log


class InterruptionList(BaseModel):
    """`GET /api/interruptions`: what every run kept waits for, oldest first."""

    interruptions: list[ServedInterruption]


class RunInterruptions(BaseModel):
    """`GET /api/runs/{run_id}/interruptions`: what one run waits for."""

    run_id: str
    interruptions: list[ServedInterruption]


class InterruptionAnswer(BaseModel):
    """`POST /api/interruptions/{id}`: the answer to one interruption, in its kind's form."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["approve", "deny"] | None = None
    """An approval's (or a client tool call's denial)."""
    reason: str = ""
    arguments: dict[str, Any] | None = None
    """With `approve`: corrected arguments (checked against the tool's schema: 422)."""
    output: str | None = None
    """A client tool call's result, instead of a decision."""
    action: Literal["accept", "decline", "cancel"] | None = None
    """A question's."""
    content: dict[str, Any] | None = None
    """With `accept`: the values asked for, valid against the question's `requested_schema`."""
    run_id: str | None = Field(default=None, min_length=1, max_length=200)
    thread_id: str | None = Field(default=None, min_length=1, max_length=200)

    @model_validator(mode="after")
    def _one_form(self) -> InterruptionAnswer:
        forms = [self.decision is not None, self.output is not None, self.action is not None]
        if sum(forms) != 1:
            raise ValueError("give one answer: a decision (approve | deny), an output, or an action")
        if self.arguments is not None and self.decision != "approve":
            raise ValueError("arguments come with an approval (decision 'approve')")
        if self.content is not None and self.action != "accept":
            raise ValueError("content comes with action 'accept', not with a decline or cancel")
        if self.reason and self.action is not None:
            raise ValueError("a question's answer takes no reason")
        return self

    @property
    def answers_a_question(self) -> bool:
        return self.action is not None


class InterruptionAnswered(BaseModel):
    """The answer is taken: what it answered, and the run's status now."""

    run_id: str | None
    """None: a stored thread that still waits for other answers (it resumes once all are)."""
    id: str
    kind: str
    status: ServedRunStatus


def answer_question(record: RunRecord, question_id: str, action: str, content: Any) -> Question:
    """Give an open question of `record` its answer through the run's agent (`Agent.decide`):
    a RunConflict for a finished run or an answered question, NotFound for an unknown id,
    `ElicitationError` for content its schema refuses (the question stays open)."""
    if record.finished:
        raise RunConflict(
            f"run {record.run_id!r} has finished ({record.status}): nothing waits for an answer"
        )
    for question in record.agent.pending_elicitations():
        if question.id == question_id:
            try:
                record.agent.decide(question_id, {"action": action, "content": content})  # the one path
            except AlreadyAnswered as exc:  # two answers at once: the first stands (409)
                raise RunConflict(str(exc), answer=exc.action) from None
            return question
    open_ids = [q.id for q in record.agent.pending_elicitations()]
    raise NotFound(f"run {record.run_id!r}: {UnknownElicitation(question_id, open_ids)}")


def stored_interruption(pending: PendingApproval) -> ServedInterruption:
    """An interruption of a thread the store holds suspended (no run here holds it yet)."""
    payload = from_approval(pending.approval).payload.model_dump(mode="json")
    payload["arguments"] = redact(payload.get("arguments"))  # like every event
    return ServedInterruption(
        id=pending.approval.id,
        kind=pending.approval.kind,
        run_id=None,
        thread_id=pending.thread_id,
        requested_at=pending.approval.requested_at,
        decided=pending.decision is not None,
        payload=payload,
    )


def questions_in_store(registry: RunRegistry, thread_id: str | None = None) -> list[StoredQuestion]:
    """The questions the store's running threads that no run here holds have open (a run of an
    earlier server, of another process): of `thread_id`, or of the most recently saved."""
    sample = registry.stored.sample
    agent = sample() if sample is not None else None
    if agent is None or agent.checkpointer is None:
        return []
    try:
        return stored_questions(
            agent.checkpointer, thread_id=thread_id, limit=STORED_LIMIT, skip=registry.active
        )
    except CheckpointError as exc:
        log.warning("cannot read the store's open questions", error=str(exc))
        return []


def stored_question(stored: StoredQuestion) -> ServedInterruption:
    """A question of a thread no run here holds, as listed (redacted like every event)."""
    return ServedInterruption(
        id=stored.question.id,
        kind="question",
        run_id=None,
        thread_id=stored.thread_id,
        requested_at=stored.question.requested_at,
        expired=stored.expired,
        payload=redact_secrets_in(stored.question.model_dump(mode="json")),
    )


def asks(record: RunRecord, question_id: str) -> bool:
    """Whether a tool of `record`'s run holds the question `question_id` open."""
    return any(question.id == question_id for question in record.agent.pending_elicitations())


def interruption_routes(registry: RunRegistry) -> list[ApiRoute]:
    """The interruption routes over `registry`, as entries of the server's route table."""

    def kept(run_id: str | None, thread_id: str | None) -> list[RunRecord]:
        return [
            record
            for record in list(registry.runs.values())
            if (run_id is None or record.run_id == run_id)
            and (thread_id is None or record.thread_id == thread_id)
        ]

    async def list_all(_request: Request, _body: None) -> InterruptionList:
        items = [item for record in kept(None, None) for item in record.interruptions()]
        items += [stored_interruption(p) for p in registry.stored.pending()]
        items += [stored_question(q) for q in questions_in_store(registry)]
        items.sort(key=lambda item: item.requested_at)
        return InterruptionList(interruptions=items)

    async def list_run(request: Request, _body: None) -> RunInterruptions:
        record = registry.get(request.path_params["run_id"])
        return RunInterruptions(run_id=record.run_id, interruptions=record.interruptions())

    async def answer(request: Request, body: InterruptionAnswer) -> InterruptionAnswered | Response:
        interruption_id = request.path_params["interruption_id"]
        if body.run_id is not None:
            registry.get(body.run_id)  # an unknown run: 404 naming it
        records = kept(body.run_id, body.thread_id)
        asking = [r for r in records if not r.finished and asks(r, interruption_id)]
        if len(asking) > 1:
            runs = ", ".join(sorted(r.run_id for r in asking))
            raise RunConflict(
                f"question {interruption_id!r} is open in several runs ({runs}); name one: run_id"
            )
        if asking:
            record = asking[0]
            if not body.answers_a_question:
                raise BadRequest(
                    f"{interruption_id!r} is a question: answer it with an action (accept, decline, cancel)",
                    [{"field": "action", "message": "a question is answered with an action"}],
                )
            try:
                answer_question(record, interruption_id, str(body.action), body.content)
            except ElicitationError as exc:
                return error_response(422, str(exc), detail=[{"field": "content", "message": str(exc)}])
            return InterruptionAnswered(
                run_id=record.run_id, id=interruption_id, kind="question", status=record.status
            )
        held = [q for q in questions_in_store(registry, body.thread_id) if q.question.id == interruption_id]
        if held and body.run_id is None:  # asked by a process gone (or another one): not here
            if not body.answers_a_question:
                raise BadRequest(
                    f"{interruption_id!r} is a question: answer it with an action (accept, decline, cancel)",
                    [{"field": "action", "message": "a question is answered with an action"}],
                )
            gone = QuestionExpired(held[0])
            raise RunConflict(str(gone), thread_id=held[0].thread_id, expired=not held[0].alive)
        if body.answers_a_question:
            waiting = [r for r in records if interruption_id in r.waiting()]
            if waiting:
                raise BadRequest(
                    f"{interruption_id!r} is a tool call waiting for a decision: answer it with "
                    '"decision" (approve | deny), or "output" for a client tool\'s call',
                    [{"field": "decision", "message": "an approval is answered with a decision"}],
                )
            pending = ", ".join(f"{i.id} (run {i.run_id})" for r in records for i in r.interruptions())
            raise NotFound(f"no open question {interruption_id!r} (pending: {pending or 'none'})")
        thread_id = body.thread_id
        if body.run_id is not None:
            thread_id = registry.get(body.run_id).thread_id
        kinds = {i.id: i.kind for r in records for i in r.interruptions()}
        if interruption_id not in kinds:  # maybe a thread the store holds suspended
            kinds.update((p.approval.id, p.approval.kind) for p in registry.stored.pending(thread_id))
        decision = ApprovalDecision(
            approved=body.decision != "deny", reason=body.reason, arguments=body.arguments, output=body.output
        )
        try:
            decided = registry.decide_anywhere(interruption_id, decision, thread_id)
        except InvalidEdit as exc:
            raise BadRequest(str(exc), [{"field": "arguments", "message": str(exc)}]) from None
        kind = kinds.get(interruption_id, "approval")
        if decided is None:  # a stored thread that still waits for other answers
            return InterruptionAnswered(run_id=None, id=interruption_id, kind=kind, status="suspended")
        status = decided.status
        return InterruptionAnswered(run_id=decided.run_id, id=interruption_id, kind=kind, status=status)

    return [
        ApiRoute(
            "GET", "/api/interruptions", list_all, "what every run waits for someone to answer "
            "(approvals, client tool calls, questions), oldest first", InterruptionList, tag="interruptions",
        ),
        ApiRoute(
            "GET", "/api/runs/{run_id}/interruptions", list_run, "what one run waits for",
            RunInterruptions, errors=(404,), tag="interruptions",
        ),
        ApiRoute(
            "POST", "/api/interruptions/{interruption_id}", answer, "answer one interruption: a "
            "decision for an approval, an output for a client tool's call, an action for a question",
            InterruptionAnswered, InterruptionAnswer, errors=(404, 409, 422), tag="interruptions",
        ),
    ]  # fmt: skip
