"""PlanSteps: the steps of a plan as ReAct subtrees, built when the plan exists (at run time).

A plan is only known once the planner answered, so its steps cannot be declared with the tree.
This node builds one ReAct subtree per step from the plan in the state (its own namespace, tools
and model), makes them its children — so events, the live tree view and checkpoints see them as
ordinary nodes — and runs them one after the other. Each step's prompt carries the task, the
plan and the results of the steps before it; a finished step's result is appended to
`plan_results`; a failed one is also written to `plan_failure` and the node fails (the preset's
loop then re-plans). The children are rebuilt from the state after a checkpoint restore
(`runtime_children`, see bt._progress) and dropped when the node is reset.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import py_trees
from py_trees.common import Status

from ..bt._node import Node, tick_node, walk
from ..guard._enforcer import GuardEnforcer
from ..models._client import ModelClient
from ..models._keys import StateKeys
from ..models._messages import human
from ..nodes._results import read_key
from ..state._manager import StateManager
from ..telemetry import events as ev
from ..tools._base import Tool
from .react import create_react_node
from .react._config import ReActConfig

PLAN = "plan"
"""The current plan: a list of {"number", "task", "tools", "model"} (step numbers run on across
re-plans, so every step has its own namespace)."""
RESULTS = "plan_results"
"""Every finished step: {"number", "task", "namespace", "model", "status", "answer", "error"}."""
FAILURE = "plan_failure"
"""The step that failed last (a `plan_results` entry), read by the re-planning call."""
REPLANS = "replans"
"""How many times the plan was re-made this run."""


def question_of(sm: StateManager, keys: StateKeys, namespace: str | None) -> str:
    """The user's question: the last user message of `namespace`, else its (or the top
    level's) `task` input."""
    for message in reversed(sm.get(keys.messages, namespace) or []):
        if message.role == "user" and message.content:
            return str(message.content)
    task = read_key(sm, "task", namespace, None) or read_key(sm, "task", None, None)
    return str(task or "")


def render_results(results: Sequence[Mapping[str, Any]]) -> str:
    """Finished steps as prompt text (answers of successful steps only)."""
    done = [r for r in results if r["status"] == "success"]
    if not done:
        return "(none yet)"
    return "\n".join(f"Step {r['number']} ({r['task']}): {r['answer']}" for r in done)


@dataclass(frozen=True)
class StepBuilder:
    """How a plan step becomes a ReAct subtree."""

    name: str
    namespace: str | None
    model_client: ModelClient
    tools: Mapping[str, Tool]
    config: ReActConfig
    models: Mapping[str, str]
    constraints: GuardEnforcer | None = None

    def step_namespace(self, number: int) -> str:
        return f"{self.namespace}.step{number}" if self.namespace else f"step{number}"

    def model_of(self, step: Mapping[str, Any]) -> str | None:
        alias = step.get("model")
        return self.models.get(alias, alias) if alias else None

    def build(self, step: Mapping[str, Any]) -> py_trees.behaviour.Behaviour:
        number = int(step["number"])
        model = self.model_of(step)
        config = self.config.model_copy(update={"model": model}) if model else self.config
        wanted = step.get("tools") or list(self.tools)
        return create_react_node(
            f"{self.name}.Step{number}",
            self.step_namespace(number),
            model_client=self.model_client,
            tools=[self.tools[t] for t in wanted if t in self.tools],
            constraints=self.constraints,
            config=config,
        )


class PlanSteps(Node):
    """Runs the current plan's steps in order (see the module docstring)."""

    runtime_children = True

    def __init__(self, name: str, builder: StepBuilder, *, namespace: str | None = None) -> None:
        super().__init__(name)
        self.builder = builder
        self.namespace = namespace
        self.keys = builder.config.keys

    def show_details(self) -> str:
        """For `jianmu-like show`: what the steps will be (they exist only once planned)."""
        builder = self.builder
        models = (
            f", models={{{', '.join(f'{a}: {m}' for a, m in builder.models.items())}}}"
            if builder.models
            else ""
        )
        return f"a ReAct subtree per planned step (tools=[{', '.join(builder.tools)}]{models})"

    def rebuild_children(self) -> None:
        """One subtree per step of the plan in the state, bound like the rest of the tree."""
        plan: list[dict[str, Any]] = self.state_manager.get(PLAN, self.namespace) or []
        children = [self.builder.build(step) for step in plan]
        for child in children:
            child.parent = self
            for node in walk(child):
                setattr(node, "state_manager", self.state_manager)  # noqa: B010
                setattr(node, "telemetry", self.telemetry)  # noqa: B010
        self.children = children

    def initialise(self) -> None:
        self.rebuild_children()

    def update(self) -> Status:
        plan: list[dict[str, Any]] = self.state_manager.get(PLAN, self.namespace) or []
        for step, child in zip(plan, self.children, strict=True):
            if child.status is Status.SUCCESS:
                continue
            if child.status is Status.INVALID:
                self._start(step)
            tick_node(child)
            status: Status = child.status
            if status is Status.RUNNING:
                return Status.RUNNING
            self._finish(step, status)
            if status is not Status.SUCCESS:
                return Status.FAILURE
        return Status.SUCCESS

    def terminate(self, new_status: Status) -> None:
        if new_status is Status.INVALID:
            for child in self.children:
                if child.status is not Status.INVALID:
                    child.stop(Status.INVALID)
            self.children = []

    def reset_run(self) -> None:
        """Back to as-built (bt._clone): no steps until a plan exists."""
        self.children = []

    def _start(self, step: Mapping[str, Any]) -> None:
        sm, keys, ns = self.state_manager, self.keys, self.namespace
        plan: list[dict[str, Any]] = sm.get(PLAN, ns)
        question = question_of(sm, keys, ns)
        listed = "\n".join(f"{s['number']}. {s['task']}" for s in plan)
        prompt = (
            f"You carry out one step of a plan.\nTask: {question}\n\nPlan:\n{listed}\n\n"
            f"Results of earlier steps:\n{render_results(sm.get(RESULTS, ns) or [])}\n\n"
            f"Your step ({step['number']}): {step['task']}\nReply with the result of this step."
        )
        # A fresh history: a step never reads an earlier run's conversation in its namespace.
        sm.set(keys.messages, [human(prompt)], self.builder.step_namespace(int(step["number"])))
        self.emit(
            ev.PlanStepStarted, step=step["number"], task=step["task"], model=self.builder.model_of(step)
        )

    def _finish(self, step: Mapping[str, Any], status: Status) -> None:
        sm, keys = self.state_manager, self.keys
        step_ns = self.builder.step_namespace(int(step["number"]))
        ok = status is Status.SUCCESS
        termination = sm.get(keys.termination, step_ns) or {}
        error = None
        if not ok:
            reason = termination.get("reason", "failed")
            # The planner re-plans from this: the error, else what the step did (fallback answer).
            detail = (
                termination.get("error")
                or sm.get(keys.error, step_ns)
                or sm.get(keys.fallback_answer, step_ns)
            )
            error = f"{reason}: {detail}" if detail else str(reason)
        result = {
            "number": step["number"],
            "task": step["task"],
            "namespace": step_ns,
            "model": self.builder.model_of(step),
            "status": "success" if ok else "failure",
            "answer": sm.get(keys.final_answer, step_ns) if ok else None,
            "error": error,
        }
        results = [*(sm.get(RESULTS, self.namespace) or []), result]
        sm.update({RESULTS: results, **({} if ok else {FAILURE: result})}, self.namespace)
        details = {k: v for k, v in result.items() if k != "namespace"}
        self.emit(ev.PlanStepCompleted, step_namespace=step_ns, **details)
