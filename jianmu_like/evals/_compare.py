"""Compare two reports of the same dataset: every regression named, case by case.

A regression is a case that passed and now fails, an assertion that held and now does not, or a
score that dropped by more than `tolerance`. A case only one report has is listed (added or
removed), not counted as a regression: the dataset changed, not the agent.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ._report import EvalReport


class Regression(BaseModel):
    """One thing that got worse."""

    case: str
    kind: Literal["now_fails", "assertion", "score"]
    detail: str

    def __str__(self) -> str:
        return f"{self.case}: {self.detail}"


class Comparison(BaseModel):
    """What changed from the old report to the new one."""

    regressions: list[Regression] = Field(default_factory=list)
    improvements: list[str] = Field(default_factory=list)
    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No regression."""
        return not self.regressions


def compare(old: EvalReport, new: EvalReport, *, tolerance: float = 0.0) -> Comparison:
    """The regressions and improvements from `old` to `new`."""
    result = Comparison()
    old_names = {c.name for c in old.cases}
    result.added = [c.name for c in new.cases if c.name not in old_names]
    new_names = {c.name for c in new.cases}
    result.removed = [c.name for c in old.cases if c.name not in new_names]
    for now in new.cases:
        before = old.case(now.name)
        if before is None:
            continue
        if before.passed and not now.passed:
            why = "; ".join(now.reasons()) or "failed"
            result.regressions.append(
                Regression(case=now.name, kind="now_fails", detail=f"passed, now fails: {why}")
            )
        elif now.passed and not before.passed:
            result.improvements.append(f"{now.name}: failed, now passes")
        for name, outcome in now.assertions.items():
            was = before.assertions.get(name)
            if (
                was is not None
                and was.value is True
                and outcome.value is False
                and before.passed == now.passed
            ):
                detail = f"assertion {name} held, now false" + (
                    f": {outcome.reason}" if outcome.reason else ""
                )
                result.regressions.append(Regression(case=now.name, kind="assertion", detail=detail))
        for name, outcome in now.scores.items():
            was = before.scores.get(name)
            if was is None or isinstance(was.value, (bool, str)) or isinstance(outcome.value, (bool, str)):
                continue
            if outcome.value < was.value - tolerance:
                result.regressions.append(
                    Regression(
                        case=now.name,
                        kind="score",
                        detail=f"score {name} dropped {was.value:g} → {outcome.value:g}",
                    )
                )
            elif outcome.value > was.value + tolerance:
                result.improvements.append(f"{now.name}: score {name} rose {was.value:g} → {outcome.value:g}")
    return result
