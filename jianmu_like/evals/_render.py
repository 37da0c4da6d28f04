"""A report as a terminal table (rich), markdown or a static HTML page (no script, no CDN).

Each view says the same per case: passed or failed, each assertion, the scores, tokens, tool
calls and duration, and why a case failed; then the totals.
"""

from __future__ import annotations

import html
from pathlib import Path

from rich.table import Table
from rich.text import Text

from ._compare import Comparison
from ._errors import EvalError
from ._report import CaseResult, EvalReport


def _checks(case: CaseResult) -> str:
    marks = [f"{'✓' if o.value is True else '✗'} {name}" for name, o in case.assertions.items()]
    return ", ".join(marks + [f"! {name}" for name in case.evaluator_errors])


def _scores(case: CaseResult) -> str:
    values = [f"{n}={o.value:.2f}" for n, o in case.scores.items() if not isinstance(o.value, (bool, str))]
    return ", ".join(values + [f"{n}={o.value}" for n, o in case.labels.items()])


def _usage(case: CaseResult) -> tuple[str, str]:
    trace = case.trace
    if trace is None:
        return "", ""
    return str(trace.total_tokens), " → ".join(c.name for c in trace.tool_calls)


def summary(report: EvalReport) -> str:
    """One line: how many cases passed."""
    return (
        f"{len(report.cases)} cases: {report.passed} passed, {report.failed} failed ({report.duration:.1f}s)"
    )


def table(report: EvalReport) -> Table:
    """The report as a rich table."""
    grid = Table(title=f"{report.agent} on {report.dataset}", title_justify="left")
    for column in ("Case", "Result", "Assertions", "Scores", "Tokens", "Tools", "Time", "Why"):
        grid.add_column(column, overflow="fold")
    for case in report.cases:
        tokens, tools = _usage(case)
        result = Text("✓ pass", style="green") if case.passed else Text("✗ FAIL", style="bold red")
        grid.add_row(
            case.name, result, _checks(case), _scores(case), tokens, tools, f"{case.duration:.2f}s",
            "; ".join(case.reasons()),
        )  # fmt: skip
    return grid


def markdown(report: EvalReport) -> str:
    """The report as a markdown page."""

    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = [
        f"# {cell(report.agent)} on {cell(report.dataset)}",
        "",
        summary(report),
        "",
        "| Case | Result | Assertions | Scores | Tokens | Tools | Time | Why |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for case in report.cases:
        tokens, tools = _usage(case)
        row = [case.name, "pass" if case.passed else "**FAIL**", _checks(case), _scores(case), tokens, tools,
               f"{case.duration:.2f}s", "; ".join(case.reasons())]  # fmt: skip
        lines.append("| " + " | ".join(cell(c) for c in row) + " |")
    return "\n".join(lines) + "\n"


_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2rem}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:.3rem .5rem;vertical-align:top;text-align:left}"
    ".pass{color:#176f2c}.fail{color:#b00020;font-weight:bold}"
    "details pre{white-space:pre-wrap;max-width:60rem}"
)


def html_page(report: EvalReport) -> str:
    """The report as a static HTML page (every value escaped; no script)."""
    e = html.escape
    rows = []
    for case in report.cases:
        tokens, tools = _usage(case)
        verdict = '<td class="pass">pass</td>' if case.passed else '<td class="fail">FAIL</td>'
        answer = e(str(case.output if case.output is not None else ""))
        rows.append(
            f"<tr><td>{e(case.name)}</td>{verdict}<td>{e(_checks(case))}</td><td>{e(_scores(case))}</td>"
            f"<td>{e(tokens)}</td><td>{e(tools)}</td><td>{case.duration:.2f}s</td>"
            f"<td>{e('; '.join(case.reasons()))}</td>"
            f"<td><details><summary>answer</summary><pre>{answer}</pre></details></td></tr>"
        )
    head = "".join(f"<th>{c}</th>" for c in ("Case", "Result", "Assertions", "Scores", "Tokens", "Tools",
                                             "Time", "Why", "Answer"))  # fmt: skip
    title = e(f"{report.agent} on {report.dataset}")
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"<style>{_STYLE}</style></head><body><h1>{title}</h1><p>{e(summary(report))}</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></body></html>\n"
    )


REPORT_SUFFIXES = (".json", ".html", ".htm", ".md", ".markdown")


def check_report_path(path: str | Path) -> None:
    """Refuse a report file whose format its suffix does not name (before any case runs)."""
    suffix = Path(path).suffix.lower()
    if suffix not in REPORT_SUFFIXES:
        raise EvalError(f"{path}: a report is .json, .html or .md (not {suffix or 'no suffix'!r})")


def write_report(report: EvalReport, path: str | Path) -> None:
    """Write `report` to `path` as JSON (.json), HTML (.html, .htm) or markdown (.md)."""
    check_report_path(path)
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix == ".json":
        text = report.model_dump_json(indent=2) + "\n"
    elif suffix in (".html", ".htm"):
        text = html_page(report)
    else:
        text = markdown(report)
    try:
        file.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise EvalError(f"{file}: cannot write the report ({exc})") from None


def comparison_lines(comparison: Comparison) -> list[str]:
    """The comparison as lines: each regression, then improvements, added and removed cases."""
    lines = [f"regression: {r}" for r in comparison.regressions]
    lines += [f"improved: {i}" for i in comparison.improvements]
    lines += [f"new case: {n}" for n in comparison.added] + [f"removed case: {n}" for n in comparison.removed]
    verdict = f"{len(comparison.regressions)} regression(s)" if comparison.regressions else "no regression"
    return [*lines, verdict]
