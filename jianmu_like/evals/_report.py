"""The report of an evaluation: what each case asked, answered and scored, as stable JSON.

`pydantic-evals`' `EvaluationReport` holds Python objects (inputs, outputs, spans) and renders to
the terminal; a CI job needs a file it can keep and compare with tomorrow's. `EvalReport` is that
file: one `CaseResult` per case (a failed run is a case with its reason, never a missing row),
versioned by `format`, with every secret masked — by key and key-like value as every event is,
and by value for the secrets the process holds (the configured API key, `*_API_KEY`/`*_TOKEN`
variables), since a model or a tool may echo one back into an answer.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from .._config import get_config
from .._redact import REDACTED, is_secret_key, redact
from .._validation import describe_validation
from ._errors import EvalError
from ._library import EvaluationReport
from ._task import CaseInputs
from ._trace import RunTrace

FORMAT: Literal["jianmu-eval/1"] = "jianmu-eval/1"


class Outcome(BaseModel):
    """One evaluator result: an assertion (bool), a score (number) or a label (text)."""

    value: bool | int | float | str
    reason: str | None = None


class CaseResult(BaseModel):
    """One case of the report."""

    name: str
    passed: bool
    """The run succeeded, every assertion held and no evaluator raised."""
    error: str | None = None
    """Why the case's run failed (then nothing was scored)."""
    question: str
    output: Any = None
    expected_output: Any = None
    metadata: Any = None
    assertions: dict[str, Outcome] = Field(default_factory=dict)
    scores: dict[str, Outcome] = Field(default_factory=dict)
    labels: dict[str, Outcome] = Field(default_factory=dict)
    evaluator_errors: dict[str, str] = Field(default_factory=dict)
    trace: RunTrace | None = None
    duration: float = 0.0

    def reasons(self) -> list[str]:
        """Why the case failed, one line each."""
        if self.error is not None:
            return [self.error]
        found = [f"{n}: {o.reason or 'false'}" for n, o in self.assertions.items() if o.value is False]
        return found + [f"{n} raised: {e}" for n, e in self.evaluator_errors.items()]


class EvalReport(BaseModel):
    """The result of evaluating an agent file on a dataset."""

    format: Literal["jianmu-eval/1"] = FORMAT
    dataset: str
    agent: str
    cases: list[CaseResult]
    duration: float = 0.0
    concurrency: int | None = None

    @property
    def passed(self) -> int:
        """How many cases passed."""
        return sum(c.passed for c in self.cases)

    @property
    def failed(self) -> int:
        """How many cases failed (their run, an assertion or an evaluator)."""
        return len(self.cases) - self.passed

    @property
    def ok(self) -> bool:
        """Every case passed."""
        return self.failed == 0

    def case(self, name: str) -> CaseResult | None:
        """The case named `name`."""
        return next((c for c in self.cases if c.name == name), None)


def _outcomes(results: dict[str, Any]) -> dict[str, Outcome]:
    return {name: Outcome(value=r.value, reason=r.reason) for name, r in results.items()}


def _question(inputs: CaseInputs) -> str:
    return inputs.question or f"(replay of {inputs.recording})"


def build_report(
    report: EvaluationReport[CaseInputs, Any, Any],
    traces: dict[int, RunTrace],
    *,
    dataset: str,
    agent: str,
    duration: float,
    concurrency: int | None,
    order: list[str],
) -> EvalReport:
    """Our report from the library's, cases in the dataset's order, secrets masked."""
    cases: list[CaseResult] = []
    for case in report.cases:
        errors = {f.name: f.error_message for f in case.evaluator_failures}
        assertions = _outcomes(case.assertions)
        cases.append(
            CaseResult(
                name=case.name,
                passed=not errors and all(o.value is True for o in assertions.values()),
                question=_question(case.inputs),
                output=case.output,
                expected_output=case.expected_output,
                metadata=case.metadata,
                assertions=assertions,
                scores=_outcomes(case.scores),
                labels=_outcomes(case.labels),
                evaluator_errors=errors,
                trace=traces.get(id(case.inputs)),
                duration=case.task_duration,
            )
        )
    for failure in report.failures:
        cases.append(
            CaseResult(
                name=failure.name,
                passed=False,
                error=failure.error_message,
                question=_question(failure.inputs),
                expected_output=failure.expected_output,
                metadata=failure.metadata,
                trace=traces.get(id(failure.inputs)),
            )
        )
    rank = {name: index for index, name in enumerate(order)}
    cases.sort(key=lambda c: rank.get(c.name, len(rank)))
    built = EvalReport(dataset=dataset, agent=agent, cases=cases, duration=duration, concurrency=concurrency)
    return redact_report(built)


def secret_values() -> list[str]:
    """Secrets this process holds, to mask wherever they appear: the configured API key and
    the values of secret-named environment variables (`OPENAI_API_KEY`, `*_TOKEN`, ...)."""
    found = {v for k, v in os.environ.items() if is_secret_key(k) and len(v) >= 8}
    try:
        key = get_config().provider.api_key
    except Exception:  # an invalid configuration: the run has already said so
        key = None
    if key is not None and len(key.get_secret_value()) >= 8:
        found.add(key.get_secret_value())
    return sorted(found, key=len, reverse=True)


def _mask(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, dict):
        return {k: _mask(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v, secrets) for v in value]
    return value


def redact_report(report: EvalReport) -> EvalReport:
    """`report` with every secret masked (by key, key-like value and known secret value)."""
    data = _mask(redact(report.model_dump(mode="json")), secret_values())
    return EvalReport.model_validate(data)


def load_report(path: str | Path) -> EvalReport:
    """A report written by `jianmu-like eval --report FILE.json`; `EvalError` otherwise."""
    file = Path(path)
    try:
        return EvalReport.model_validate_json(file.read_bytes())
    except OSError as exc:
        raise EvalError(f"{file}: cannot read the report ({exc})") from None
    except ValidationError as exc:
        problems = "; ".join(describe_validation(exc, inputs=False)[:3])
        raise EvalError(f"{file}: not an evaluation report ({FORMAT} JSON): {problems}") from None
