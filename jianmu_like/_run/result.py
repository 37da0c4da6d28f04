"""`AgentResult`, and how the state at a run's end becomes one.

One function builds every result, for an Agent and a Conversation alike: the answer, output and
fallback are read from the output namespace (only on the status that owns them: a failed run
has no `final_answer`), usage and artifacts from the whole tree, and a node exception the loop
did not record becomes the termination (its path and error), so a failure always says why.
"""

from __future__ import annotations

from typing import Any

import py_trees
from pydantic import BaseModel, ConfigDict, Field

from ..bt._fault import NodeFault
from ..bt._runner import EndStatus, RunOutcome
from ..guard._approvals import Approval
from ..guard._interruptions import Interruption, from_approval
from ..models._keys import StateKeys
from ..models._types import Usage
from ..nodes._results import AgentOutcome, all_artifacts, read_key, total_usage, tree_outcomes
from ..state._inputs import TreeInputs
from ..state._manager import StateManager
from ..state._schema import schema_spec
from ..tools._artifact import Artifact
from .explain import tree_cause


class AgentResult(BaseModel):
    """The outcome of one `Agent.run()`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    status: EndStatus
    final_answer: str | None = None
    fallback_answer: str | None = None
    """When a ReAct run stopped without an answer (status "failure", termination reason
    "max_iterations", "budget_exhausted" or "tool_failures"): why, and which tools ran with
    what results. `final_answer` stays None: it is only set on success."""
    output: Any = None
    """The validated structured answer (a pydantic instance) of an agent with an `output_type`."""
    artifacts: list[Artifact] = Field(default_factory=list)
    """Documents the run's tools produced (whole; the model saw placeholders): the top level's,
    then every namespace's."""
    state: Any = None
    """A detached copy of the state model at the end of the run."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens spent by the whole tree: the top level plus every namespace."""
    agents: dict[str, AgentOutcome] = Field(default_factory=dict)
    """Per namespace of a tree: its answer, usage, termination and status (`agents["a"]`)."""
    output_namespace: str | None = None
    """The namespace `final_answer`, `output` and `termination` were read from (None: top level)."""
    termination: dict[str, Any] | None = None
    """Why the run ended: {"reason": "completed" | "max_iterations" | "budget_exhausted" |
    "model_error" | "node_error" | "provider_error" | ..., "iterations": n, ...}; a node
    exception adds "failed_node" (its path) and "error"."""
    pending_approvals: list[Approval] = Field(default_factory=list)
    """Tool calls waiting for a human (status "suspended"); decide with approve()/deny()."""
    thread_id: str | None = None
    """The thread (conversation) of the run: its id in the checkpoint store, or without a
    checkpointer the `thread_id` it was given (None: the agent's default thread)."""
    error: str | None = None
    """Why a failed run failed, e.g. "RuntimeError: kaput" or the model error's message."""
    fault: NodeFault | None = None
    """The node exception that ended the run: node path, kind, exception type and message."""
    ticks: int = 0
    elapsed: float = 0.0
    run_id: str = ""

    @property
    def interruptions(self) -> list[Interruption]:
        """What a suspended run waits for, as interruptions (`pending_approvals`, each of kind
        `approval` or `client_tool`): answer each with `Agent.decide(id, answer)`, then
        `resume()`. A question never outlives its run, so it is never here."""
        return [from_approval(approval) for approval in self.pending_approvals]


def build_result(
    sm: StateManager,
    keys: StateKeys,
    tree: py_trees.behaviour.Behaviour,
    namespace: str | None,
    outcome: RunOutcome,
    *,
    pending: list[Approval],
    thread_id: str | None,
    elapsed: float,
    run_id: str,
) -> AgentResult:
    """The result of a run of `tree` that ended with `outcome`; `namespace` is the output
    namespace (where the answer, output and termination are read)."""
    status, ticks, fault = outcome.status, outcome.ticks, outcome.fault
    agents = tree_outcomes(sm, keys, TreeInputs.of(tree, schema_spec(sm.schema)).namespaces)
    termination = read_key(sm, keys.termination, namespace, None)
    if outcome.max_ticks_reached:
        agent_status: EndStatus = "failure"
        error: str | None = f"stopped after max_ticks={ticks} ticks"
    elif fault is not None:
        agent_status, error = "failure", fault.error
        if not isinstance(termination, dict) or termination.get("failed_node") != fault.node:
            # No loop of the output namespace recorded it (a plain tree, another agent).
            termination = {"reason": fault.kind, "failed_node": fault.node, "error": fault.error}
    else:
        agent_status = status
        error = read_key(sm, keys.error, namespace, None)
    if agent_status == "failure" and not error and not isinstance(termination, dict):
        error = tree_cause(agents, tree)  # a tree whose output namespace never said why
    success, failure = agent_status == "success", agent_status == "failure"
    return AgentResult(
        status=agent_status,
        final_answer=read_key(sm, keys.final_answer, namespace, None) if success else None,
        fallback_answer=read_key(sm, keys.fallback_answer, namespace, None) if failure else None,
        output=read_key(sm, keys.output, namespace, None) if success else None,
        artifacts=all_artifacts(sm, keys, agents.values()),
        state=sm.copy_state(),
        usage=total_usage(sm, keys, agents.values()),
        agents=agents,
        output_namespace=namespace,
        termination=termination,
        pending_approvals=pending,
        thread_id=thread_id,
        error=error,
        fault=fault,
        ticks=ticks,
        elapsed=elapsed,
        run_id=run_id,
    )
