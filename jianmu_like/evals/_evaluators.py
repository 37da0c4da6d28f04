"""Evaluators of an agent's answer and of its trajectory, in `pydantic-evals`' model.

Each is a `pydantic_evals.evaluators.Evaluator` dataclass, named in a dataset file by its class
name like the library's own (`- Regex: {pattern: "\\d+"}`). The answer checks (`Regex`,
`JsonSchema`) complete the library's `EqualsExpected`, `Equals` and `Contains`; the trajectory
checks (`ToolCalls`, `NodesRan`, `Limits`) read the case's `RunTrace`, built from the run's own
events, where the library's span-based `ToolCorrectness`/`TrajectoryMatch`/... would read
pydantic-ai's OpenTelemetry spans, which a jianmu_like run does not produce. Bad arguments are
refused when the dataset loads (`__post_init__`), never when the first case is scored.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from .._base.json_schema import compile_schema, problems
from ..models._json_text import JSONTextError, loads_bounded
from ._library import EvaluationReason, Evaluator, EvaluatorContext
from ._task import TRACE
from ._trace import RunTrace

Order = Literal["exact", "in_order", "any_order"]
ORDERS: tuple[str, ...] = ("exact", "in_order", "any_order")


def trace_of(ctx: EvaluatorContext[Any, Any, Any]) -> RunTrace:
    """The case's run trace (set by the agent task)."""
    data = ctx.attributes.get(TRACE)
    if data is None:
        raise ValueError("the case has no run trace (was it run by jianmu_like.evals?)")
    return RunTrace.model_validate(data)


def answer_text(output: Any) -> str:
    """The answer as text: a structured output as its JSON."""
    if isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False, sort_keys=True, default=str)


@dataclass(repr=False)
class Regex(Evaluator[Any, Any, Any]):
    """The answer matches `pattern` (Python `re`, searched anywhere unless `full_match`)."""

    pattern: str
    full_match: bool = False
    ignore_case: bool = False

    def __post_init__(self) -> None:
        try:
            self._compiled = re.compile(self.pattern, re.IGNORECASE if self.ignore_case else 0)
        except re.error as exc:
            raise ValueError(f"pattern {self.pattern!r} is not a regular expression: {exc}") from None

    def evaluate(self, ctx: EvaluatorContext[Any, Any, Any]) -> EvaluationReason:
        text = answer_text(ctx.output)
        found = self._compiled.fullmatch(text) if self.full_match else self._compiled.search(text)
        how = "matches" if self.full_match else "contains a match of"
        if found:
            return EvaluationReason(value=True)
        return EvaluationReason(value=False, reason=f"the answer never {how} /{self.pattern}/")


@dataclass(repr=False)
class JsonSchema(Evaluator[Any, Any, Any]):
    """The answer is JSON (text, or an agent's structured output) valid against `schema`
    (Draft 2020-12, strict: an unknown keyword in the schema is refused when it loads)."""

    schema: dict[str, Any]

    def __post_init__(self) -> None:
        self._validator = compile_schema(self.schema)

    def evaluate(self, ctx: EvaluatorContext[Any, Any, Any]) -> EvaluationReason:
        value = ctx.output
        if isinstance(value, str):
            try:
                value = loads_bounded(value.strip(), "the answer is")
            except JSONTextError as exc:
                return EvaluationReason(value=False, reason=str(exc))
        found = problems(self._validator, value)
        if not found:
            return EvaluationReason(value=True)
        return EvaluationReason(
            value=False, reason="; ".join(f"{where or 'answer'}: {what}" for where, what in found[:5])
        )


def _expected_call(item: Any) -> tuple[str, dict[str, Any] | None]:
    if isinstance(item, str):
        return item, None
    if isinstance(item, dict) and set(item) <= {"name", "arguments"} and isinstance(item.get("name"), str):
        arguments = item.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise ValueError(f"calls: arguments of {item['name']!r} must be a mapping")
        return item["name"], arguments
    raise ValueError(f"calls: {item!r} is neither a tool name nor {{name, arguments}}")


def _show(name: str, arguments: dict[str, Any] | None) -> str:
    return (
        name if arguments is None else f"{name}({json.dumps(arguments, ensure_ascii=False, sort_keys=True)})"
    )


@dataclass(repr=False)
class ToolCalls(Evaluator[Any, Any, Any]):
    """The run's tool calls: `calls` (names, or `{name, arguments}` whose arguments must all
    equal the call's; other arguments may be there) made in `order`: "exact" (these calls and
    no others, in this order), "in_order" (in this order, others may come between) or
    "any_order"; `forbidden` tools never called. Failed calls count (the model asked for them)
    unless `include_failed` is false."""

    calls: list[Any] = field(default_factory=list)
    order: str = "in_order"
    forbidden: list[str] = field(default_factory=list)
    include_failed: bool = True

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {', '.join(ORDERS)}, not {self.order!r}")
        self._expected = [_expected_call(item) for item in self.calls]

    def evaluate(self, ctx: EvaluatorContext[Any, Any, Any]) -> EvaluationReason:
        made = [c for c in trace_of(ctx).tool_calls if self.include_failed or c.ok]
        seen = ", ".join(_show(c.name, c.arguments) for c in made) or "none"
        bad = sorted({c.name for c in made} & set(self.forbidden))
        if bad:
            return EvaluationReason(
                value=False, reason=f"forbidden tool(s) called: {', '.join(bad)}; calls: {seen}"
            )

        def fits(expected: tuple[str, dict[str, Any] | None], index: int) -> bool:
            name, arguments = expected
            call = made[index]
            return call.name == name and (
                arguments is None or all(call.arguments.get(k, _MISSING) == v for k, v in arguments.items())
            )

        wanted = ", ".join(_show(*e) for e in self._expected) or "no tool call"
        if self.order == "exact":
            ok = len(made) == len(self._expected) and all(fits(e, i) for i, e in enumerate(self._expected))
        elif self.order == "in_order":
            position, ok = 0, True
            for expected in self._expected:
                while position < len(made) and not fits(expected, position):
                    position += 1
                if position == len(made):
                    ok = False
                    break
                position += 1
        else:
            free = list(range(len(made)))
            ok = True
            for expected in self._expected:
                match = next((i for i in free if fits(expected, i)), None)
                if match is None:
                    ok = False
                    break
                free.remove(match)
        if ok:
            return EvaluationReason(value=True)
        return EvaluationReason(value=False, reason=f"expected {wanted} ({self.order}); calls: {seen}")


_MISSING = object()


@dataclass(repr=False)
class NodesRan(Evaluator[Any, Any, Any]):
    """Nodes that ran (`nodes`) and nodes that did not (`absent`), by name: a node's full name
    (`Calculator.Tools`) or the part after its last dot (`Tools`)."""

    nodes: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)

    def evaluate(self, ctx: EvaluatorContext[Any, Any, Any]) -> EvaluationReason:
        ran = trace_of(ctx).nodes

        def did_run(name: str) -> bool:
            return any(n == name or n.endswith(f".{name}") for n in ran)

        missing = [n for n in self.nodes if not did_run(n)]
        present = [n for n in self.absent if did_run(n)]
        if not missing and not present:
            return EvaluationReason(value=True)
        parts = [f"did not run: {', '.join(missing)}"] if missing else []
        parts += [f"ran: {', '.join(present)}"] if present else []
        return EvaluationReason(value=False, reason=f"{'; '.join(parts)} (nodes: {', '.join(ran) or 'none'})")


@dataclass(repr=False)
class Limits(Evaluator[Any, Any, Any]):
    """The run stayed within each limit given: iterations (model replies), tokens, tool calls,
    model calls."""

    max_iterations: int | None = None
    max_tokens: int | None = None
    max_tool_calls: int | None = None
    max_model_calls: int | None = None

    def __post_init__(self) -> None:
        limits = [self.max_iterations, self.max_tokens, self.max_tool_calls, self.max_model_calls]
        if all(limit is None for limit in limits):
            raise ValueError(
                "set at least one of max_iterations, max_tokens, max_tool_calls, max_model_calls"
            )
        for limit in limits:
            if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
                raise ValueError(f"a limit is a whole number ≥ 0, not {limit!r}")

    def evaluate(self, ctx: EvaluatorContext[Any, Any, Any]) -> EvaluationReason:
        trace = trace_of(ctx)
        spent = {
            "iterations": (trace.iterations, self.max_iterations),
            "tokens": (trace.total_tokens, self.max_tokens),
            "tool calls": (len(trace.tool_calls), self.max_tool_calls),
            "model calls": (trace.model_calls, self.max_model_calls),
        }
        over = [
            f"{what}: {used} > {limit}"
            for what, (used, limit) in spent.items()
            if limit is not None and used > limit
        ]
        return EvaluationReason(value=not over, reason="; ".join(over) or None)
