"""The SSE channels of a run, mapped from the framework's telemetry events.

Browsers render a run from a handful of channels (`step`, `answer`, `reasoning`, `compact`,
`phase`, `inject`, `approval`, `artifact`, `done`), not from the framework's finer telemetry
(a tool's progress reports and an MCP server's log lines are `step` notes on its call);
this module is the one place that translates. It is stateful per run: it numbers iterations,
and makes sure the `answer` channel carries the run's final answer (`result.final_answer`,
also `done.answer`).

The answer channel's messages are `start`, `delta`s, `reset` and `done`. A streamed reply's
tokens go out live as deltas, before anyone knows whether that reply will be the answer; any
text that turns out not to be — thinking before tool calls, an attempt cut off and retried, a
final reply that the answer check or the output type re-asks, one held back by a follow-up, a
draft a synthesis phase rewrites — is withdrawn with one `reset` (the console empties the
answer) before the next text streams. `done` comes once, when the run ends, and its content is
the final answer: the streamed text when that is the answer, otherwise a reset and the whole
answer as one delta (a reply that was not streamed, the synthesis' stripped text). The answer's
`done` (and the run's `done`, as `answer_html`) also carries the answer's markdown as sanitised
HTML (`_markdown`), which a page may insert as is (null for an answer too long to render). A run that
ends without an answer withdraws whatever was streamed and sends no `done` on the channel.
"""

from __future__ import annotations

from typing import Any, Literal, assert_never

from .._base.redact import redact
from ..telemetry import events as ev
from ..telemetry.events import AnyEvent
from ._markdown import answer_html

Channel = Literal["step", "answer", "reasoning", "compact", "phase", "inject", "approval", "artifact", "done"]
CHANNELS: tuple[Channel, ...] = (
    "step",
    "answer",
    "reasoning",
    "compact",
    "phase",
    "inject",
    "approval",
    "artifact",
    "done",
)

Message = tuple[Channel, dict[str, Any]]
ARTIFACT_CHANNEL: Channel = "artifact"
"""The channel of the documents tools made (`server._artifacts` numbers them in its order)."""


class ChannelMapper:
    """Turns one run's telemetry events into (channel, payload) messages."""

    def __init__(self) -> None:
        self.iteration = 0
        self._streamed: list[str] = []
        """Deltas sent on the answer channel since its last start (what a client shows)."""
        self._held = False
        """The streamed text is a completed final reply, the answer unless more text follows."""
        self._answer_done = False
        self._tool_args: dict[str, Any] = {}
        self._questions: dict[str, dict[str, Any]] = {}
        """The open questions' payloads by id (their answer's message names the server)."""

    def map(self, event: AnyEvent) -> list[Message]:
        """The messages `event` amounts to (often none). A plain `Event` of a catalogue type (one
        built by hand) is read as its class; any other type has no channel."""
        typed = ev.typed(event)
        match typed:
            case ev.ReplyStarted():
                self.iteration += 1
                return [*self._withdraw(), ("step", self._step("thinking", "start"))]
            case ev.TextDelta(delta=delta):
                return self._delta(delta)
            case ev.TextReset(reasoning_discarded=discarded):
                if discarded:
                    return [*self._withdraw(), ("reasoning", self._reasoning("reset", ""))]
                return self._withdraw()
            case ev.ReasoningDelta(delta=delta):
                return [("reasoning", self._reasoning("delta", delta))]
            case ev.ReplyCompleted():
                return self._reply_completed(typed)
            case ev.ToolCallStarted(tool=tool, call_id=call_id, arguments=arguments):
                self._tool_args[call_id] = arguments
                step = self._step("iteration", "start", tool_name=tool, tool_args=arguments, call_id=call_id)
                return [("step", step)]
            case ev.ToolCallCompleted() | ev.ToolCallFailed():
                return [("step", self._tool_done(typed))]
            case ev.ToolProgress():  # a long tool call reporting (MCP progress): its card
                note: dict[str, Any] = {
                    "progress": typed.progress,
                    "total": typed.total,
                    "message": typed.message,
                }
                return [("step", self._tool_note("progress", typed.tool, typed.call_id, note))]
            case ev.MCPLog():  # an MCP server's log line while it works on a call
                note = {
                    "server": typed.server,
                    "level": typed.level,
                    "logger": typed.logger,
                    "data": typed.log_data,
                }
                return [("step", self._tool_note("log", typed.tool, typed.call_id, note))]
            case ev.Inject(status=status, content=content):
                inject: dict[str, Any] = {"type": "inject", "status": status, "content": content}
                if status == "applied":
                    inject["iteration"] = self.iteration
                return [("inject", inject)]
            case ev.ContextCompacted():
                return [("compact", _compact(typed))]
            case ev.Phase():
                return [("phase", _phase(typed))]
            case ev.ArtifactProduced():
                return [("artifact", typed.data)]
            case ev.InterruptionRequested(kind="question", id=question_id, request=request):
                # a question for a person: the human channel, as it opens (`elicitation` and its
                # fields: the message's older form, which the console's form reads)
                self._questions[question_id] = request
                question = {
                    "id": question_id,
                    "kind": "question",
                    "namespace": typed.namespace,
                    "state": "pending",
                    "requested_at": request.get("requested_at"),
                    "payload": request,
                }
                message = {"status": "elicitation", "elicitation": request, "interruptions": [question]}
                return [("approval", message)]
            case ev.InterruptionDecided(kind="question", id=question_id, answer=answer):
                asked = self._questions.pop(question_id, {})
                older = {"tool": typed.tool, "call_id": typed.call_id, "id": question_id}
                older.update(server=asked.get("server"), action=answer.get("action"))
                decided = {
                    "id": question_id,
                    "kind": "question",
                    "namespace": typed.namespace,
                    "state": "decided",
                    "answer": {"action": answer.get("action")},  # not its content (a person's data)
                }
                return [("approval", {"status": "elicitation_resolved", **older, "interruptions": [decided]})]
            case ev.InterruptionRequested(id=call_id, kind=kind, request=request):
                # a call starts to wait (or a pause): listed at once, while a parallel sibling may
                # still work; `pending` (every wait, when the run suspends) follows as before
                payload = dict(request)
                if "arguments" in payload:  # like every event: no secrets in streams
                    payload["arguments"] = redact(payload["arguments"])
                waiting = {
                    "id": call_id,
                    "kind": kind,
                    "namespace": typed.namespace,
                    "state": "pending",
                    "requested_at": request.get("requested_at"),
                    "payload": payload,
                }
                return [("approval", {"status": "requested", "interruptions": [waiting]})]
            case (
                ev.RunStarted()
                | ev.RunResumed()
                | ev.RunCompleted()
                | ev.ThreadRepaired()
                | ev.ModelCallStarted()
                | ev.ModelCallRetry()
                | ev.ModelCallCompleted()
                | ev.ModelCallFailure()
                | ev.ApprovalRequested()
                | ev.ApprovalResolved()
                | ev.ElicitationRequested()  # the older events of a question: interruption.* above
                | ev.ElicitationResolved()
                | ev.InterruptionDecided()  # a waiting call's: the `decided` message lists it
                | ev.ToolCapReached()
                | ev.MCPSampling()
                | ev.MCPTask()
                | ev.LoopIteration()
                | ev.LoopTerminated()
                | ev.NodeFailure()
                | ev.ParallelStarted()
                | ev.OutputValidated()
                | ev.OutputInvalid()
                | ev.AnswerRejected()
                | ev.AnswerFallback()
                | ev.PlanCreated()
                | ev.PlanStepStarted()
                | ev.PlanStepCompleted()
                | ev.SupervisorPlanned()
                | ev.SupervisorFollowUps()
                | ev.CriticReview()
                | ev.CriticFailed()
                | ev.SupervisorPruned()
                | ev.ReflectionCompleted()
                | ev.ReflectionFailed()
                | ev.ReplayForked()
                | ev.Substituted()
            ):  # the finer telemetry has no channel of its own
                return []
            case None:  # a type of the user's own
                return []
            case _:  # a new event type: say above whether it has a channel (mypy asks)
                assert_never(typed)

    def finish(
        self,
        *,
        answer: str | None,
        status: str,
        usage: dict[str, Any],
        elapsed: float,
        termination: dict[str, Any] | None,
        error: str | None,
    ) -> list[Message]:
        """The closing messages of a run: the answer channel's `done` with the final answer
        (after a reset and the whole answer when the streamed text is not it), then `done`."""
        messages: list[Message] = []
        html = answer_html(answer)
        if not self._answer_done:
            shown = "".join(self._streamed)
            if answer is not None and self._streamed and shown.strip() == answer.strip():
                messages.append(("answer", {"status": "done", "content": answer, "html": html}))
            else:
                messages.extend(self._withdraw())
                if answer is not None:
                    messages.extend(self._whole_answer(answer, html))
            self._answer_done = True
        done = {
            "answer": answer,
            "answer_html": html,
            "status": status,
            "iterations": self.iteration,
            "usage": usage,
            "elapsed": elapsed,
            "termination": termination,
            "error": error,
        }
        messages.append(("done", done))
        return messages

    # ------------------------------------------------------------------ helpers
    def _step(self, type_: str, status: str, **fields: Any) -> dict[str, Any]:
        return {"type": type_, "status": status, "iteration": self.iteration, **fields}

    def _tool_note(self, status: str, tool: str, call_id: str, note: dict[str, Any]) -> dict[str, Any]:
        """`step` `iteration` `progress` / `log` (extensions of FIM One's table): a note on the
        running call's card, named by its `call_id` and `tool_name`."""
        return self._step("iteration", status, tool_name=tool, call_id=call_id, **note)

    def _tool_done(self, event: ev.ToolCallCompleted | ev.ToolCallFailed) -> dict[str, Any]:
        """`step` `iteration` `done`: the call's card closed with its observation or its error."""
        args = self._tool_args.pop(event.call_id, None)
        done = self._step("iteration", "done", tool_name=event.tool)
        if isinstance(event, ev.ToolCallFailed):
            done.update(tool_args=args or event.arguments, call_id=event.call_id, observation=None)
            done.update(error=event.error, iter_elapsed=None, denied=event.denied)
        else:
            done.update(tool_args=args, call_id=event.call_id, observation=event.output)
            done.update(error=None, iter_elapsed=event.duration, denied=False)
        return done

    def _reasoning(self, status: str, content: str) -> dict[str, Any]:
        return {"status": status, "iteration": self.iteration, "content": content}

    def _delta(self, delta: str) -> list[Message]:
        if not delta or self._answer_done:
            return []
        messages = self._withdraw() if self._held else []  # a later call rewrites the answer
        if not self._streamed:
            messages.append(("answer", {"status": "start", "content": ""}))
        self._streamed.append(delta)
        messages.append(("answer", {"status": "delta", "content": delta}))
        return messages

    def _withdraw(self) -> list[Message]:
        """The text on the answer channel is not the answer (see the module): empty it."""
        self._held = False
        if not self._streamed or self._answer_done:
            return []
        self._streamed = []
        return [("answer", {"status": "reset", "content": ""})]

    def _reply_completed(self, event: ev.ReplyCompleted) -> list[Message]:
        """`thinking` `done`: `reasoning` as FIM One's table means it (the text beside the tool
        calls, falling back to the model's own reasoning), `reasoning_content` that reasoning."""
        final = event.final
        reasoning = event.reasoning
        thought = None if final else event.content
        messages: list[Message] = [
            (
                "step",
                self._step("thinking", "done", reasoning=thought or reasoning, reasoning_content=reasoning),
            )
        ]
        if not final:  # the streamed text was thinking before tool calls, not the answer
            return [*messages, *self._withdraw()]
        messages.append(("step", self._step("answer", "start")))
        self._held = bool(self._streamed)  # the answer until a later reply or the run's end says
        return messages

    def _whole_answer(self, answer: str, html: str | None) -> list[Message]:
        return [
            ("answer", {"status": "start", "content": ""}),
            ("answer", {"status": "delta", "content": answer}),
            ("answer", {"status": "done", "content": answer, "html": html}),
        ]


# FIM One's protocol names these payloads' fields; the telemetry's own names stay as extra fields.
def _compact(event: ev.ContextCompacted) -> dict[str, Any]:
    """`compact`: `original_messages` and `kept_messages` (the event's `messages_before` and
    `messages_after`), then the rest of the event."""
    return {
        "original_messages": event.messages_before,
        "kept_messages": event.messages_after,
        **event.data,
    }


def _phase(event: ev.Phase) -> dict[str, Any]:
    """`phase`: the phase's name and, when it chooses among tools, `total_tools` (the event's
    `total`)."""
    payload = {"phase": event.phase, **event.data}
    if event.total is not None:
        payload["total_tools"] = event.total
    return payload
