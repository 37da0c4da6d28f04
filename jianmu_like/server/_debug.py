"""The debugger's routes: the server's breakpoints, and a run's state to read while it is paused.

Breakpoints are the server's, not one conversation's (as in Groot2, where they belong to the
tree): `POST /api/breakpoints` replaces them for every agent the server holds and every agent it
makes later. A pause is a pending approval of kind `breakpoint`, listed by `GET /api/approvals`
and decided by `POST /api/approvals/{id}` like any other: `approve` continues (with `arguments`
`{"step": true}` to pause at the next node, `{"state": {...}}` to replace state keys first, checked
against the state schema: 422 when they do not fit), `deny` skips the node as a failure.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.requests import Request

from .._redact import redact
from .._run.breakpoints import Breakpoint
from .._run.protocol import AgentLike
from .._validation import validation_problems
from ._routes import ApiRoute, BadRequest
from ._runs import RunRegistry


class BreakpointList(BaseModel):
    """`GET`/`POST /api/breakpoints`: where every run of the server pauses (see `Breakpoint`)."""

    model_config = ConfigDict(extra="forbid")

    breakpoints: list[dict[str, Any]]
    """Each `{"node": "<id, name or path>"}` or `{"tool": "<name>"}`."""


class RunState(BaseModel):
    """`GET /api/runs/{run_id}/state`: the run's state now (secrets redacted) and its schema, so
    a paused run's state can be read, and edited through its pause's decision."""

    run_id: str
    status: str
    state: dict[str, Any]
    state_schema: dict[str, Any]
    """The state's JSON Schema (what an edit is checked against)."""


class Debugging:
    """The server's breakpoints, applied to every agent it makes (held weakly)."""

    def __init__(self) -> None:
        self.items: list[Breakpoint] | None = None
        """None until set over HTTP: then the first agent's own (an agent file's `breakpoints:`)."""
        self._agents: weakref.WeakSet[Any] = weakref.WeakSet()

    def factory(self, make: Callable[[], AgentLike]) -> Callable[[], AgentLike]:
        """`make`, whose agents take the server's breakpoints."""

        def made() -> AgentLike:
            agent = make()
            self._agents.add(agent)
            if self.items is None:
                self.items = list(agent.breakpoints.items)
            agent.breakpoints.set(self.items)
            return agent

        return made

    def set(self, raw: list[dict[str, Any]]) -> None:
        items: list[Breakpoint] = []
        for i, item in enumerate(raw):
            try:
                items.append(Breakpoint.model_validate(item))
            except ValidationError as exc:
                problems = validation_problems(exc, model=Breakpoint)
                detail = [
                    {"field": f"breakpoints[{i}]" + (f".{p.key}" if p.key else ""), "message": p.message}
                    for p in problems
                ]
                message = "; ".join(f"{d['field']}: {d['message']}" for d in detail)
                raise BadRequest(f"invalid breakpoint: {message}", detail) from None
        self.items = items
        for agent in list(self._agents):
            agent.breakpoints.set(items)

    def listing(self) -> BreakpointList:
        items = self.items or []
        return BreakpointList(breakpoints=[item.model_dump(exclude_none=True) for item in items])


def debug_routes(
    registry: RunRegistry, debugging: Debugging, sample: Callable[[], AgentLike]
) -> list[ApiRoute]:
    """`GET`/`POST /api/breakpoints` and `GET /api/runs/{run_id}/state`; `sample()` is the
    server's first agent, whose own breakpoints (an agent file's) the server starts with."""

    async def get_breakpoints(_request: Request, _body: None) -> BreakpointList:
        if debugging.items is None:
            sample()
        return debugging.listing()

    async def set_breakpoints(_request: Request, body: BreakpointList) -> BreakpointList:
        debugging.set(body.breakpoints)
        return debugging.listing()

    async def run_state(request: Request, _body: None) -> RunState:
        record = registry.get(request.path_params["run_id"])
        sm = record.agent.state_manager
        return RunState.model_validate(
            {
                "run_id": record.run_id,
                "status": record.status,
                "state": redact(sm.state.model_dump(mode="json", by_alias=True)),
                "state_schema": sm.schema.model_json_schema(),
            }
        )

    return [
        ApiRoute(
            "GET", "/api/breakpoints", get_breakpoints, "where every run pauses", BreakpointList, tag="debug"
        ),
        ApiRoute(
            "POST",
            "/api/breakpoints",
            set_breakpoints,
            "replace the breakpoints (a node or a tool each)",
            BreakpointList,
            BreakpointList,
            errors=(422,),
            tag="debug",
        ),
        ApiRoute(
            "GET",
            "/api/runs/{run_id}/state",
            run_state,
            "a run's state now, and its schema",
            RunState,
            errors=(404,),
            tag="debug",
        ),
    ]
