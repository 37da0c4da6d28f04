"""create_plan_execute_node: plan with one structured call, run each step as a ReAct agent, answer.

Sequence(memory=True)
  ├─ PlanStart        forget the last run's plan and results
  ├─ LoopUntilSuccess (1 + max_replans rounds; stops at once on a planner model error)
  │    └─ Sequence: Planner (structured call → `plan`) → PlanSteps (a ReAct subtree per step,
  │                 built at run time, each in its own namespace with its tools and model)
  └─ PlanAnswer       one call writes the final answer from the steps' results

A step that fails (model error, max iterations, budget...) fails the round; the loop then asks the
planner again, which sees the results so far and what failed, and plans the remaining work — at
most `max_replans` times (termination reason `step_failed` after that). Each step may name a
model alias from `models` (the per-step model override: its requests carry that model name).
Every step reports in `AgentResult.agents["<namespace>.step<n>"]` (or `"step<n>"` at the top
level), the planner and writer calls in the preset's namespace.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from py_trees.common import Status
from pydantic import BaseModel, Field

from ..bt import _composites as composites
from ..bt._loop import LoopUntilSuccess
from ..bt._node import Node
from ..guard._enforcer import GuardEnforcer
from ..models._client import ModelClient
from ..models._messages import Message, ai, human, system
from ..nodes._context import with_date
from ..nodes._prompt_call import PromptCall
from ..nodes._results import attach_reader
from ..state._contract import StateContract, declare
from ..telemetry import events as ev
from ..tools._base import Tool
from ..tools._toolset import ToolSet
from ._plan_steps import FAILURE, PLAN, REPLANS, RESULTS, PlanSteps, StepBuilder, question_of, render_results
from .react._config import ReActConfig
from .react._state import react_reader

DEFAULT_PLANNER_PROMPT = (
    "You are a planner. Break the task into a short list of steps, in order; each step is a "
    "self-contained instruction that an assistant with tools carries out, and later steps see "
    "the results of earlier ones. Do not answer the task yourself."
)


class PlanStep(BaseModel):
    """One step of a plan, as the planner writes it."""

    task: str = Field(description="What this step must find out or do, self-contained.")
    tools: list[str] = Field(default_factory=list, description="Tool names this step may use (empty: all).")
    model: str | None = Field(None, description="A model alias for this step (null: the default model).")


class Plan(BaseModel):
    """Numbered steps that together answer the task."""

    steps: list[PlanStep] = Field(min_length=1)


def create_plan_execute_node(
    name: str = "PlanExecute",
    namespace: str | None = None,
    *,
    model_client: ModelClient,
    tools: Sequence[Tool | Callable[..., Any]] | None = None,
    models: Mapping[str, str] | None = None,
    config: ReActConfig | None = None,
    constraints: GuardEnforcer | None = None,
    planner_prompt: str | None = None,
    max_steps: int = 5,
    max_replans: int = 1,
) -> composites.Sequence:
    """Build a plan-and-execute subtree (see the module docstring).

    `models` maps aliases the planner may give a step (e.g. {"fast": "gpt-4o-mini", "strong":
    "gpt-4o"}) to model names; `config` (limits, budget, prompts) applies to every step and the
    planner/writer calls. The user's question is the last user message of `namespace` (or the
    `task` input).
    """
    if max_steps < 1 or max_replans < 0:
        raise ValueError(f"max_steps must be >= 1 and max_replans >= 0 (got {max_steps}, {max_replans})")
    config = config or ReActConfig()
    toolset = ToolSet(tools or ())
    if constraints is not None:  # steps are built at run time, each with some of the tools
        constraints.attach(toolset)
    by_name = {t.name: t for t in toolset}
    builder = StepBuilder(name, namespace, model_client, by_name, config, dict(models or {}), constraints)
    planner = Planner(
        f"{name}.Plan",
        model_client,
        namespace=namespace,
        config=config,
        builder=builder,
        prompt=planner_prompt or DEFAULT_PLANNER_PROMPT,
        max_steps=max_steps,
    )
    steps = PlanSteps(f"{name}.Steps", builder, namespace=namespace)
    rounds = LoopUntilSuccess(
        f"{name}.Rounds",
        composites.Sequence(f"{name}.Round", memory=True, children=[planner, steps]),
        max_iterations=1 + max_replans,
        namespace=namespace,
        termination_key=config.keys.termination,
    )
    rounds.abort_condition = PlanAbort(rounds, config, namespace, max_replans)
    answer = PlanAnswer(f"{name}.Answer", model_client, namespace=namespace, config=config)
    root = composites.Sequence(
        name, memory=True, children=[PlanStart(f"{name}.Start", namespace=namespace), rounds, answer]
    )
    root.namespace = namespace  # type: ignore[attr-defined]  # the Agent reads its input/answer here
    keys = config.keys
    needed = (keys.messages, keys.usage, keys.error, keys.final_answer, keys.termination, keys.done)
    owner = f"plan-and-execute {name!r}" + (f" (namespace {namespace!r})" if namespace else "")
    declare(root, StateContract(owner, needed, namespace, reads=(keys.messages, "task")))
    return attach_reader(root, react_reader(keys))


class PlanStart(Node):
    """Forgets the previous run's plan (plain state keys are not reset by a fresh run)."""

    def __init__(self, name: str, *, namespace: str | None = None) -> None:
        super().__init__(name)
        self.namespace = namespace

    def update(self) -> Status:
        self.state_manager.update({PLAN: [], RESULTS: [], FAILURE: None, REPLANS: 0}, self.namespace)
        return Status.SUCCESS


class Planner(PromptCall):
    """The planning call: a `Plan` (structured), checked against the tools, the model aliases and
    `max_steps` (a plan that does not fit is re-asked by `structured_llm_call`). After a failed
    step it re-plans: it sees the results so far and what failed."""

    def __init__(
        self,
        name: str,
        model_client: ModelClient,
        *,
        namespace: str | None,
        config: ReActConfig,
        builder: StepBuilder,
        prompt: str,
        max_steps: int,
    ) -> None:
        super().__init__(name, model_client, namespace=namespace, config=config, schema=Plan)
        self.builder = builder
        self.instructions = prompt
        self.max_steps = max_steps

    def prompt(self) -> list[Message]:
        sm, ns, builder = self.state_manager, self.namespace, self.builder
        question = question_of(sm, self.keys, ns)
        tools = "\n".join(
            f"- {t.name}: {t.description.splitlines()[0] if t.description else ''}"
            for t in builder.tools.values()
        )
        lines = [
            self.instructions,
            f"At most {self.max_steps} steps.",
            f"Tools:\n{tools or '(none)'}",
        ]
        if builder.models:
            lines.append("Model aliases a step may name: " + ", ".join(builder.models))
        text = f"Task: {question}"
        failure = sm.get(FAILURE, ns)
        if failure:
            text += (
                f"\n\nA previous plan was tried. Results so far:\n{render_results(sm.get(RESULTS, ns) or [])}"
                f"\n\nStep {failure['number']} ({failure['task']}) failed: {failure['error']}"
                "\nPlan the remaining work (the results above are kept; do not repeat them)."
            )
        return [system(with_date("\n\n".join(lines))), human(text)]

    def parse(self, raw: dict[str, Any]) -> Plan:
        plan = Plan.model_validate(raw)
        if len(plan.steps) > self.max_steps:
            raise ValueError(f"the plan has {len(plan.steps)} steps; at most {self.max_steps} are allowed")
        known = self.builder.tools
        for step in plan.steps:
            unknown = [t for t in step.tools if t not in known]
            if unknown:
                raise ValueError(f"unknown tools {unknown} (available: {', '.join(known) or 'none'})")
            if step.model and self.builder.models and step.model not in self.builder.models:
                raise ValueError(
                    f"unknown model alias {step.model!r} (one of {', '.join(self.builder.models)})"
                )
        return plan

    def accept(self, value: Any, text: str) -> dict[str, Any]:
        sm, ns = self.state_manager, self.namespace
        first = len(sm.get(RESULTS, ns) or []) + 1
        steps = [{"number": first + i, **step.model_dump()} for i, step in enumerate(value.steps)]
        updates: dict[str, Any] = {PLAN: steps}
        if sm.get(FAILURE, ns):
            updates[REPLANS] = (sm.get(REPLANS, ns) or 0) + 1
        self.emit(ev.PlanCreated, steps=steps, replan=REPLANS in updates)
        return updates


class PlanAnswer(PromptCall):
    """The final answer from the question and the steps' results."""

    def prompt(self) -> list[Message]:
        sm, ns = self.state_manager, self.namespace
        question = question_of(sm, self.keys, ns)
        persona = self.config.system_prompt or "You write the final answer to the user's task."
        results = render_results(sm.get(RESULTS, ns) or [])
        return [
            system(with_date(persona)),
            human(
                f"Task: {question}\n\nResults of the plan's steps:\n{results}"
                "\n\nWrite the final answer to the task from these results."
            ),
        ]

    def accept(self, value: Any, text: str) -> dict[str, Any]:
        keys = self.keys
        return {keys.final_answer: text, keys.done: True, keys.messages: [ai(text)]}


class PlanAbort:
    """Stops the rounds on a planner model error, and after the last allowed re-plan failed
    (reason `step_failed`, naming the step and why). Bound to its loop (`for_node` re-binds)."""

    __slots__ = ("config", "loop", "max_replans", "namespace")

    def __init__(
        self, loop: LoopUntilSuccess, config: ReActConfig, namespace: str | None, max_replans: int
    ) -> None:
        self.loop, self.config, self.namespace, self.max_replans = loop, config, namespace, max_replans

    def for_node(self, loop: LoopUntilSuccess) -> PlanAbort:
        return PlanAbort(loop, self.config, self.namespace, self.max_replans)

    def __call__(self) -> dict[str, Any] | None:
        sm, ns = self.loop.state_manager, self.namespace
        error = sm.get(self.config.keys.error, ns)
        if error:
            return {"reason": "model_error", "error": error}
        failure = sm.get(FAILURE, ns)
        if failure and (sm.get(REPLANS, ns) or 0) >= self.max_replans:
            return {"reason": "step_failed", "step": failure["number"], "error": failure["error"]}
        return None
