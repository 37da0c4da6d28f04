"""Results of trees: what each namespaced agent of a tree answered, spent and why it stopped.

A tree of several agents keeps each agent's keys in its own namespace; without this, a caller
digs them out of the state and the run's usage counts one namespace only. `AgentOutcome` is one
namespace's result, `tree_outcomes` reads them all and `total_usage` sums every namespace.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .bt.runner import EndStatus
from .models.types import Usage
from .state.manager import StateManager
from .state.schema import StateKeys
from .tools.artifact import Artifact

OutcomeStatus = EndStatus | Literal["not_finished"]
"""A namespace's status: how its run ended (`bt.runner.RunStatus`'s words), or `not_finished`."""


class AgentOutcome(BaseModel):
    """One namespace of a tree at the end of a run (`AgentResult.agents["a"]`).

    `status`: "success" (its loop completed, or it wrote an answer), "failure" (it stopped for
    another reason, or a model error), "suspended" (waiting for approvals), "not_finished" (it
    did not run to an end, e.g. a sibling failed first)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    namespace: str
    status: OutcomeStatus
    final_answer: str | None = None
    output: Any = None
    usage: Usage = Field(default_factory=Usage)
    termination: dict[str, Any] | None = None
    error: str | None = None
    artifacts: list[Artifact] = Field(default_factory=list)
    """Artifacts its tools produced this run."""


def read_key(sm: StateManager, key: str, namespace: str | None, default: Any) -> Any:
    """Read a key the schema may not have (a custom schema without `usage`, say)."""
    try:
        value = sm.get(key, namespace, default)
    except KeyError:
        return default
    return default if value is None else value


def read_usage(sm: StateManager, keys: StateKeys, namespace: str | None) -> Usage:
    usage = read_key(sm, keys.usage, namespace, None)
    if isinstance(usage, Usage):
        return usage
    return Usage() if usage is None else Usage.model_validate(usage)


def outcome(sm: StateManager, keys: StateKeys, namespace: str) -> AgentOutcome:
    termination = read_key(sm, keys.termination, namespace, None)
    error = read_key(sm, keys.error, namespace, None)
    answer = read_key(sm, keys.final_answer, namespace, None)
    output = read_key(sm, keys.output, namespace, None)
    status: OutcomeStatus
    if isinstance(termination, dict):
        status = "success" if termination.get("reason") == "completed" else "failure"
        error = error or termination.get("error")
    elif error:
        status = "failure"
    elif read_key(sm, keys.pending_approvals, namespace, None):
        status = "suspended"
    elif answer is not None or output is not None:
        status = "success"
    else:
        status = "not_finished"
    return AgentOutcome(
        namespace=namespace,
        status=status,
        final_answer=answer if status == "success" else None,
        output=output if status == "success" else None,
        usage=read_usage(sm, keys, namespace),
        termination=termination if isinstance(termination, dict) else None,
        error=str(error) if error else None,
        artifacts=list(read_key(sm, keys.artifacts, namespace, [])),
    )


def tree_outcomes(sm: StateManager, keys: StateKeys, namespaces: Iterable[str]) -> dict[str, AgentOutcome]:
    """One outcome per namespace (the tree's, and any other holding state), sorted by name."""
    return {ns: outcome(sm, keys, ns) for ns in sorted({*namespaces, *sm.namespaces()})}


def total_usage(sm: StateManager, keys: StateKeys, outcomes: Iterable[AgentOutcome]) -> Usage:
    """The top level's usage plus every namespace's."""
    total = read_usage(sm, keys, None)
    for item in outcomes:
        total = total + item.usage
    return total


def all_artifacts(sm: StateManager, keys: StateKeys, outcomes: Iterable[AgentOutcome]) -> list[Artifact]:
    """The top level's artifacts, then every namespace's (in namespace order)."""
    found: list[Artifact] = list(read_key(sm, keys.artifacts, None, []))
    for item in outcomes:
        found.extend(item.artifacts)
    return found
