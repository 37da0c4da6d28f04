"""Answering an MCP server's `elicitation/create`: the server asks the user for input mid-call.

A server may need something only a person can give (a choice, a confirmation, a name) while it
runs a tool. The request waits for an answer from outside the run: `pending()` lists the open
requests (with the JSON schema of what is asked), `respond(id, action, content)` answers one with
`accept` (and content valid against the schema), `decline` or `cancel`. Nothing hangs: a request
nobody answers within `elicitation_timeout` seconds is answered `cancel`, and a provider whose
config does not say `elicitation: ask` does not declare the capability (servers then do not ask).

A handler (`ElicitationBox.handler`, an async function of the request) answers requests in code
instead: a test, a UI that is not the framework's own, a policy.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from ...telemetry import events as ev
from .._errors import ToolError

if TYPE_CHECKING:
    from mcp.types import ElicitRequestParams, ElicitResult

Action = Literal["accept", "decline", "cancel"]


class ElicitationError(ToolError, ValueError):
    """A response that cannot be given: unknown request id, or content the schema refuses."""


class ElicitationRequest(BaseModel):
    """One open question from a server to the user."""

    id: str
    server: str
    message: str
    requested_schema: dict[str, Any] = Field(default_factory=dict)
    """The JSON schema (flat object of primitive fields) the accepted content must match."""
    url: str | None = None
    """URL-mode elicitation: the page the user should open (no content comes back)."""


class ElicitationAnswer(BaseModel):
    action: Action
    content: dict[str, Any] | None = None


Handler = Callable[[ElicitationRequest], Awaitable[ElicitationAnswer]]


class ElicitationBox:
    """The open requests of one provider and the way answers reach them."""

    def __init__(self, server: str, timeout: float) -> None:
        self.server = server
        self.timeout = timeout
        self.handler: Handler | None = None
        self._open: dict[str, tuple[ElicitationRequest, asyncio.Future[ElicitationAnswer]]] = {}
        self._ids = itertools.count(1)

    def pending(self) -> list[ElicitationRequest]:
        """Requests waiting for an answer, oldest first."""
        return [request for request, _ in self._open.values()]

    def respond(self, request_id: str, action: Action, content: Mapping[str, Any] | None = None) -> None:
        """Answer a pending request; `accept` content is checked against its schema first."""
        entry = self._open.get(request_id)
        if entry is None:
            known = ", ".join(self._open) or "none"
            raise ElicitationError(f"no pending elicitation {request_id!r} (pending: {known})")
        request, future = entry
        if action not in ("accept", "decline", "cancel"):
            raise ElicitationError(f"action must be accept, decline or cancel, not {action!r}")
        data = dict(content) if content is not None else None
        if action == "accept" and request.url is None:
            _check_content(request, data or {})
        if not future.done():
            future.get_loop().call_soon_threadsafe(
                _settle,
                future,
                ElicitationAnswer(action=action, content=data if action == "accept" else None),
            )

    async def ask(self, params: ElicitRequestParams, emit: Callable[..., None] | None) -> ElicitResult:
        """Put the server's request up for an answer and wait for it (at most `timeout`)."""
        from mcp.types import ElicitResult

        request = ElicitationRequest(
            id=f"{self.server}-{next(self._ids)}",
            server=self.server,
            message=params.message,
            requested_schema=_dump(getattr(params, "requested_schema", None)),
            url=getattr(params, "url", None),
        )
        if emit is not None:
            emit(ev.ELICITATION_REQUESTED, request=request.model_dump())
        future: asyncio.Future[ElicitationAnswer] = asyncio.get_running_loop().create_future()
        self._open[request.id] = (request, future)
        try:
            if self.handler is not None:
                answer = await asyncio.wait_for(self.handler(request), self.timeout)
                if answer.action == "accept" and request.url is None:
                    _check_content(request, answer.content or {})
            else:
                answer = await asyncio.wait_for(future, self.timeout)
        except TimeoutError:
            answer = ElicitationAnswer(action="cancel")
        except ElicitationError:
            answer = ElicitationAnswer(action="decline")  # a handler's invalid answer
        finally:
            self._open.pop(request.id, None)
        if emit is not None:
            emit(ev.ELICITATION_RESOLVED, id=request.id, server=self.server, action=answer.action)
        return ElicitResult(action=answer.action, content=answer.content)


def _settle(future: asyncio.Future[ElicitationAnswer], answer: ElicitationAnswer) -> None:
    if not future.done():
        future.set_result(answer)


def _dump(schema: Any) -> dict[str, Any]:
    if schema is None:
        return {}
    if isinstance(schema, BaseModel):
        return schema.model_dump(by_alias=True, exclude_none=True)
    return dict(schema)


def _check_content(request: ElicitationRequest, content: dict[str, Any]) -> None:
    """Accepted content must match the requested schema: the server would reject it otherwise."""
    from ..._json_schema import compile_schema, key_problems  # the one JSON-schema path

    try:
        validator = compile_schema(request.requested_schema, known_keywords=False)
    except ValueError as exc:
        raise ElicitationError(f"elicitation {request.id!r} has an invalid schema: {exc}") from None
    problems = key_problems(validator, content)
    if problems:
        lines = "; ".join(map(str, problems[:10]))
        raise ElicitationError(f"content for elicitation {request.id!r} does not match its schema: {lines}")
