"""Datasets: `pydantic-evals`' own file format (YAML or JSON), with this package's evaluators.

A dataset file is what `pydantic_evals.Dataset.from_file` reads — `cases:` each with `name`,
`inputs` (the question, or `{question, messages, input}`: `CaseInputs`), `expected_output`,
`metadata` and `evaluators`, plus dataset-wide `evaluators:` — loaded with the evaluators of
`EVALUATORS` added to the library's. Before the library parses it, every evaluator name is
checked: an unknown one is an error naming its place and the closest known name, and the
library's span-based trajectory evaluators are refused with the one to use instead (they read
pydantic-ai's OpenTelemetry spans; a jianmu_like run has none, so they would always fail).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeAlias

import yaml
from pydantic import ValidationError

from .._base.names import did_you_mean
from .._base.validation import describe_validation
from ._errors import EvalError
from ._evaluators import JsonSchema, Limits, NodesRan, Regex, ToolCalls
from ._judge import Judge
from ._library import DEFAULT_EVALUATORS, Dataset, Evaluator, EvaluatorSpec
from ._task import CaseInputs

AgentDataset: TypeAlias = Dataset[CaseInputs, Any, Any]

EVALUATORS: tuple[type[Evaluator[Any, Any, Any]], ...] = (
    Regex,
    JsonSchema,
    ToolCalls,
    NodesRan,
    Limits,
    Judge,
)
"""This package's evaluators, known to every dataset file beside the library's own."""

SPAN_BASED = {
    "HasMatchingSpan": "NodesRan",
    "ToolCorrectness": "ToolCalls",
    "TrajectoryMatch": "ToolCalls",
    "ArgumentCorrectness": "ToolCalls",
    "MaxToolCalls": "Limits (max_tool_calls)",
    "MaxModelRequests": "Limits (max_model_calls)",
}
"""The library's evaluators that read pydantic-ai's spans → this package's counterpart."""

_KNOWN = sorted({e.get_serialization_name() for e in (*EVALUATORS, *DEFAULT_EVALUATORS)} - set(SPAN_BASED))


def load_dataset(path: str | Path) -> AgentDataset:
    """The dataset of a YAML or JSON file; `EvalError` naming the file and the place of the
    first problem (unknown evaluator, bad arguments, a field the format does not have)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalError(f"{file}: cannot read the dataset ({exc})") from None
    fmt = "json" if file.suffix.lower() == ".json" else "yaml"
    try:
        raw = json.loads(text) if fmt == "json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise EvalError(f"{file}: not valid {fmt.upper()} ({exc})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cases"), list):
        raise EvalError(f"{file}: a dataset is a mapping with a list of `cases:`")
    if not raw["cases"]:  # a CI job scoring nothing must not pass
        raise EvalError(f"{file}: the dataset has no cases")
    for where, spec in _specs(raw):
        _check_name(file, where, spec)
    try:
        return Dataset[CaseInputs, Any, Any].from_dict(
            raw, custom_evaluator_types=EVALUATORS, default_name=file.stem
        )
    except ValidationError as exc:
        raise EvalError(f"{file}: " + "; ".join(describe_validation(exc))) from None
    except ExceptionGroup as group:  # the library reports every bad evaluator at once
        problems = [_worded(exc) for exc in _leaves(group)]
        raise EvalError(f"{file}: " + "; ".join(problems)) from None
    except (ValueError, TypeError) as exc:
        raise EvalError(f"{file}: {_worded(exc)}") from None


def _leaves(group: BaseExceptionGroup[Any]) -> Iterator[BaseException]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            yield exc


_FAILED = re.compile(r"Failed to instantiate evaluator '([^']+)'(?: for case (None|'[^']*'|\S+))?: ")


def _worded(exc: BaseException) -> str:
    """The library's "Failed to instantiate evaluator 'X' for case None: ..." as "X: ..."."""

    def place(match: re.Match[str]) -> str:
        case = match.group(2)
        return f"case {case}: {match.group(1)}: " if case and case != "None" else f"{match.group(1)}: "

    return _FAILED.sub(place, str(exc))


def _specs(raw: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    for index, spec in enumerate(raw.get("evaluators") or []):
        yield f"evaluators[{index}]", spec
    for number, case in enumerate(raw["cases"]):
        if isinstance(case, dict):
            label = f"cases[{number}]" + (f" ({case['name']})" if isinstance(case.get("name"), str) else "")
            for index, spec in enumerate(case.get("evaluators") or []):
                yield f"{label}.evaluators[{index}]", spec


def _check_name(file: Path, where: str, spec: Any) -> None:
    try:
        name = EvaluatorSpec.model_validate(spec).name
    except ValidationError:
        raise EvalError(f"{file}: {where}: not an evaluator (a name, or {{Name: arguments}})") from None
    if name in SPAN_BASED:
        raise EvalError(
            f"{file}: {where}: {name} reads pydantic-ai's OpenTelemetry spans, which a jianmu_like run "
            f"does not produce; use {SPAN_BASED[name]}"
        )
    if name not in _KNOWN:
        hint = did_you_mean(name, _KNOWN) or f" (known: {', '.join(_KNOWN)})"
        raise EvalError(f"{file}: {where}: unknown evaluator {name!r}{hint}")
