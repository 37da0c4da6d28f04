"""The debugger's routes: the server's breakpoints and substitution rules, and a run's state to
read while it is paused.

Breakpoints are the server's, not one conversation's (as in Groot2, where they belong to the
tree): `POST /api/breakpoints` replaces them for every agent the server holds and every agent it
makes later. A rule on a status or an event type pauses before the next node entered after a node
finished with it or it was published (the pause's `arguments.trigger` says which). A pause is a
pending approval of kind `breakpoint`, listed by `GET /api/approvals` and decided by
`POST /api/approvals/{id}` like any other: `approve` continues (with `arguments` `{"step": true}`
to pause at the next node, `{"state": {...}}` to replace state keys first, checked against the
state schema: 422 when they do not fit), `deny` skips the node as a failure.

Substitution rules (`_run.substitutions`) are the server's the same way: `POST /api/substitutions`
replaces them for every agent, checked against the first agent's tree (a rule naming a node or a
tool it lacks is a 422 naming the rule, and nothing changes); `GET` lists them with `forced`, the
index path and status of each node a rule forces, which the console's drawing badges.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.requests import Request

from .._base.redact import redact
from .._base.validation import validation_problems
from .._run.breakpoints import BreakpointRule
from .._run.protocol import AgentLike
from .._run.substitutions import Substitution, UnknownTarget
from ._routes import ApiRoute, BadRequest
from ._runs import RunRegistry


class BreakpointList(BaseModel):
    """`GET`/`POST /api/breakpoints`: where every run of the server pauses (see `BreakpointRule`)."""

    model_config = ConfigDict(extra="forbid")

    breakpoints: list[dict[str, Any]]
    """Each `{"node": "<id, name or path>"}`, `{"tool": "<name>"}`, `{"status": "SUCCESS" or
    "FAILURE"}` (with a `node`, of that node only) or `{"event": "<catalogue event type>"}`."""


class SubstitutionList(BaseModel):
    """`GET`/`POST /api/substitutions`: the rules every run of the server applies."""

    model_config = ConfigDict(extra="forbid")

    substitutions: list[dict[str, Any]]
    """Each `{"node", "status"}` (forced unticked), `{"node", "reply"}` (a model node's reply
    scripted) or `{"tool", "output", "arguments"?}` (a tool's output scripted)."""
    forced: dict[str, str] = {}
    """Answer only: the index path of each node a rule forces, and its status (for the drawing)."""


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
        self.items: list[BreakpointRule] | None = None
        """None until set over HTTP: then the first agent's own (an agent file's `breakpoints:`)."""
        self.rules: list[Substitution] | None = None
        """The same for substitution rules (an agent file's `substitutions:`)."""
        self._agents: weakref.WeakSet[Any] = weakref.WeakSet()

    def factory(self, make: Callable[[], AgentLike]) -> Callable[[], AgentLike]:
        """`make`, whose agents take the server's breakpoints."""

        def made() -> AgentLike:
            agent = make()
            self._agents.add(agent)
            if self.items is None:
                self.items = list(agent.breakpoints.items)
            agent.breakpoints.set(self.items)
            if self.rules is None:
                self.rules = list(agent.substitutions.items)
            agent.substitutions.set(self.rules)
            return agent

        return made

    def set(self, raw: list[dict[str, Any]], sample: AgentLike | None = None) -> None:
        """Replace the breakpoints: each validated, and checked against `sample`'s tree."""
        items = checked_rules(raw, BreakpointRule, "breakpoints", sample.breakpoints if sample else None)
        self.items = items
        for agent in list(self._agents):
            agent.breakpoints.set(items)

    def set_rules(self, raw: list[dict[str, Any]], sample: AgentLike) -> None:
        """Replace the substitution rules: each validated, and checked against `sample`'s tree."""
        rules = checked_rules(raw, Substitution, "substitutions", sample.substitutions)
        self.rules = rules
        for agent in list(self._agents):
            agent.substitutions.set(rules)

    def rule_listing(self, sample: AgentLike) -> SubstitutionList:
        rules = self.rules or []
        return SubstitutionList(
            substitutions=[rule.model_dump(exclude_none=True) for rule in rules],
            forced=sample.substitutions.forced(),
        )

    def listing(self) -> BreakpointList:
        items = self.items or []
        return BreakpointList(breakpoints=[item.model_dump(exclude_none=True) for item in items])


Rule = TypeVar("Rule", BreakpointRule, Substitution)


class RuleSet(Protocol[Rule]):
    """An agent's rules of one kind (`agent.breakpoints`, `agent.substitutions`)."""

    @property
    def items(self) -> list[Rule]: ...

    def set(self, items: Iterable[Rule | dict[str, Any]]) -> None: ...


def checked_rules(
    raw: list[dict[str, Any]], model: type[Rule], field: str, served: RuleSet[Rule] | None
) -> list[Rule]:
    """The one rule for a list of debugger rules posted over HTTP (breakpoints, substitutions):
    each validated as `model`, then the whole list checked against the served tree (`served`: its
    rule set, set back as it was). A bad rule, or one naming a node or a tool the tree lacks, is a
    422 naming `field[index]` (and its key), and nothing changes."""
    noun = field.removesuffix("s")
    rules: list[Rule] = []
    for i, item in enumerate(raw):
        try:
            rules.append(model.model_validate(item))
        except ValidationError as exc:
            detail = [
                {"field": f"{field}[{i}]" + (f".{p.key}" if p.key else ""), "message": p.message}
                for p in validation_problems(exc, model=model)
            ]
            message = "; ".join(f"{d['field']}: {d['message']}" for d in detail)
            raise BadRequest(f"invalid {noun}: {message}", detail) from None
    if served is not None:
        before = list(served.items)
        try:
            served.set(rules)
        except UnknownTarget as exc:
            detail = [{"field": f"{field}[{exc.index}]", "message": exc.problem}]
            raise BadRequest(f"invalid {noun}: {exc}", detail) from None
        finally:
            served.set(before)
    return rules


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
        debugging.set(body.breakpoints, sample())
        return debugging.listing()

    async def get_substitutions(_request: Request, _body: None) -> SubstitutionList:
        return debugging.rule_listing(sample())

    async def set_substitutions(_request: Request, body: SubstitutionList) -> SubstitutionList:
        agent = sample()
        debugging.set_rules(body.substitutions, agent)
        return debugging.rule_listing(agent)

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
            "replace the breakpoints (a node, a tool, a status or an event type each)",
            BreakpointList,
            BreakpointList,
            errors=(422,),
            tag="debug",
        ),
        ApiRoute(
            "GET",
            "/api/substitutions",
            get_substitutions,
            "the rules that force nodes and script tool outputs",
            SubstitutionList,
            tag="debug",
        ),
        ApiRoute(
            "POST",
            "/api/substitutions",
            set_substitutions,
            "replace the substitution rules (a node's status or a tool's output each)",
            SubstitutionList,
            SubstitutionList,
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
