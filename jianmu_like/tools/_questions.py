"""Questions put to a person while a tool call waits: the tools layer's half of an interruption.

A tool may need something only a person can give (a choice, a confirmation, a name) while it
runs: an MCP server's `elicitation/create` (`tools.mcp._elicitation` translates it into a
`Question` and the answer back), a sampling request a person decides (`sampling: ask`), a remote
A2A agent's `input-required` (`tools._a2a`). Each provider that asks keeps a `QuestionBox` (its
`elicitations` attribute); the run core finds the boxes with `boxes_of` and lists and answers
their questions as interruptions of kind `question` (`guard._interruptions`), beside approvals,
through the same listing and the same decide path. Nothing here knows MCP.

A question waits for an answer from outside the run: `pending()` lists the open ones (with the
JSON schema of what is asked), `respond(id, action, content)` answers one with `accept` (and
content valid against the schema), `decline` or `cancel`. Nothing hangs: a question nobody
answers within the box's `timeout` seconds is answered `cancel`.

A handler (`QuestionBox.handler`, an async function of the question) answers in code instead: a
test, a UI that is not the framework's own, a policy. Where no person can answer (a
`jianmu-like run` in a terminal), the handler is `no_human_channel`, which declines at once: an
unanswerable question never holds a tool call for its timeout.

A box is shared by every run that uses its provider (the clones of a served tree share their
tool sets), so each question keeps the runs it may belong to: the run of the asking task where
the question is asked in the tool call's own task (an A2A agent's), else the runs with a call in
flight through the box when it was asked (`calling`; an MCP server's request arrives in its
session's task, and the SDK tells the client nothing that links it to the call). A run lists,
answers and ends only the questions that may be its own (`pending(run)`, `release(run)`): one
that may still be another run's stays open for that run. A run inside another (an agent called
as a tool) counts as both: the calling run lists and answers its questions too. A question
asked while no run had a
call in flight (a provider used outside an agent) is nobody's in particular: every run lists it,
and the first run to end cancels it, as before runs were told apart.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from ..telemetry import _interruption_events as interruption_events
from ._errors import ToolError
from ._run_context import current_run

if TYPE_CHECKING:
    from ._toolset import ToolSet

Action = Literal["accept", "decline", "cancel"]


class ElicitationError(ToolError, ValueError):
    """An answer that cannot be given: unknown question id, or content the schema refuses (the
    name predates questions other than MCP elicitations; it is every question's error)."""


class UnknownElicitation(ElicitationError, LookupError):
    """No open question has this id (never asked, answered already, or timed out)."""

    def __init__(self, request_id: str, pending: Iterable[str]) -> None:
        known = ", ".join(pending) or "none"
        super().__init__(f"no pending elicitation {request_id!r} (pending: {known})")


class AlreadyAnswered(ElicitationError):
    """A question answered already (two answers at once: the first stands, the second is this)."""

    def __init__(self, request_id: str, action: str) -> None:
        super().__init__(f"question {request_id!r} is already answered ({action}); the first answer stands")
        self.action = action


class Question(BaseModel):
    """One open question from a tool (an MCP server, a remote agent) to a person."""

    id: str
    server: str
    message: str
    requested_schema: dict[str, Any] = Field(default_factory=dict)
    """The JSON schema (flat object of primitive fields) the accepted content must match."""
    url: str | None = None
    """URL-mode elicitation: the page the user should open (no content comes back)."""
    kind: Literal["elicitation", "sampling"] = "elicitation"
    """"sampling": the server asks the agent's model for a completion and a person decides
    (`sampling: ask`); accept lets the model answer, decline or cancel refuses."""
    details: dict[str, Any] = Field(default_factory=dict)
    """What a sampling request asks (messages, system prompt, max_tokens): for the person."""
    requested_at: float = Field(default_factory=time.time)


class QuestionAnswer(BaseModel):
    """A person's answer to one question: `accept` (with `content`), `decline` or `cancel`."""

    action: Action
    content: dict[str, Any] | None = None


Handler = Callable[[Question], Awaitable[QuestionAnswer]]


class QuestionBox:
    """The open questions of one provider and the way answers reach them."""

    def __init__(self, server: str, timeout: float, *, max_open: int = 4) -> None:
        self.server = server
        self.timeout = timeout
        self.max_open = max_open
        """Questions open at once; the provider refuses more (`full()`)."""
        self.handler: Handler | None = None
        self.watchers: list[Callable[[], Awaitable[None]]] = []
        """Awaited when a question opens and when it is answered (a run core with a checkpoint
        store saves then: the stored version lists what the run waits on)."""
        self._open: dict[str, tuple[Question, asyncio.Future[QuestionAnswer]]] = {}
        self._answered: dict[str, str] = {}
        """Open questions given an answer (its action) that the asking call has not taken yet."""
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._callers: Counter[str] = Counter()
        """The runs with a tool call in flight through this box now (how many calls each)."""
        self._runs: dict[str, set[str]] = {}
        """Each open question's candidate runs (empty: asked while no run had a call here)."""

    @contextmanager
    def calling(self) -> Iterator[None]:
        """Around a tool call of the current run whose questions may arrive in another task (an
        MCP server's, in its session's task): a question asked meanwhile may be this run's, and
        the runs it runs inside wait on it too (an agent called as a tool of another run)."""
        runs = _current_runs()
        for run in runs:
            self._callers[run] += 1
        try:
            yield
        finally:
            for run in runs:
                self._callers[run] -= 1
                if self._callers[run] <= 0:
                    del self._callers[run]

    def callers(self) -> frozenset[str]:
        """The runs with a call in flight through this box now (see `calling`)."""
        return frozenset(self._callers)

    def pending(self, run: str | None = None) -> list[Question]:
        """Requests waiting for an answer, oldest first; with `run`, only those that may be that
        run's (asked while it had a call in flight here, or while no run had one)."""
        return [
            request
            for request, _ in self._open.values()
            if run is None or not self._runs.get(request.id) or run in self._runs[request.id]
        ]

    def release(self, run: str) -> None:
        """Run `run` ended: it is no candidate of any question now. A question left with no
        candidate (only this run's, or nobody's in particular) is answered `cancel`: its answer
        would reach no run. One that may be another run's stays open for that run."""
        for request in self.pending(run):
            candidates = self._runs.get(request.id)
            if candidates:
                candidates.discard(run)
                if candidates:
                    continue
            with suppress(ElicitationError):  # answered meanwhile: that answer stands
                self.respond(request.id, "cancel")

    def respond(self, request_id: str, action: Action, content: Mapping[str, Any] | None = None) -> None:
        """Answer a pending request; `accept` content is checked against its schema first."""
        entry = self._open.get(request_id)
        if entry is None:
            raise UnknownElicitation(request_id, self._open)
        request, future = entry
        if action not in ("accept", "decline", "cancel"):
            raise ElicitationError(f"action must be accept, decline or cancel, not {action!r}")
        data = dict(content) if content is not None else None
        if action == "accept" and request.url is None:
            data = with_defaults(request.requested_schema, data)
            _check_content(request, data)
        with self._lock:  # two answers at once (threads, or HTTP and Python): the first stands
            first = self._answered.get(request_id)
            if first is not None or future.done():
                raise AlreadyAnswered(request_id, first or "cancel: it timed out")
            self._answered[request_id] = action
        if not future.done():
            future.get_loop().call_soon_threadsafe(
                _settle,
                future,
                QuestionAnswer(action=action, content=data if action == "accept" else None),
            )

    async def _changed(self) -> None:
        for watcher in list(self.watchers):
            await watcher()

    def full(self) -> bool:
        """`max_open` requests are open: the next is refused."""
        return len(self._open) >= self.max_open

    async def ask_human(
        self,
        *,
        message: str,
        requested_schema: dict[str, Any] | None = None,
        url: str | None = None,
        kind: Literal["elicitation", "sampling"] = "elicitation",
        details: Mapping[str, Any] | None = None,
        emit: Callable[..., None] | None = None,
        runs: Iterable[str] | None = None,
    ) -> QuestionAnswer:
        """One question up for a person's answer: the handler's, or `respond`'s within
        `timeout` (then `cancel`); events for the question and its answer. `runs`: the runs it
        may belong to; None where it is asked in the tool call's own task (the current run's)."""
        if runs is None:
            runs = _current_runs()
        request = Question(
            id=f"{self.server}-{next(self._ids)}",
            server=self.server,
            message=message,
            requested_schema=requested_schema or {},
            url=url,
            kind=kind,
            details=dict(details or {}),
        )
        if emit is not None:  # `interruption.requested`, and the older `elicitation.requested`
            interruption_events.requested(
                emit, id=request.id, kind="question", request=request.model_dump(mode="json")
            )
        future: asyncio.Future[QuestionAnswer] = asyncio.get_running_loop().create_future()
        self._open[request.id] = (request, future)
        self._runs[request.id] = set(runs)
        try:
            await self._changed()
            if self.handler is not None:
                answer = await asyncio.wait_for(self.handler(request), self.timeout)
                if answer.action == "accept" and request.url is None:
                    answer = answer.model_copy(
                        update={"content": with_defaults(request.requested_schema, answer.content)}
                    )
                    _check_content(request, answer.content or {})
            else:
                answer = await asyncio.wait_for(future, self.timeout)
        except TimeoutError:
            answer = QuestionAnswer(action="cancel")
        except ElicitationError:
            answer = QuestionAnswer(action="decline")  # a handler's invalid answer
        finally:
            self._open.pop(request.id, None)
            self._answered.pop(request.id, None)
            self._runs.pop(request.id, None)
        await self._changed()
        if emit is not None:
            interruption_events.decided(
                emit,
                id=request.id,
                kind="question",
                answer=shown_answer(request, answer),
                server=self.server,
            )
        return answer


def _current_runs() -> tuple[str, ...]:
    """The run of this task and the runs it runs inside (none outside a run): a question asked
    by an agent called as a tool is also the calling run's to list and answer."""
    try:
        return current_run().lineage()
    except RuntimeError:
        return ()


def shown_answer(question: Question, answer: QuestionAnswer) -> dict[str, Any]:
    """An answer as events show it (the tool gets it whole): a field the question's schema marks
    secret (`writeOnly`, `format: password`) or whose name says secret is `***`, and every value
    the configuration declares secret is redacted wherever it appears."""
    from .._base.redact import REDACTED, is_secret_key, redact_secrets_in

    shown = answer.model_dump(mode="json")
    content = shown.get("content")
    if isinstance(content, dict):
        fields = question.requested_schema.get("properties")
        fields = fields if isinstance(fields, Mapping) else {}
        shown["content"] = {
            name: REDACTED if _secret_field(fields.get(name)) or is_secret_key(name) else value
            for name, value in content.items()
        }
    redacted: dict[str, Any] = redact_secrets_in(shown)
    return redacted


def _secret_field(field: object) -> bool:
    """A schema field whose value is a secret: `writeOnly` (JSON Schema) or `format: password`."""
    if not isinstance(field, Mapping):
        return False
    return field.get("writeOnly") is True or field.get("format") == "password"


async def no_human_channel(request: Question) -> QuestionAnswer:
    """The handler where no person can answer (a `jianmu-like run`): decline at once, so the
    server's tool goes on (or fails) instead of waiting out `elicitation_timeout`."""
    return QuestionAnswer(action="decline")


def boxes_of(toolsets: Iterable[ToolSet]) -> list[QuestionBox]:
    """The elicitation boxes of the providers of `toolsets` (MCP providers have one)."""
    found = (getattr(p, "elicitations", None) for toolset in toolsets for p in toolset.providers)
    return [box for box in found if isinstance(box, QuestionBox)]


def close_human_channel(toolsets: Iterable[ToolSet]) -> None:
    """Where no person can answer: every box without a handler declines at once."""
    for box in boxes_of(toolsets):
        if box.handler is None:
            box.handler = no_human_channel


def pending_in(boxes: Iterable[QuestionBox], run: str | None = None) -> list[Question]:
    """Every open request of `boxes` (that may be `run`'s, with `run`), oldest first."""
    found = [request for box in boxes for request in box.pending(run)]
    return sorted(found, key=lambda request: request.requested_at)


def respond_in(
    boxes: Iterable[QuestionBox],
    request_id: str,
    action: Action,
    content: Mapping[str, Any] | None = None,
    run: str | None = None,
) -> Question:
    """Answer the open request `request_id` of one of `boxes` (that may be `run`'s, with `run`;
    see `QuestionBox.respond`); `ElicitationError` naming the open ones when none has it."""
    boxes = list(boxes)
    for box in boxes:
        for request in box.pending(run):
            if request.id == request_id:
                box.respond(request_id, action, content)
                return request
    raise UnknownElicitation(request_id, (request.id for request in pending_in(boxes, run)))


def _settle(future: asyncio.Future[QuestionAnswer], answer: QuestionAnswer) -> None:
    if not future.done():
        future.set_result(answer)


def with_defaults(schema: Mapping[str, Any], content: Mapping[str, Any] | None) -> dict[str, Any]:
    """`content` with the schema's `default` of every field it leaves out (SEP-1034): a person
    who accepts a form without touching a field accepts the value it showed."""
    filled = dict(content or {})
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, field in properties.items():
            if name not in filled and isinstance(field, Mapping) and "default" in field:
                filled[name] = field["default"]
    return filled


def _check_content(request: Question, content: dict[str, Any]) -> None:
    """Accepted content must match the requested schema: the server would reject it otherwise."""
    from .._base.json_schema import compile_schema, key_problems  # the one JSON-schema path

    try:
        validator = compile_schema(request.requested_schema, known_keywords=False)
    except ValueError as exc:
        raise ElicitationError(f"elicitation {request.id!r} has an invalid schema: {exc}") from None
    problems = key_problems(validator, content)
    if problems:
        lines = "; ".join(map(str, problems[:10]))
        raise ElicitationError(f"content for elicitation {request.id!r} does not match its schema: {lines}")
