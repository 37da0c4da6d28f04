"""The one door to `pydantic-evals`: every module of the package takes the library's names from
here, so a missing extra is one clear `EvalsUnavailable` naming it, whichever name is used first."""

from ._errors import INSTALL_HINT, EvalsUnavailable

try:
    from pydantic_evals import Dataset
    from pydantic_evals.dataset import increment_eval_metric, set_eval_attribute
    from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext
    from pydantic_evals.evaluators.common import DEFAULT_EVALUATORS
    from pydantic_evals.evaluators.spec import EvaluatorSpec
    from pydantic_evals.reporting import EvaluationReport
except ModuleNotFoundError as exc:  # pragma: no cover - the suite installs the extra
    raise EvalsUnavailable(f"evaluations need pydantic-evals ({exc}): {INSTALL_HINT}") from None

__all__ = [
    "DEFAULT_EVALUATORS",
    "Dataset",
    "EvaluationReason",
    "EvaluationReport",
    "Evaluator",
    "EvaluatorContext",
    "EvaluatorSpec",
    "increment_eval_metric",
    "set_eval_attribute",
]
