"""What a run waits for someone to answer, listed and answered in one place.

The run core's side of `guard._interruptions`: the approvals and client tool calls in the state
(`Approvals`, stored and checkpointed) and the questions the run's tools hold open
(`tools._questions`, live in this process), as one list of `Interruption`s and one `decide`.
With a checkpoint store, the open questions are saved with the thread (a version when one opens
and when it is answered): another process lists them, and one whose asking process ended is
listed as expired and refused with a `QuestionExpired` saying what to do (`_run.review`).
The run core reaches questions through the generic question boxes of its tool sets, never
through MCP types (an import contract in pyproject.toml keeps `jianmu_like._run` off `mcp`).
The boxes are shared by every clone of a tree (a served agent's concurrent runs), so a run lists,
answers, stores and ends only the questions that may be its own (`QuestionBox.pending(run)`):
another run's open question is never listed with this one's, nor cancelled when this one ends.

(Not to be confused with `interrupts`: the follow-ups a caller injects into a running loop.)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from ..checkpoint._recorder import RunRecorder
from ..guard._interruptions import (
    Interruption,
    InterruptionError,
    from_approval,
    from_question,
    parse_question_answer,
)
from ..tools._questions import (
    Action,
    Question,
    QuestionBox,
    boxes_of,
    pending_in,
    respond_in,
)
from ..tools._toolset import ToolSet
from .approvals import Approvals
from .review import refuse_stored_question


class Interruptions:
    """The interruptions of one run core: its approvals and its tools' open questions."""

    def __init__(self, approvals: Approvals, toolsets: Callable[[], Iterable[ToolSet]]) -> None:
        self._approvals = approvals
        self._toolsets = toolsets
        self.run_id = ""
        """The run in progress (or the last one): its questions are the ones listed (before the
        first run, none is: only a question no run's call asked, which is everyone's)."""

    def boxes(self) -> list[QuestionBox]:
        return boxes_of(self._toolsets())

    def watch(self, watcher: Callable[[], Awaitable[None]]) -> None:
        """Await `watcher` whenever a question of the run's tools opens or is answered."""
        for box in self.boxes():
            if watcher not in box.watchers:
                box.watchers.append(watcher)

    def cancel_open(self) -> None:
        """The run ended (finished, suspended, cancelled): answer its tools' open questions
        `cancel`. A question may wait outside the tool call's task (an MCP server's request waits
        in its session), so halting the call does not end it; left open, an answer would reach
        nobody and still be reported as taken. One that may be another run's (asked while both
        had a call in flight on the server) stays open for it (`QuestionBox.release`)."""
        for box in self.boxes():
            box.release(self.run_id)

    def saved_questions(self) -> list[dict[str, Any]]:
        """The open questions as a checkpoint keeps them (`Checkpoint.questions`)."""
        return [question.model_dump(mode="json") for question in self.questions()]

    def questions(self) -> list[Question]:
        """The open questions of the run's tools that may be its own, oldest first."""
        return pending_in(self.boxes(), self.run_id)

    def pending(self) -> list[Interruption]:
        """Everything the run waits on: the waiting tool calls (top level first), then the open
        questions, oldest first."""
        waiting = [from_approval(approval, ns) for ns, approval in self._approvals.waiting()]
        return waiting + [from_question(question) for question in self.questions()]

    def decide(
        self, interruption_id: str, answer: Any, *, recorder: RunRecorder | None, thread_id: str | None
    ) -> Interruption:
        """Answer one interruption, whatever its kind (`Agent.decide`); the interruption answered.

        A question's answer reaches the tool that waits on it at once; an approval's is recorded
        (stored first with a checkpointer) and wakes the tree. An id nothing waits on is an
        `ApprovalError` naming what does wait."""
        for question in self.questions():
            if question.id == interruption_id:
                return self.answer_question(question, answer)
        waiting = {approval.id: from_approval(approval, ns) for ns, approval in self._approvals.waiting()}
        questions = self.questions()
        if interruption_id not in waiting and recorder is not None:  # asked by a process gone?
            refuse_stored_question(recorder.checkpointer, interruption_id, thread_id)
        if interruption_id not in waiting and questions:
            pending = ", ".join([*waiting, *(q.id for q in questions)])
            raise InterruptionError(f"unknown interruption id {interruption_id!r} (pending: {pending})")
        self._approvals.decide(interruption_id, answer, recorder=recorder, thread_id=thread_id)
        return waiting[interruption_id]

    def answer_question(self, question: Question, answer: Any) -> Interruption:
        """Give one open question its answer (checked against its schema first)."""
        parsed = parse_question_answer(answer)
        self.respond(question.id, parsed.action, parsed.content)
        return from_question(question)

    def respond(self, question_id: str, action: Action, content: Mapping[str, Any] | None) -> Question:
        """Answer the open question `question_id` (`UnknownElicitation` naming the open ones)."""
        return respond_in(self.boxes(), question_id, action, content, self.run_id)
