"""GuardEnforcer: combines policies into one decision per requested tool call.

A policy is any callable `(call, tool, context) -> GuardDecision | Decision | bool | None`
(None/True: no objection; False: deny). Combination: the first DENY wins, else any PENDING,
else ALLOW.

The guard fails closed: a policy that names a tool (`tool_patterns()`) the agent does not have
is a `GuardConfigError`, not a rule that silently never applies (`require_approval` for
`send_mail` when the tool is `send_email` would let every e-mail go out unapproved). The agent
presets `attach` the enforcer to the agent's tool set when they build it: static tools are
checked there and then; tools that MCP servers list are checked when they are listed, before
the first model call (the tool set is not ready until the check passed).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ..errors import JianmuError
from ..models._messages import ToolCall
from ..tools._base import Tool
from ._decisions import Decision, GuardDecision

if TYPE_CHECKING:
    from ..tools._toolset import ToolSet


class GuardContext(BaseModel):
    """What a policy may look at besides the call itself."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    state: Any = None
    namespace: str | None = None
    tool_effects: list[str] = []
    calls_this_run: int = 0
    """Tool calls already run (or decided) in this run, earlier calls of the same batch included."""
    round: int = 0
    """The model round of this run whose calls are checked (1: the first; 0: unknown)."""
    now: float = Field(default_factory=time.time)
    """`time.time()` when the batch was checked (policies use it, so tests can pass a clock)."""


PolicyResult = GuardDecision | Decision | bool | None
Policy = Callable[[ToolCall, Tool | None, GuardContext], PolicyResult]


@runtime_checkable
class NamesTools(Protocol):
    """A policy that names tools (every `GuardPolicy`; a plain function names none): the
    enforcer checks the globs against the agent's tools when it is attached (asked once per
    attach, never per call: a runtime protocol check costs microseconds)."""

    def tool_patterns(self) -> tuple[str, ...]: ...


class GuardConfigError(ValueError, JianmuError):
    """A guard whose policies name tools the agent does not have; `problems` has one line each.

    Raised when the guard is attached to an agent (static tools) or when its MCP servers list
    their tools (before any model call); a run that meets it ends with kind "guard_error"."""

    failure_kind: ClassVar[str] = "guard_error"

    def __init__(self, problems: list[str]) -> None:
        super().__init__("the guard names tools the agent does not have: " + "; ".join(problems))
        self.problems = problems

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.problems,))


class GuardEnforcer:
    """Evaluates every policy for a call and combines the verdicts.

    `tools`: names of tools this enforcer guards besides those of the tool sets it is attached
    to, for one enforcer shared by agents with different tools (each agent's tool set is
    checked against the tools of all of them)."""

    def __init__(self, policies: Sequence[Policy] = (), *, tools: Iterable[str] = ()) -> None:
        self.policies = list(policies)
        self._known: set[str] = set(tools)
        """Names of the static tools of every agent this enforcer is attached to."""
        self._pending: list[ToolSet] = []
        """Attached tool sets whose providers (MCP servers) list their tools at run time."""
        self._deferred = False

    def with_policies(self, *policies: Policy) -> GuardEnforcer:
        """Another enforcer: these policies after this one's (the same objects, so stateful
        ones keep counting across both), for one agent that adds a rule of its own."""
        other = GuardEnforcer([*self.policies, *policies], tools=self._known)
        other._deferred = self._deferred
        return other

    def defer_check(self) -> None:
        """Check the tools when the agents run (before each one's first model call), not when
        attached: for one enforcer shared by agents of which some get their tools from MCP
        servers, so a rule for such a tool does not fail the build of another agent."""
        self._deferred = True

    # ------------------------------------------------------------------ tool names
    def tool_problems(self, names: Collection[str]) -> list[str]:
        """One line per tool pattern of a policy that matches none of `names`."""
        from ._policies import unknown_tool

        out: list[str] = []
        for policy in self.policies:
            patterns: tuple[str, ...] = policy.tool_patterns() if isinstance(policy, NamesTools) else ()
            for pattern in patterns:
                problem = unknown_tool(pattern, names)
                if problem is not None:
                    out.append(f"{_name(policy)}: {problem}")
        return out

    def attach(self, tools: ToolSet) -> None:
        """Guard the agent whose tools are `tools`. Static tools are checked now (raises
        `GuardConfigError`); with tool providers, the set is not ready until the check passed
        once they listed their tools (before the first model call)."""
        if tools.listed:
            self._known.update(tools.names())
        elif not any(pending is tools for pending in self._pending):
            self._pending.append(tools)
        if self._pending or self._deferred:
            tools.add_check(self._verify)
            return
        problems = self.tool_problems(self._known)
        if problems:
            raise GuardConfigError(problems)

    async def _verify(self) -> None:
        """The check at run time: every attached tool set listed, then their tools together."""
        names = set(self._known)
        for tools in self._pending:
            await tools.ensure_listed()
            names.update(tools.names())
        problems = self.tool_problems(names)
        if problems:
            raise GuardConfigError(problems)

    def check(self, call: ToolCall, tool: Tool | None, context: GuardContext) -> GuardDecision:
        """The combined decision for one call. A policy that raises denies the call."""
        pending: GuardDecision | None = None
        for policy in self.policies:
            try:
                result = policy(call, tool, context)
            except Exception as exc:
                name = _name(policy)
                return GuardDecision.deny(f"policy {name} failed: {type(exc).__name__}: {exc}", policy=name)
            verdict = _normalise(result, policy)
            if verdict.decision is Decision.DENY:
                return verdict
            if verdict.decision is Decision.PENDING and pending is None:
                pending = verdict
        return pending or GuardDecision.allow()

    def allowed(self, call: ToolCall, context: GuardContext) -> None:
        """Tell stateful policies (rate limits) that `call` is about to run."""
        for policy in self.policies:
            hook = getattr(policy, "on_allowed", None)
            if hook is not None:
                hook(call, context)


def _name(policy: Policy) -> str:
    name = getattr(policy, "name", None) or getattr(policy, "__name__", None) or type(policy).__name__
    return str(name)


def _normalise(result: PolicyResult, policy: Policy) -> GuardDecision:
    name = _name(policy)
    if result is None or result is True:
        return GuardDecision.allow()
    if result is False:
        return GuardDecision.deny(f"refused by policy {name}", policy=name)
    if isinstance(result, Decision):
        return GuardDecision(decision=result, reason=f"{result.value} by policy {name}", policy=name)
    return result
