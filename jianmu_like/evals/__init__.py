"""Evaluate an agent against a dataset of cases (the optional `evals` extra: `pip install
'jianmu_like[evals]'`).

Built on `pydantic-evals`: a dataset is its `Dataset` of `Case`s (YAML or JSON, its own format),
evaluators are its `Evaluator`s, cases run through its `Dataset.evaluate` with bounded
concurrency. What this package adds is the agent side: each case runs the agent file afresh,
its events become a `RunTrace` (tool calls with their arguments, nodes, iterations, tokens) that
the trajectory evaluators read, `Judge` asks any model the project's configuration reaches, and
an `EvalReport` (JSON, a terminal table, HTML or markdown) can be compared with an older one.

Nothing here is imported by `import jianmu_like`, and `pydantic-evals` loads only when a name of
this package is used; without the extra that use raises `EvalsUnavailable`, naming it.
"""

from typing import TYPE_CHECKING

from ..exports import lazy_exports

if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt name is an error there
    __all__, __getattr__, __dir__ = lazy_exports(__name__)

if TYPE_CHECKING:  # the public names, one source: jianmu_like.exports reads them at run time
    from ._compare import Comparison as Comparison
    from ._compare import Regression as Regression
    from ._compare import compare as compare
    from ._dataset import EVALUATORS as EVALUATORS
    from ._dataset import load_dataset as load_dataset
    from ._errors import CaseRunFailed as CaseRunFailed
    from ._errors import EvalError as EvalError
    from ._errors import EvalsUnavailable as EvalsUnavailable
    from ._evaluators import JsonSchema as JsonSchema
    from ._evaluators import Limits as Limits
    from ._evaluators import NodesRan as NodesRan
    from ._evaluators import Regex as Regex
    from ._evaluators import ToolCalls as ToolCalls
    from ._judge import Judge as Judge
    from ._render import html_page as html_page
    from ._render import markdown as markdown
    from ._render import table as table
    from ._render import write_report as write_report
    from ._report import CaseResult as CaseResult
    from ._report import EvalReport as EvalReport
    from ._report import Outcome as Outcome
    from ._report import load_report as load_report
    from ._run import evaluate as evaluate
    from ._task import CaseInputs as CaseInputs
    from ._trace import RunTrace as RunTrace
    from ._trace import ToolCallTrace as ToolCallTrace
