"""Why a run failed, in words: the cause first, then what to do.

Every surface that shows a failed run (the CLI's `error:` line, the server's run record and so
the console) reads `AgentResult.error`. For a ReAct root that is the loop's own error; for a
tree of agents (a preset's pipeline, an agent file's `tree:`) the output namespace often never
ran, so `tree_cause` names the agent that did fail and why (`[plan] truncated: ... (raise
llm.max_tokens ...)`), or, where no agent recorded anything, the node that failed. `headline`
then words any failed result as one first line and the lines that add to it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import py_trees
from py_trees.common import Status

from .._base.redact import redact_text
from ..bt._node import walk
from ..nodes._results import AgentOutcome

if TYPE_CHECKING:
    from .result import AgentResult

_WHAT_TO_DO = {
    "max_iterations": (
        "it reached its limit of {max_iterations} iterations without an answer: raise "
        "limits.max_iterations, or ask a narrower question"
    ),
    "budget_exhausted": (
        "it spent its token budget ({total_tokens} of {max_budget_tokens} tokens): raise "
        "limits.max_budget_tokens"
    ),
    "tool_failures": (
        "{consecutive_failures} tool calls failed in a row (their errors are above): fix the tool "
        "or its arguments, or raise limits.max_tool_failures"
    ),
    "max_ticks": "it stopped at --max-ticks before it finished: raise --max-ticks",
}
"""Terminations that carry no error text of their own: the cause and the remedy."""

_UNREACHABLE = re.compile(r"(could not connect|timed out connecting)", re.IGNORECASE)
_HINT = re.compile(
    r"(nothing listens on|the server at \S+ does not speak TLS)"
    r".*?\(set OPENAI_BASE_URL or provider\.base_url\)"
)
"""A hint of `models._url_hints` inside a model error's text."""


def _reason_words(termination: Mapping[str, Any]) -> str | None:
    reason = str(termination.get("reason") or "")
    template = _WHAT_TO_DO.get(reason)
    if template is None:
        return None
    try:
        return template.format(**termination)
    except (KeyError, IndexError):
        return f"{reason}: {template.split(':', 1)[-1].strip()}"


def _outcome_cause(item: AgentOutcome) -> str:
    termination = item.termination or {}
    return item.error or _reason_words(termination) or str(termination.get("reason") or "failed")


def tree_cause(agents: Mapping[str, AgentOutcome], tree: py_trees.behaviour.Behaviour) -> str | None:
    """Why a tree failed when its output namespace does not say: every failed agent's cause
    (`[ns] ...`, one line each), else the deepest node that ended in FAILURE; None when nothing
    in the tree failed (e.g. a run cut short)."""
    failed = [item for item in agents.values() if item.status == "failure"]
    if failed:
        return "\n".join(f"[{item.namespace}] {_outcome_cause(item)}" for item in failed)
    leaves = [
        node
        for node in walk(tree)
        if node.status == Status.FAILURE and not any(c.status == Status.FAILURE for c in node.children)
    ]
    if leaves:
        node = leaves[0]
        note = f": {node.feedback_message}" if node.feedback_message else ""
        return f"node {node.name!r} failed{note}"
    return None


def headline(result: AgentResult) -> tuple[str, list[str]]:
    """A failed `result` as its first line (the cause, and what to do) and the lines that add to
    it (the error's own words where the first line rephrased them)."""
    termination = result.termination or {}
    detail = redact_text(
        str(termination.get("error") or result.error or "")
    ).strip()  # whoever quoted a secret
    first, _, rest = detail.partition("\n")
    more = [line for line in rest.splitlines() if line.strip()]
    fault = result.fault
    url = re.search(r"url=(\S+)", detail)
    if fault is not None and fault.kind == "provider_error":
        return f"a tool provider could not start (provider_error): {first}", more
    if fault is not None and fault.kind == "guard_error":
        return f"the guard names tools the agent does not have: {first}", more
    if fault is not None:
        return f"node {fault.node!r} raised an exception ({fault.kind}): {first}", more
    if url and _UNREACHABLE.search(detail) and "cannot reach" not in first:
        hint = _HINT.search(detail)
        if hint is not None:  # the hint is the cause; the transport's words add nothing
            return f"cannot reach the model server at {url.group(1)}: {hint.group(0)}", []
        remedy = "is it running? (set OPENAI_BASE_URL or provider.base_url)"
        return f"cannot reach the model server at {url.group(1)}: {remedy}", [detail]
    if first:
        return first, more
    words = _reason_words(termination)
    if words is not None:
        return words, []
    reason = str(termination.get("reason") or "error")
    return f"the agent failed ({reason}), and nothing recorded why (run with -v, or --json)", []


def failure_text(result: AgentResult) -> str:
    """`headline` as one text: the first line, then the lines that add to it (the server's
    `error` of a failed run, which the console shows)."""
    first, more = headline(result)
    return "\n".join([first, *more])
