"""Guard policies: small rules a `GuardEnforcer` consults before every tool call runs.

Each policy owns one concern (which tools, which argument values, how often, how many per run,
which calls a human must approve) and answers with a `GuardDecision` that names it, so a
denial tells the model exactly which rule it hit and what to change. Combine them in a
`GuardEnforcer` (the first DENY wins, else any PENDING, else ALLOW), or build them from a YAML
`guard:` section with `policies_from_config`. Tool names are matched with case-sensitive
globs (`fnmatch` syntax: `search*`, `fs_?`, `[ab]_tool`).

Your own policy is a decorated function (True/None: no objection, False: deny)::

    @policy(name="office_hours")
    def office_hours(call: ToolCall, tool: Tool | None, context: GuardContext) -> bool:
        if tool is None or "network" not in tool.effect_tags:
            return True
        return 9 <= time.localtime().hour < 18

or a `GuardPolicy` subclass, when it needs configuration or state::

    class OnlyNamespace(GuardPolicy):
        def __init__(self, namespace: str) -> None:
            self.name, self.namespace = f"only_namespace({namespace})", namespace
        def __call__(self, call: ToolCall, tool: Tool | None, context: GuardContext) -> GuardDecision:
            ok = context.namespace == self.namespace
            return GuardDecision.allow() if ok else GuardDecision.deny("wrong namespace", self.name)
"""

from __future__ import annotations

import fnmatch
import functools
import math
import os
import re
import threading
import time
from abc import ABC, abstractmethod
from bisect import bisect_right, insort
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, overload

from .._base.names import did_you_mean
from ..models._messages import ToolCall
from ..tools._base import Tool
from ._decisions import Decision, GuardDecision
from ._enforcer import GuardContext, Policy, PolicyResult
from ._value_schema import ValueSchema

__all__ = [
    "AllowList",
    "ArgumentRule",
    "Breakpoint",
    "DenyList",
    "FunctionPolicy",
    "GuardPolicy",
    "MaxToolCalls",
    "RateLimit",
    "RequireApproval",
    "policy",
]

_ALLOW = GuardDecision.allow()


class GuardPolicy(ABC):
    """Base of the built-in policies: a callable with a readable `name` for decision reasons."""

    name: str

    @abstractmethod
    def __call__(self, call: ToolCall, tool: Tool | None, context: GuardContext) -> GuardDecision: ...

    def tool_patterns(self) -> tuple[str, ...]:
        """The tool globs this policy names. The enforcer checks them against the agent's tools
        when it is attached: a rule for a tool the agent does not have is an error, never a
        silently idle rule (a typo in `require_approval` would otherwise turn approval off)."""
        return ()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


# --- helpers -----------------------------------------------------------------------------------


class _Globs:
    """Tool-name globs, matched case-sensitively: tool names are, on every platform."""

    def __init__(self, patterns: str | Iterable[str], what: str) -> None:
        items = (patterns,) if isinstance(patterns, str) else tuple(patterns)
        for pattern in items:
            if not isinstance(pattern, str) or not pattern:
                raise ValueError(f"{what}: a tool pattern must be a non-empty string, got {pattern!r}")
        self.patterns = items
        joined = "|".join(f"(?:{fnmatch.translate(p)})" for p in items)
        self._regex = re.compile(joined) if items else None

    def matches(self, name: str) -> bool:
        return self._regex is not None and self._regex.match(name) is not None

    def matches_any(self, names: Iterable[str]) -> bool:
        return any(self.matches(name) for name in names)

    def __str__(self) -> str:
        return ", ".join(self.patterns)


_LISTED = 20
"""Tool names listed at most in an error about a rule that names none of them."""


def unknown_tool(pattern: str, names: Collection[str]) -> str | None:
    """Why the tool glob `pattern` matches none of `names` (the agent's tools), or None."""
    if _Globs(pattern, "tool pattern").matches_any(names):
        return None
    shown = sorted(names)
    listing = ", ".join(shown[:_LISTED]) + (f", ... ({len(shown)} tools)" if len(shown) > _LISTED else "")
    tools = f"the agent's tools: {listing}" if shown else "the agent has no tools"
    if any(char in pattern for char in "*?["):
        return f"the pattern {pattern!r} matches none of the agent's tools ({tools})"
    return f"unknown tool {pattern!r}{did_you_mean(pattern, shown)} ({tools})"


def _now(context: GuardContext) -> float:
    """`context.now` when the executor set it (tests pin the clock there), else the wall clock.

    0 counts as unset: it is the field's default, and no real check happens at the epoch.
    """
    now = getattr(context, "now", None)
    return float(now) if now else time.time()


def _calls_this_run(context: GuardContext) -> int:
    return int(getattr(context, "calls_this_run", 0) or 0)


def _seconds(value: float) -> str:
    """Seconds for a message, rounded up to 0.1 so a wait never reads as "0 s"."""
    return f"{math.ceil(round(max(value, 0.0), 6) * 10) / 10:g}"


def _shown(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _callable_name(fn: Callable[..., Any]) -> str | None:
    name = getattr(fn, "__name__", None)
    return name if isinstance(name, str) and name != "<lambda>" else None


# --- which tools -------------------------------------------------------------------------------


class AllowList(GuardPolicy):
    """Only tools matching one of the globs may run: new or provider-added tools stay off."""

    def __init__(self, patterns: str | Iterable[str], *, name: str = "allow_list") -> None:
        self.globs = _Globs(patterns, "AllowList")
        self.name = name

    def tool_patterns(self) -> tuple[str, ...]:
        return self.globs.patterns

    def __call__(self, call: ToolCall, tool: Tool | None, context: GuardContext) -> GuardDecision:
        if self.globs.matches(call.name):
            return _ALLOW
        return GuardDecision.deny(f"tool '{call.name}' is not in the allow-list", self.name)


class DenyList(GuardPolicy):
    """Tools matching any of the globs never run."""

    def __init__(self, patterns: str | Iterable[str], *, name: str = "deny_list") -> None:
        self.globs = _Globs(patterns, "DenyList")
        self.name = name

    def tool_patterns(self) -> tuple[str, ...]:
        return self.globs.patterns

    def __call__(self, call: ToolCall, tool: Tool | None, context: GuardContext) -> GuardDecision:
        if self.globs.matches(call.name):
            return GuardDecision.deny(f"tool '{call.name}' is in the deny-list", self.name)
        return _ALLOW


# --- argument values ---------------------------------------------------------------------------


class ArgumentRule(GuardPolicy):
    """Constrains one argument of the tools matching the glob `tool`.

    Every given constraint is checked and every violation is reported in one reason, so the
    model can fix the call in one go. A missing (or null) argument passes unless `required`:
    the tool's own schema decides whether it may be omitted. `message` replaces the generated
    reason, e.g. to explain the house rule behind a predicate.

    `path_under` resolves the value with `os.path.realpath` (relative paths against the current
    working directory, as the OS would open them), so `..` and symlinks cannot lead outside
    `dir`; a leading `~` must stay inside too, in case the tool expands it.
    """

    def __init__(
        self,
        tool: str,
        argument: str,
        *,
        predicate: Callable[[Any], bool] | None = None,
        pattern: str | re.Pattern[str] | None = None,
        schema: Mapping[str, Any] | bool | None = None,
        path_under: str | os.PathLike[str] | None = None,
        required: bool = False,
        message: str | None = None,
        name: str | None = None,
    ) -> None:
        if predicate is None and pattern is None and schema is None and path_under is None and not required:
            raise ValueError(
                f"ArgumentRule({tool!r}, {argument!r}) needs at least one of predicate, pattern, "
                "schema, path_under or required=True"
            )
        self.tool = _Globs(tool, "ArgumentRule")
        self.argument = argument
        self.predicate = predicate
        self.pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
        self.schema = ValueSchema(schema) if schema is not None else None
        self.path_under = os.fspath(path_under) if path_under is not None else None
        self._root = os.path.realpath(self.path_under) if self.path_under is not None else None
        self.required = required
        self.message = message
        self.name = name or f"argument_rule({tool}.{argument})"

    def tool_patterns(self) -> tuple[str, ...]:
        return self.tool.patterns

    def __call__(self, call: ToolCall, tool: Tool | None, context: GuardContext) -> GuardDecision:
        if not self.tool.matches(call.name):
            return _ALLOW
        problems = self.problems(call)
        if not problems:
            return _ALLOW
        return GuardDecision.deny(self.message or "; ".join(problems), self.name)

    def problems(self, call: ToolCall) -> list[str]:
        """Why the call breaks this rule, one sentence per violated constraint."""
        subject = f"argument '{self.argument}' of tool '{call.name}'"
        value = call.arguments.get(self.argument)
        if value is None:
            return [f"{subject} is required"] if self.required else []
        out: list[str] = []
        if self.predicate is not None:
            out.extend(self._predicate_problems(subject, value))
        if self.pattern is not None:
            pattern = self.pattern.pattern
            if not isinstance(value, str):
                out.append(f"{subject} must be a string matching {pattern!r} (got {type(value).__name__})")
            elif self.pattern.fullmatch(value) is None:
                out.append(f"{subject} must match the pattern {pattern!r} (got {_shown(value)})")
        if self.schema is not None:
            for where, what in self.schema.problems(value):
                at = f" at '{self.argument}{where}'" if where else ""
                out.append(f"{subject}{at} {what}")
        if self.path_under is not None:
            out.extend(self._path_problems(subject, value))
        return out

    def _predicate_problems(self, subject: str, value: Any) -> list[str]:
        assert self.predicate is not None
        check = _callable_name(self.predicate)
        try:
            ok = self.predicate(value)
        except Exception as exc:  # a broken check must not wave the call through
            return [f"{subject} could not be checked ({type(exc).__name__}: {exc})"]
        if ok:
            return []
        return [f"{subject} was rejected by the check {check!r}" if check else f"{subject} was rejected"]

    def _path_problems(self, subject: str, value: Any) -> list[str]:
        assert self.path_under is not None and self._root is not None
        if not isinstance(value, str):
            return [f"{subject} must be a path string under '{self.path_under}' (got {type(value).__name__})"]
        candidates = {value, os.path.expanduser(value)} if value.startswith("~") else {value}
        try:
            inside = all(_is_within(os.path.realpath(c), self._root) for c in candidates)
        except (ValueError, OSError):  # NUL bytes, paths on another drive...
            inside = False
        if inside:
            return []
        # The resolved target is not shown: it would reveal where links in the workspace point.
        return [
            f"{subject} must be a path under '{self.path_under}'; {_shown(value, 240)} resolves outside it"
        ]


def _is_within(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root


# --- how often, how many -----------------------------------------------------------------------


class RateLimit(GuardPolicy):
    """At most `calls` calls of the tools matching `tool` in any sliding `per_seconds` window.

    The window is shared by every matching tool and every run using this instance (guarding a
    quota-limited API is the point), and is thread-safe. A call is recorded only when it
    actually runs (the enforcer's `allowed()` hook, also after a human approval), so calls that
    another policy denies or that wait for approval do not use up the quota.
    """

    def __init__(self, tool: str, calls: int, per_seconds: float, *, name: str | None = None) -> None:
        if not isinstance(calls, int) or isinstance(calls, bool) or calls < 1:
            raise ValueError(f"RateLimit: calls must be a positive integer, got {calls!r}")
        if isinstance(per_seconds, bool) or not (per_seconds > 0 and math.isfinite(per_seconds)):
            raise ValueError(f"RateLimit: per_seconds must be a positive number, got {per_seconds!r}")
        self.tool = _Globs(tool, "RateLimit")
        self.calls = calls
        self.per_seconds = float(per_seconds)
        self.name = name or f"rate_limit({tool}: {calls}/{per_seconds:g}s)"
        self._times: list[float] = []
        """Times of the allowed calls still in the window, ascending."""
        self._lock = threading.Lock()

    def tool_patterns(self) -> tuple[str, ...]:
        return self.tool.patterns

    def __call__(self, call: ToolCall, tool: Tool | None, context: GuardContext) -> GuardDecision:
        if not self.tool.matches(call.name):
            return _ALLOW
        now = _now(context)
        with self._lock:
            times = self._times
            del times[: bisect_right(times, now - self.per_seconds)]
            if len(times) >= self.calls:
                # The window drops below the limit when the call `calls` places back expires.
                retry = times[len(times) - self.calls] + self.per_seconds - now
                return GuardDecision.deny(
                    f"rate limit: at most {self.calls} call(s) of '{self.tool}' per "
                    f"{self.per_seconds:g} s; retry in {_seconds(retry)} s",
                    self.name,
                )
        return _ALLOW

    def on_allowed(self, call: ToolCall, context: GuardContext) -> None:
        """Record a call that is about to run."""
        if self.tool.matches(call.name):
            with self._lock:
                insort(self._times, _now(context))  # sorted even if the clock stepped back

    def reset(self) -> None:
        """Forget the recorded calls (e.g. between test cases sharing one instance)."""
        with self._lock:
            self._times.clear()


class MaxToolCalls(GuardPolicy):
    """Caps the tool calls of one run: a model stuck in a loop stops spending."""

    def __init__(self, n: int, *, name: str | None = None) -> None:
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"MaxToolCalls: n must be a non-negative integer, got {n!r}")
        self.n = n
        self.name = name or f"max_tool_calls({n})"

    def __call__(self, call: ToolCall, tool: Tool | None, context: GuardContext) -> GuardDecision:
        if _calls_this_run(context) < self.n:
            return _ALLOW
        return GuardDecision.deny(f"tool call budget of {self.n} per run exhausted", self.name)


# --- human approval ----------------------------------------------------------------------------


class RequireApproval(GuardPolicy):
    """Holds calls for a human (PENDING): by tool glob, by the tool's effect tags, or by predicate.

    The reason is what the approver reads; the first matching criterion, in the order effect
    tags, tools, `when`, explains it unless `reason` is given.
    """

    def __init__(
        self,
        tools: str | Iterable[str] | None = None,
        effect_tags: str | Iterable[str] | None = None,
        when: Callable[[ToolCall], bool] | None = None,
        reason: str | None = None,
        *,
        name: str = "require_approval",
    ) -> None:
        if tools is None and effect_tags is None and when is None:
            raise ValueError("RequireApproval needs at least one of tools, effect_tags or when")
        self.tools = _Globs(tools, "RequireApproval") if tools is not None else None
        self.effect_tags = (
            frozenset([effect_tags] if isinstance(effect_tags, str) else effect_tags)
            if effect_tags is not None
            else frozenset()
        )
        self.when = when
        self.reason = reason
        self.name = name

    def tool_patterns(self) -> tuple[str, ...]:
        return self.tools.patterns if self.tools is not None else ()

    def __call__(self, call: ToolCall, tool: Tool | None, context: GuardContext) -> GuardDecision:
        why = self._why(call, tool)
        if why is None:
            return _ALLOW
        return GuardDecision.pending(self.reason or why, self.name)

    def _why(self, call: ToolCall, tool: Tool | None) -> str | None:
        tags = sorted(self.effect_tags & tool.effect_tags) if tool is not None else []
        if tags:
            noun = "effect" if len(tags) == 1 else "effects"
            return f"tool '{call.name}' has {noun} {', '.join(repr(t) for t in tags)}"
        if self.tools is not None and self.tools.matches(call.name):
            return f"tool '{call.name}' requires approval"
        if self.when is None:
            return None
        condition = _callable_name(self.when)
        try:
            hit = self.when(call)
        except Exception as exc:  # when unsure, ask the human rather than run the call
            return f"the approval condition for tool '{call.name}' failed ({type(exc).__name__}: {exc})"
        if not hit:
            return None
        if condition:
            return f"call of tool '{call.name}' meets the approval condition {condition!r}"
        return f"call of tool '{call.name}' requires approval"


class Breakpoint(GuardPolicy):
    """A human breakpoint every `every` model rounds: the calls of round N, 2N, ... wait for
    approval (PENDING), so a person looks at the run at regular intervals, whatever the tools.
    `ReActConfig.breakpoint_every` adds one to an agent's guard."""

    def __init__(self, every: int, *, name: str | None = None) -> None:
        if not isinstance(every, int) or isinstance(every, bool) or every < 1:
            raise ValueError(f"Breakpoint: every must be a positive integer, got {every!r}")
        self.every = every
        self.name = name or f"breakpoint_every({every})"

    def __call__(self, call: ToolCall, tool: Tool | None, context: GuardContext) -> GuardDecision:
        if context.round < 1 or context.round % self.every:
            return _ALLOW
        return GuardDecision.pending(
            f"breakpoint: round {context.round} of this run (one every {self.every}); approve to "
            "go on, deny to tell the model to stop",
            self.name,
        )


# --- user-defined policies ---------------------------------------------------------------------


class FunctionPolicy(GuardPolicy):
    """A plain function made a named policy; its bool/Decision/None answers become decisions."""

    def __init__(self, fn: Policy, *, name: str | None = None) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.name = name or getattr(fn, "__name__", None) or type(fn).__name__
        self.__name__ = self.name  # what GuardEnforcer names a policy by

    def __call__(self, call: ToolCall, tool: Tool | None, context: GuardContext) -> GuardDecision:
        return self.decide(self.fn(call, tool, context))

    def decide(self, result: PolicyResult) -> GuardDecision:
        """Normalise the function's answer, attributing it to this policy."""
        if result is None or result is True:
            return _ALLOW
        if result is False:
            return GuardDecision.deny(f"refused by policy {self.name}", self.name)
        if isinstance(result, Decision):
            if result is Decision.ALLOW:
                return _ALLOW
            verb = "refused" if result is Decision.DENY else "held for approval"
            return GuardDecision(decision=result, reason=f"{verb} by policy {self.name}", policy=self.name)
        if result.policy is None and result.decision is not Decision.ALLOW:
            return result.model_copy(update={"policy": self.name})
        return result


@overload
def policy(fn: Policy, *, name: str | None = None) -> FunctionPolicy: ...
@overload
def policy(fn: None = None, *, name: str | None = None) -> Callable[[Policy], FunctionPolicy]: ...
def policy(
    fn: Policy | None = None, *, name: str | None = None
) -> FunctionPolicy | Callable[[Policy], FunctionPolicy]:
    """Make a function `(call, tool, context) -> GuardDecision | Decision | bool | None` a named
    policy; usable bare (`@policy`) or with a name (`@policy(name="...")`)."""
    if fn is not None:
        return FunctionPolicy(fn, name=name)
    return lambda f: FunctionPolicy(f, name=name)
