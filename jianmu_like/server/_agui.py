"""The AG-UI face: `POST /ag-ui` (and `/ag-ui/{agent}`, the served agent by name), the event
protocol front-ends such as CopilotKit drive an agent with (`ag-ui-protocol`, the `agui` extra).

A request is a `RunAgentInput`; the answer is a stream of AG-UI events (`server._agui_events`
says which), on the same run core as every other face: an AG-UI run is a run of the registry
(seen in the console and `GET /api/runs`), its `threadId` the server's thread (a conversation
continues when the front-end sends its next message with the same `threadId`), its `runId`
echoed on `RUN_STARTED` and `RUN_FINISHED` (the server's own run id is `RUN_STARTED`'s
`metadata.jianmu_run_id`). A request that repeats a `runId` of the thread (a front-end's retry)
streams the run that `runId` began again, from the same point: the agent does not run twice (the
last 10,000 are remembered).

What a request does, by what it carries:

- `resume` entries: answer the interrupts the thread's run stopped on, every one of them, then
  stream the run from there. An approval's payload is `{"decision": "approve" | "deny",
  "reason"?, "arguments"?}` (corrected arguments, with approve); `status: "cancelled"` denies.
  A question's (an MCP server's elicitation) is the values asked for, or `{"action": "decline" |
  "cancel"}`; `status: "cancelled"` cancels it.
- tool messages answering the front-end tool calls the thread's run waits for: their results
  resume it (the one client-tool mechanism of `/v1/`: `server._v1_runs`), a run waiting in the
  checkpoint store since an earlier server included.
- otherwise its last message is the user's next message: a new run, with the request's `tools`
  offered to the agent's model as front-end tools (client tools: a call of one ends the AG-UI run
  with `pendingToolCallIds`), and its `context` entries given to the model before the message.
  The messages before it start a new conversation's history; a thread the server holds keeps
  its own (front-ends resend the whole conversation every time).

`state` is the agent's, shown (read-only) by `STATE_SNAPSHOT`/`STATE_DELTA`: a request may send
back what it was last shown (front-ends echo their copy) or nothing; a changed state is refused,
not silently dropped (a browser writing an agent's state would bypass its tools and guard). A
thread this server has shown nothing yet (since a restart, say) cannot be compared: its state is
taken as the front-end's copy, which the run's `STATE_SNAPSHOT` replaces.
`forwardedProps` other than empty are refused: nothing here would read them.
Refusals before the stream starts are HTTP errors in the server's shape (422 naming the field,
409 for a thread that is busy or waits for something else, 404 for an unknown agent, 501 when
the `agui` extra is missing); a run that fails once started ends with `RUN_ERROR`. The same
token, Host and Origin rules as `/api/` apply. A front-end that closes the stream cancels the
run (as a chat UI's Stop does on `/v1/`).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from .._base.extras import MissingExtraError
from .._base.validation import validation_problems
from ..guard._approvals import InvalidEdit
from ..models._messages import Message, ToolCall, ai, human, system, tool_message
from ..nodes._client_tools import ClientTools
from ..tools._questions import ElicitationError
from ._client_tools import (
    ClientRequestError,
    FunctionDefinition,
    ToolAnswers,
    ToolSpec,
    client_calls,
    parse_client_tools,
)
from ._errors import error_response
from ._interruptions import answer_question
from ._routes import ApiRoute, BadRequest, read_body
from ._run_record import NotFound, RunConflict, RunRecord
from ._runs import RunRegistry
from ._v1_runs import StreamStops, resume_client_run, start_client_run

__all__ = ["AGUIRunInput", "agui_routes"]

PATH = "/ag-ui"
REMEMBERED = 10_000
"""Recent (threadId, runId) pairs remembered, so a retried request follows its run."""


class AGUIRunInput(BaseModel):
    """`POST /ag-ui`: AG-UI's `RunAgentInput` (camelCase; validated by `ag-ui-protocol`)."""

    model_config = ConfigDict(extra="allow")

    threadId: str
    runId: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    context: list[dict[str, Any]] | None = None
    state: Any = None
    forwardedProps: Any = None
    resume: list[dict[str, Any]] | None = None


class ApprovalAnswer(BaseModel):
    """The payload of a resume entry answering an approval."""

    model_config = ConfigDict(extra="forbid")

    decision: str
    reason: str = ""
    arguments: dict[str, Any] | None = None


def _invalid(field: str, message: str) -> BadRequest:
    return BadRequest(f"{field}: {message}", [{"field": field, "message": message}])


def _text(content: Any, field: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    texts = []
    for part in content:
        if getattr(part, "type", None) != "text":
            raise _invalid(
                field, f"a {getattr(part, 'type', '?')!r} content part is not accepted (the agent reads text)"
            )
        texts.append(str(part.text))
    return "".join(texts)


def conversation(messages: list[Any]) -> list[Message]:
    """The request's messages as the agent's (reasoning and activity messages are the front-end's
    rendering of earlier runs: skipped)."""
    history: list[Message] = []
    for index, message in enumerate(messages):
        field = f"messages[{index}].content"
        role = message.role
        if role == "user":
            history.append(human(_text(message.content, field)))
        elif role in ("system", "developer"):
            history.append(system(_text(message.content, field)))
        elif role == "assistant":
            calls = [
                ToolCall.from_raw(call.id, call.function.name, call.function.arguments)
                for call in message.tool_calls or ()
            ]
            history.append(ai(message.content or None, tool_calls=calls or None))
        elif role == "tool":
            history.append(tool_message(_text(message.content, field), message.tool_call_id))
    return history


def _client_tools(body: Any) -> ClientTools | None:
    specs = [
        ToolSpec(
            type="function",
            function=FunctionDefinition(
                name=tool.name, description=tool.description, parameters=tool.parameters
            ),
        )
        for tool in body.tools or ()
    ]
    try:
        return parse_client_tools(specs or None, None, None)
    except ClientRequestError as exc:
        raise _invalid(exc.param, str(exc)) from None


def agui_routes(registry: RunRegistry, model_name: Callable[[], str]) -> list[ApiRoute]:
    """The AG-UI routes over `registry`; `model_name()` names the served agent (`/ag-ui/{agent}`).
    `ag-ui-protocol` is imported on the first request; without it, a 501 naming the extra."""
    stops = StreamStops(registry)
    shown: dict[str, dict[str, Any]] = {}
    """The state each thread was last shown (a request may send it back)."""
    begun: OrderedDict[tuple[str, str], tuple[str, int, int]] = OrderedDict()
    """What each recent (threadId, runId) began: its server run and where its logs stood."""

    async def run(request: Request, _body: None) -> Response:
        wanted = request.path_params.get("agent")
        if wanted is not None and wanted != model_name():
            return error_response(404, f"no agent {wanted!r}: this server serves {model_name()!r} at {PATH}")
        try:
            from . import _agui_events as agui
        except MissingExtraError as exc:
            return error_response(501, str(exc))
        from ag_ui.core import RunAgentInput

        raw = await read_body(request, AGUIRunInput)
        try:
            body = RunAgentInput.model_validate(raw.model_dump(exclude_unset=True))
        except ValidationError as exc:
            problems = validation_problems(exc, model=RunAgentInput)
            detail = [{"field": p.key or "body", "message": p.message} for p in problems]
            raise BadRequest(
                "invalid RunAgentInput: " + "; ".join(f"{d['field']}: {d['message']}" for d in detail), detail
            ) from None
        thread = body.thread_id
        if not 1 <= len(thread) <= 200:
            raise _invalid("threadId", "must be 1 to 200 characters")
        retried = _again(thread, body.run_id)
        if retried is None:
            _check_state(body.state, shown.get(thread))
            if body.forwarded_props not in (None, {}):
                raise _invalid("forwardedProps", "not supported: this agent takes nothing forwarded; send {}")
        record, after, nodes_after = retried or _begin(body)
        begun[(thread, body.run_id)] = (record.run_id, after, nodes_after)
        while len(begun) > REMEMBERED:
            begun.popitem(last=False)
        events = agui.RunEvents(record, thread, body.run_id, nodes_after)
        encoder = agui.EventEncoder()

        async def stream() -> AsyncIterator[str]:
            for event in events.start():
                yield encoder.encode(_stamped(event))
            async for event in _events(record, events, after, agui):
                yield encoder.encode(_stamped(event))
            for gone in [t for t in shown if t not in registry.threads]:
                del shown[gone]  # conversations the server no longer holds
            shown[thread] = events.state

        return StreamingResponse(
            stops.watched(record, stream()),
            media_type=encoder.get_content_type(),
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    def _again(thread: str, run_id: str) -> tuple[RunRecord, int, int] | None:
        """A request with the `runId` of one already begun (a retry): the same run, streamed
        again from where that request began, never a second run."""
        found = begun.get((thread, run_id))
        record = registry.runs.get(found[0]) if found is not None else None
        if found is None or record is None:
            return None
        return record, found[1], found[2]

    def _begin(body: Any) -> tuple[RunRecord, int, int]:
        """Start or resume the run the request asks for; where its logs stood before."""
        thread = body.thread_id
        active = registry.active.get(thread)
        if body.resume:
            if active is None:
                raise _invalid("resume", f"no run of thread {thread!r} waits for an answer")
            after, nodes_after = len(active.log), len(active.node_log)
            _resume(active, body.resume)
            return active, after, nodes_after
        history = conversation(body.messages)
        waiting = client_calls(active) if active is not None else {}
        if active is not None and waiting:
            results = {
                str(m.tool_call_id): str(m.content or "")
                for m in history
                if m.role == "tool" and m.tool_call_id in waiting
            }
            if not results:
                raise RunConflict(
                    f"run {active.run_id} of thread {thread!r} waits for the results of front-end tool calls "
                    f"{', '.join(waiting)}: send a tool message answering each"
                )
            after, nodes_after = len(active.log), len(active.node_log)
            record, _after, _spent = resume_client_run(
                registry, ToolAnswers(results=results), thread, field="messages"
            )
            return record, after, nodes_after
        if history and history[-1].role == "tool" and not waiting:
            # The run waiting for these results is not in memory (this server restarted): one
            # waiting in the checkpoint store is resumed, as `/v1` resumes one (`resume_client_run`).
            trailing: dict[str, str] = {}
            for m in reversed(history):
                if m.role != "tool":
                    break
                trailing[str(m.tool_call_id)] = str(m.content or "")
            try:
                record, _after, _spent = resume_client_run(
                    registry, ToolAnswers(results=trailing), thread, field="messages"
                )
            except ClientRequestError as exc:
                raise _invalid(exc.param, str(exc)) from None
            return record, 0, 0
        if not history or history[-1].role != "user" or not history[-1].content:
            raise _invalid(
                "messages", "the last message must be the user's (or resume entries, or tool results)"
            )
        question = str(history[-1].content)
        if body.context:
            notes = "\n".join(f"- {c.description}: {c.value}" for c in body.context)
            question = f"Context:\n{notes}\n\n{question}"
        client = _client_tools(body)
        try:
            record = start_client_run(registry, question, thread, history[:-1], client, None)
        except ClientRequestError as exc:
            raise _invalid(exc.param, str(exc)) from None
        return record, 0, 0

    def _resume(record: RunRecord, entries: list[Any]) -> None:
        """Answer every interrupt the run waits for (checked whole before any is applied)."""
        waits = record.interruptions()  # the run's one listing (`GET /api/runs/{id}/interruptions`)
        questions = {item.id for item in waits if item.kind == "question"}
        approvals = {item.id for item in waits if item.kind != "question" and not item.decided}
        given = {entry.interrupt_id for entry in entries}
        unknown = sorted(given - approvals - set(questions))
        if unknown:
            raise _invalid(
                "resume",
                f"no interrupt {', '.join(map(repr, unknown))} waits (open: "
                f"{', '.join(sorted(approvals | set(questions))) or 'none'})",
            )
        missing = sorted((approvals | set(questions)) - given)
        if missing:
            raise _invalid(
                "resume", f"answer every interrupt of the run: {', '.join(map(repr, missing))} unanswered"
            )
        decisions: list[tuple[str, ApprovalAnswer]] = []
        answers: list[tuple[str, str, dict[str, Any] | None]] = []
        for index, entry in enumerate(entries):
            payload = entry.payload
            if entry.interrupt_id in approvals:
                if entry.status == "cancelled":
                    decisions.append(
                        (entry.interrupt_id, ApprovalAnswer(decision="deny", reason="cancelled"))
                    )
                    continue
                try:
                    answer = ApprovalAnswer.model_validate(payload)
                except ValidationError:
                    answer = None
                if answer is None or answer.decision not in ("approve", "deny"):
                    raise _invalid(
                        f"resume[{index}].payload",
                        'an approval is answered {"decision": "approve" | "deny", "reason"?, "arguments"?}',
                    )
                decisions.append((entry.interrupt_id, answer))
            elif entry.status == "cancelled":
                answers.append((entry.interrupt_id, "cancel", None))
            elif isinstance(payload, dict) and set(payload) <= {"action", "content"} and "action" in payload:
                answers.append((entry.interrupt_id, str(payload["action"]), payload.get("content")))
            elif isinstance(payload, dict):
                answers.append((entry.interrupt_id, "accept", payload))
            else:
                raise _invalid(
                    f"resume[{index}].payload",
                    "a question is answered with an object of the values asked for",
                )
        try:
            for question_id, action, content in answers:
                answer_question(record, question_id, action, content)  # the one answer path
            for approval_id, answer in decisions:
                registry.decide(
                    approval_id,
                    answer.decision == "approve",
                    answer.reason,
                    record.thread_id,
                    arguments=answer.arguments,
                )
        except (InvalidEdit, NotFound, ElicitationError) as exc:
            raise _invalid("resume", str(exc)) from None

    return [
        ApiRoute(
            "POST", PATH, run, "run the agent over AG-UI (a RunAgentInput; text/event-stream of AG-UI "
            "events)", None, AGUIRunInput, media_type="text/event-stream", errors=(404, 409, 422, 501),
            tag="ag-ui", read_body=False,
        ),
        ApiRoute(
            "POST", PATH + "/{agent}", run, "the same, for the served agent by name", None, AGUIRunInput,
            media_type="text/event-stream", errors=(404, 409, 422, 501), tag="ag-ui", read_body=False,
        ),
    ]  # fmt: skip


def _stamped(event: Any) -> Any:
    """The event with its creation time (milliseconds since the epoch, as AG-UI's SDKs set it)."""
    return event.model_copy(update={"timestamp": int(time.time() * 1000)})


def _check_state(state: Any, last: dict[str, Any] | None) -> None:
    """A request's `state` must be the one the thread was last shown (front-ends echo their
    copy). A thread this server has shown nothing (a restart, an evicted conversation, another
    server) has nothing to compare with: the state is taken as the front-end's copy, which the
    run's STATE_SNAPSHOT replaces; it is never written into the agent's state either way."""
    if state in (None, {}) or last is None or state == last:
        return
    raise _invalid(
        "state",
        "the agent's state is shown to the front-end (STATE_SNAPSHOT, STATE_DELTA), not written by it: "
        "send back the state last shown, or none",
    )


async def _events(record: RunRecord, events: Any, after: int, agui: Any) -> AsyncIterator[Any]:
    """The run's AG-UI events from its log position `after` to its end or its next wait."""
    async for message in record.follow(after):
        channel, data = message.event, message.data
        if channel == "approval" and data.get("status") == "pending":
            if record.status != "suspended":  # decided since
                continue
            pending = [item for item in record.pending() if not item["decided"]]
            people = [item for item in pending if item.get("kind") != "client_tool"]
            if people:
                for event in events.interrupted([agui.approval_interrupt(item) for item in people]):
                    yield event
            else:
                for event in events.client_calls(pending):
                    yield event
            return
        if channel == "approval" and data.get("status") == "elicitation":
            question = agui.question_interrupt(dict(data.get("elicitation") or {}))
            for event in events.interrupted([question]):
                yield event
            return
        if channel == "done":
            for event in events.finished(data):
                yield event
            return
        for event in events.channel(message):
            yield event
    for event in events.finished({"status": record.status, "error": record.error}):
        yield event
