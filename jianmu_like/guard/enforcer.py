"""GuardEnforcer: combines policies into one decision per requested tool call.

A policy is any callable `(call, tool, context) -> GuardDecision | Decision | bool | None`
(None/True: no objection; False: deny). Combination: the first DENY wins, else any PENDING,
else ALLOW.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..models.messages import ToolCall
from ..tools.base import Tool
from .decisions import Decision, GuardDecision


class GuardContext(BaseModel):
    """What a policy may look at besides the call itself."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    state: Any = None
    namespace: str | None = None
    tool_effects: list[str] = []
    calls_this_run: int = 0
    """Tool calls already run (or decided) in this run, earlier calls of the same batch included."""
    now: float = Field(default_factory=time.time)
    """`time.time()` when the batch was checked (policies use it, so tests can pass a clock)."""


PolicyResult = GuardDecision | Decision | bool | None
Policy = Callable[[ToolCall, Tool | None, GuardContext], PolicyResult]


class GuardEnforcer:
    """Evaluates every policy for a call and combines the verdicts."""

    def __init__(self, policies: Sequence[Policy] = ()) -> None:
        self.policies = list(policies)

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
