"""The errors of evaluations, kept apart from the modules that import `pydantic-evals`: the
package checks for the extra before anything else, and must be able to say so."""

from __future__ import annotations

from ..errors import JianmuError

INSTALL_HINT = "pip install 'jianmu_like[evals]'"


class EvalError(JianmuError, ValueError):
    """A dataset, an evaluator's arguments or a report that cannot be used; the message names
    the file and the place (and the closest known name for a misspelt evaluator)."""


class EvalsUnavailable(JianmuError, RuntimeError):
    """`pydantic-evals` is not installed: evaluations need the `evals` extra."""


class CaseRunFailed(JianmuError, RuntimeError):
    """A case's run ended without an answer (failure, suspension, a node's exception): the case
    fails with this reason instead of being scored."""
