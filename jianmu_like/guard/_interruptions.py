"""Interruptions: every way a run waits for someone, as one record.

A run waits for someone in a few ways: a tool call a guard policy marked PENDING waits for a
person's decision (`approval`), a call of a tool the client offered waits for the client's result
(`client_tool`), a tool waits for a person's answer to a question (`question`: an MCP server's
elicitation, a sampling request put to a person, a remote agent's `input-required`), and a
debugger's breakpoint waits for someone to continue. Each is an `Interruption`: an `id`, a `kind`,
the `payload` of that kind (what the person is shown) and, per kind, the model of its answer.
One listing (`Agent.pending_interruptions()`, `GET /api/interruptions`) shows them side by side,
one call answers any of them (`Agent.decide(id, answer)`, `POST /api/interruptions/{id}`), and
the server streams them on one SSE channel (`approval`, the human channel).

The kinds are a registry, not a hard-wired union: `KINDS` maps each kind's name to its
`InterruptionKind` (payload model, answer model, the parser of an answer's shorthand forms). To
add one, declare its payload and answer models and call
`register_kind(InterruptionKind("name", Payload, Answer, parse))` where the kind is defined;
listing, validation from JSON and the decide path then know it. The kinds registered here (a
breakpoint is, for now, a waiting `Approval` of kind `breakpoint`, see `_run.breakpoints`):

| kind          | payload            | answer (`parse` accepts)                                       |
|---------------|--------------------|----------------------------------------------------------------|
| `approval`    | `Approval`         | `ApprovalDecision` (True/"approve", False/"deny", ("deny", why)) |
| `client_tool` | `Approval`         | `ApprovalDecision` with `output` (the client's result)         |
| `breakpoint`  | `Approval`         | `ApprovalDecision` (approve: go on; deny: the node fails)      |
| `question`    | `Question`         | `QuestionAnswer` ("accept"/"decline"/"cancel", or a mapping)   |

Where each lives differs and stays so: an approval (and a client tool's call) is plain state,
checkpointed and decidable from another process (`jianmu-like approvals`, the store); a question
is a live request of the tool call that asks it, answerable only in the process that asked it.
With a checkpoint store it is saved with the thread (`Checkpoint.questions`), so another process
lists it: as waiting while the asking process runs, as `expired` once that process has ended
(an answer is then refused with `QuestionExpired`, which says to resume the thread; nothing is
recorded as answered). A run that ends answers its open questions `cancel`. The record and the
decide path are the same.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, SerializeAsAny, model_validator

from ..tools._questions import ElicitationError, Question, QuestionAnswer
from ._approvals import Approval, ApprovalDecision, ApprovalError, parse_decision


@dataclass(frozen=True)
class InterruptionKind:
    """One kind of interruption: what it shows (`payload`), what answers it (`answer`), and how
    an answer's shorthand forms (a bool, a verb, a mapping) become the `answer` model."""

    name: str
    payload: type[BaseModel]
    answer: type[BaseModel]
    parse: Callable[[Any], BaseModel]
    description: str = ""


KINDS: dict[str, InterruptionKind] = {}
"""Every kind an interruption may have, by name (see `register_kind`)."""


def register_kind(kind: InterruptionKind) -> InterruptionKind:
    """Make `kind` known to the listing, to validation from JSON and to the decide path; the same
    name registered twice with other models is a ValueError (two meanings for one kind)."""
    known = KINDS.get(kind.name)
    if known is not None and (known.payload, known.answer) != (kind.payload, kind.answer):
        raise ValueError(f"interruption kind {kind.name!r} is registered already, with other models")
    KINDS[kind.name] = kind
    return kind


def kind_of(name: str) -> InterruptionKind:
    """The registered kind `name`; an InterruptionError naming the known ones otherwise."""
    kind = KINDS.get(name)
    if kind is None:
        known = ", ".join(sorted(KINDS))
        raise InterruptionError(f"unknown interruption kind {name!r} (known: {known})")
    return kind


class InterruptionError(ApprovalError):
    """An interruption id nothing waits on, or a kind nobody registered (an `ApprovalError`, so
    callers that caught an unknown approval id keep catching it)."""


class Interruption(BaseModel):
    """One thing a run waits for someone to answer (see the module docstring for the kinds)."""

    model_config = ConfigDict(frozen=True)

    id: str
    """The id the answer names (an approval's is its tool call's id; a question's its box's)."""
    kind: str
    """A registered kind (`KINDS`): approval, client_tool, question, or one added later."""
    payload: SerializeAsAny[BaseModel]
    """What the run waits on, as that kind's model (an `Approval`, a `Question`...)."""
    namespace: str | None = None
    """The state namespace of the agent that waits (None: the top level, or not in the state)."""
    requested_at: float = 0.0
    expired: str | None = None
    """Why it can no longer be answered, for one read from a store: a question whose asking
    process ended (a tool's question is a live request of that process). None: it waits."""

    @model_validator(mode="before")
    @classmethod
    def _payload_of_its_kind(cls, data: Any) -> Any:
        """From JSON (a listing, a stored record) the payload is validated as its kind's model."""
        if isinstance(data, Mapping) and isinstance(data.get("kind"), str):
            payload = data.get("payload")
            kind = kind_of(data["kind"])
            if not isinstance(payload, kind.payload):
                return {**data, "payload": kind.payload.model_validate(payload)}
        return data

    def parse_answer(self, value: Any) -> BaseModel:
        """`value` as this kind's answer model (its shorthand forms accepted); a ValueError
        saying what the kind takes otherwise."""
        return kind_of(self.kind).parse(value)

    @property
    def approval(self) -> Approval | None:
        """The waiting tool call, for an `approval` or a `client_tool`."""
        return self.payload if isinstance(self.payload, Approval) else None

    @property
    def question(self) -> Question | None:
        """The open question, for a `question`."""
        return self.payload if isinstance(self.payload, Question) else None


def from_approval(approval: Approval, namespace: str | None = None) -> Interruption:
    """A waiting tool call (an approval or a client tool's call) as an interruption."""
    return Interruption(
        id=approval.id,
        kind=approval.kind,
        payload=approval,
        namespace=namespace if namespace is not None else approval.namespace,
        requested_at=approval.requested_at,
    )


def from_question(question: Question, expired: str | None = None) -> Interruption:
    """An open question as an interruption (`expired`: why it can no longer be answered)."""
    return Interruption(
        id=question.id,
        kind="question",
        payload=question,
        requested_at=question.requested_at,
        expired=expired,
    )


def parse_question_answer(value: Any) -> QuestionAnswer:
    """A question's answer: a `QuestionAnswer`, a mapping `{"action": ..., "content"?: ...}`, or
    the action alone ("accept" / "decline" / "cancel"); an `ElicitationError` otherwise."""
    if isinstance(value, QuestionAnswer):
        return value
    if isinstance(value, str) and value in ("accept", "decline", "cancel"):
        return QuestionAnswer(action=value)
    if isinstance(value, Mapping):
        try:
            return QuestionAnswer.model_validate(dict(value))
        except ValueError as exc:
            raise ElicitationError(f"not an answer to a question: {exc}") from None
    raise ElicitationError(
        f"a question is answered with accept (and content), decline or cancel, not {value!r}"
    )


register_kind(InterruptionKind("approval", Approval, ApprovalDecision, parse_decision, "a person's decision"))
register_kind(
    InterruptionKind("client_tool", Approval, ApprovalDecision, parse_decision, "the client's result")
)
register_kind(  # a run paused before a node ticks (`_run.breakpoints`): approve goes on, deny fails it
    InterruptionKind("breakpoint", Approval, ApprovalDecision, parse_decision, "someone to continue")
)
register_kind(
    InterruptionKind("question", Question, QuestionAnswer, parse_question_answer, "a person's answer")
)
