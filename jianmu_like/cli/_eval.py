"""`jianmu-like eval DATASET AGENT_FILE` and `jianmu-like eval compare OLD.json NEW.json`.

The table goes to standard output (or the report as JSON with `--json`), progress to standard
error, report files where `--report` says; the exit code is for CI: 0 every case passed (or no
regression), 1 a case failed (or a regression was found), 2 a bad dataset, agent file or report.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ._common import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, CliError

if TYPE_CHECKING:
    from rich.console import Console


def _evals() -> None:
    """Load pydantic-evals, or a usage error naming the extra."""
    from ..evals import EvalsUnavailable

    try:
        from ..evals import _library  # noqa: F401
    except EvalsUnavailable as exc:
        raise CliError(str(exc)) from None


def eval_command(args: argparse.Namespace, console: Console, errors: Console) -> int:
    """`eval DATASET AGENT_FILE [--report FILE]...` or `eval compare OLD NEW`."""
    paths: list[str] = args.paths
    if paths[0] == "compare":
        if len(paths) != 3:
            raise CliError("usage: jianmu-like eval compare OLD.json NEW.json")
        return _compare(paths[1], paths[2], args.tolerance, console)
    if len(paths) != 2:
        raise CliError("usage: jianmu-like eval DATASET AGENT_FILE (or: eval compare OLD.json NEW.json)")
    _evals()
    from ..agentfile._shipped import agent_file_path
    from ..evals import EvalError, evaluate, load_dataset
    from ..evals._render import check_report_path, summary, table, write_report

    try:
        for target in args.report or []:
            check_report_path(target)
        dataset = load_dataset(paths[0])
    except EvalError as exc:
        raise CliError(str(exc)) from None
    agent_file = str(agent_file_path(paths[1]))
    progress = Progress(
        TextColumn("evaluating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=errors, transient=True, disable=not errors.is_terminal,
    )  # fmt: skip
    bar = progress.add_task("cases", total=len(dataset.cases))
    errors.print(f"evaluating {len(dataset.cases)} case(s) of {paths[0]} on {paths[1]}", style="dim")

    def advance(done: int, total: int) -> None:
        progress.update(bar, completed=done)
        if not errors.is_terminal:
            errors.print(f"  {done}/{total} cases run", style="dim")

    try:
        with progress:
            report = asyncio.run(
                evaluate(
                    dataset, agent_file, concurrency=args.concurrency, allow_modules=args.allow_module,
                    max_ticks=args.max_ticks, on_progress=advance,
                )
            )  # fmt: skip
    except KeyboardInterrupt:
        errors.print("interrupted", style="yellow")
        return EXIT_INTERRUPTED
    except EvalError as exc:
        raise CliError(str(exc)) from None
    report = report.model_copy(update={"dataset": paths[0]})
    for target in args.report or []:
        write_report(report, target)
        errors.print(f"report written to {target}", style="dim")
    if args.json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    else:
        console.print(table(report))
        console.print(summary(report), style="green" if report.ok else "bold red")
    return EXIT_OK if report.ok else EXIT_FAILED


def _compare(old_path: str, new_path: str, tolerance: float, console: Console) -> int:
    _evals()
    from ..evals import EvalError, compare, load_report
    from ..evals._render import comparison_lines

    try:
        old, new = load_report(old_path), load_report(new_path)
    except EvalError as exc:
        raise CliError(str(exc)) from None
    comparison = compare(old, new, tolerance=tolerance)
    for line in comparison_lines(comparison):
        console.print(line, style="bold red" if line.startswith("regression") else None)
    return EXIT_OK if comparison.ok else EXIT_FAILED
