"""The report of an evaluation: what each case asked, answered and scored, as stable JSON.

`pydantic-evals`' `EvaluationReport` holds Python objects (inputs, outputs, spans) and renders to
the terminal; a CI job needs a file it can keep and compare with tomorrow's. `EvalReport` is that
file: one `CaseResult` per case (a failed run is a case with its reason, never a missing row),
versioned by `format`, with every secret masked as in every event — by key, by key-like value
and by the value of every secret the configuration declared — since a model or a tool may echo
one back into an answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from .._base.redact import redact
from .._base.validation import describe_validation
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


def redact_report(report: EvalReport) -> EvalReport:
    """`report` with every secret masked: by key, by key-like value and by the value of every
    secret the configuration declared (`_base.redact`'s registry: the model clients' API keys, MCP
    servers' env and headers...), as in every event."""
    return EvalReport.model_validate(redact(report.model_dump(mode="json")))


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
