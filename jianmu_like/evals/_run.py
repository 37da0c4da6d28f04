"""`evaluate`: run a dataset's cases through an agent file and score them.

The cases run through `pydantic_evals.Dataset.evaluate`, at most `concurrency` at a time (its
semaphore: a dataset of ten thousand cases holds `concurrency` agents, not ten thousand), with
the library's own progress bar off — it writes to standard output, which a report on stdout
must keep clean — and `on_progress(done, total)` called as each case's run ends instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..agentfile._loader import load_agent
from ._dataset import AgentDataset, load_dataset
from ._errors import EvalError
from ._report import EvalReport, build_report
from ._task import AgentTask, close_agent

Progress = Callable[[int, int], None]


async def evaluate(
    dataset: AgentDataset | str | Path,
    agent_file: str | Path,
    *,
    concurrency: int = 4,
    recordings: str | Path | None = None,
    allow_modules: Sequence[str] = (),
    max_ticks: int = 100_000,
    on_progress: Progress | None = None,
) -> EvalReport:
    """Run every case of `dataset` (a `Dataset` or its file) through `agent_file`, at most
    `concurrency` at once, and return the report. A case's `recording` path is relative to
    `recordings` (default: the dataset file's folder). The agent file is checked before any case
    runs (a bad file is its own error, not N failed cases); a case whose run fails is a failed
    case with the reason."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise EvalError(f"concurrency must be a whole number ≥ 1, not {concurrency!r}")
    data = load_dataset(dataset) if isinstance(dataset, (str, Path)) else dataset
    name = str(dataset) if isinstance(dataset, (str, Path)) else (data.name or "dataset")
    await close_agent(load_agent(agent_file, allow_modules=allow_modules))  # a bad file: raised here, once
    total, done = len(data.cases), 0

    def finished() -> None:
        nonlocal done
        done += 1
        if on_progress is not None:
            on_progress(done, total)

    folder = Path(recordings) if recordings is not None else None
    if folder is None:
        folder = Path(dataset).parent if isinstance(dataset, (str, Path)) else Path.cwd()
    task = AgentTask(
        agent_file, allow_modules=allow_modules, max_ticks=max_ticks, on_done=finished, recordings=folder
    )
    started = time.perf_counter()
    report: Any = await data.evaluate(
        task, name=Path(agent_file).stem, max_concurrency=concurrency, progress=False
    )
    return build_report(
        report,
        task.traces,
        dataset=name,
        agent=str(agent_file),
        duration=time.perf_counter() - started,
        concurrency=concurrency,
        order=[c.name or "" for c in data.cases],
    )
