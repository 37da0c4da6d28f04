"""The questions MCP servers put to a person mid-call, over HTTP: list them, answer them.

An elicitation (`elicitation: ask`) or a sampling request put to a person (`sampling: ask`)
lives in the running agent, while a server's tool call waits for the answer: unlike an approval
it suspends nothing and is never stored, so it is reached through its run. These routes are the
questions' view of the interruption routes (`server._interruptions`: `GET /api/interruptions`
lists them beside approvals, `POST /api/interruptions/{id}` answers either), kept for the
console and the command line:

- `GET /api/elicitations`: every open question of every run kept, oldest first;
- `GET /api/runs/{run_id}/elicitations`: those of one run;
- `POST /api/runs/{run_id}/elicitations/{id}` `{"action": "accept" | "decline" | "cancel",
  "content": {...}}`: the answer; accepted content is checked against the requested schema
  (422 naming the fields, and the question stays open); an unknown id is a 404 naming the open
  ones, a finished run a 409.

Each question and its answer also reach the run's event stream on the `approval` channel (the
human channel): `{"status": "elicitation", "elicitation": {...}}` and
`{"status": "elicitation_resolved", "id": ..., "action": ...}` (see `server._channels`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator
from starlette.requests import Request
from starlette.responses import Response

from .._base.redact import redact_secrets_in
from ..tools._questions import ElicitationError
from ._errors import error_response
from ._interruptions import answer_question
from ._routes import ApiRoute
from ._run_record import RunRecord
from ._runs import RunRegistry


class ElicitationResponse(BaseModel):
    """`POST /api/runs/{run_id}/elicitations/{id}`: a person's answer to one open question."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None
    """With `accept`: the values asked for, valid against the question's `requested_schema`."""

    @model_validator(mode="after")
    def _content_is_accepted(self) -> ElicitationResponse:
        if self.content is not None and self.action != "accept":
            raise ValueError("content comes with action 'accept', not with a decline or cancel")
        return self


class OpenQuestion(BaseModel):
    """One open question (an `ElicitationRequest` of the tools layer) with its run and conversation."""

    model_config = ConfigDict(extra="allow")

    id: str
    kind: str
    requested_at: float
    run_id: str
    thread_id: str | None = None


class ElicitationList(BaseModel):
    """`GET /api/elicitations`: every open question of every run kept, oldest first."""

    elicitations: list[OpenQuestion]


class RunElicitations(BaseModel):
    """`GET /api/runs/{run_id}/elicitations`: one run's open questions."""

    run_id: str
    elicitations: list[OpenQuestion]


class ElicitationAnswered(BaseModel):
    """The answer was delivered to the server that asked."""

    run_id: str
    id: str
    kind: str
    action: Literal["accept", "decline", "cancel"]


def run_elicitations(record: RunRecord) -> list[OpenQuestion]:
    """The open questions of one run, each with its run and conversation."""
    if record.finished:
        return []
    return [
        OpenQuestion.model_validate(
            {
                **redact_secrets_in(request.model_dump(mode="json")),  # a server's text may quote one
                "run_id": record.run_id,
                "thread_id": record.thread_id,
            }
        )
        for request in record.agent.pending_elicitations()
    ]


def elicitation_routes(registry: RunRegistry) -> list[ApiRoute]:
    """The elicitation routes over `registry`, as entries of the server's route table."""

    async def list_all(_request: Request, _body: None) -> ElicitationList:
        items = [item for record in list(registry.runs.values()) for item in run_elicitations(record)]
        items.sort(key=lambda item: item.requested_at)
        return ElicitationList(elicitations=items)

    async def list_run(request: Request, _body: None) -> RunElicitations:
        record = registry.get(request.path_params["run_id"])
        return RunElicitations(run_id=record.run_id, elicitations=run_elicitations(record))

    async def respond(request: Request, body: ElicitationResponse) -> ElicitationAnswered | Response:
        record = registry.get(request.path_params["run_id"])
        try:  # the answer route of every interruption, for a question of this run
            answered = answer_question(
                record, request.path_params["elicitation_id"], body.action, body.content
            )
        except ElicitationError as exc:
            return error_response(422, str(exc), detail=[{"field": "content", "message": str(exc)}])
        return ElicitationAnswered(
            run_id=record.run_id, id=answered.id, kind=answered.kind, action=body.action
        )

    return [
        ApiRoute(
            "GET", "/api/elicitations", list_all, "open questions of MCP servers to a person, every run",
            ElicitationList, tag="elicitations",
        ),
        ApiRoute(
            "GET", "/api/runs/{run_id}/elicitations", list_run, "one run's open questions",
            RunElicitations, errors=(404,), tag="elicitations",
        ),
        ApiRoute(
            "POST", "/api/runs/{run_id}/elicitations/{elicitation_id}", respond, "answer an open "
            "question (accept with content valid against its schema, decline or cancel)",
            ElicitationAnswered, ElicitationResponse, errors=(404, 409, 422), tag="elicitations",
        ),
    ]  # fmt: skip
