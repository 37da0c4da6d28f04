"""create_supervisor_node: a supervisor that decides its fan-out at run time.

Sequence "<name>" (namespace `ns`)
  ├─ SplitStep       structured call: the task → at most `max_agents` sub-questions
  ├─ DynamicParallel "<name>.Agents"   one ReAct sub-agent per sub-question, built per run,
  │                                    namespace `<ns>.q1`, `<ns>.q2`, ... (own budget, own state)
  │    └─ (critic) LoopUntilSuccess: ReAct sub-agent → CriticNode; a rejected answer re-runs
  ├─ (ContextPruner  prune_notes_above: a sub-agent's raw notes above a size leave, its summary stays)
  ├─ GatherStep      structured call: the results → the answer, or one round of follow-ups
  ├─ DynamicParallel "<name>.FollowUps"  sub-agents `<ns>.f1`, ... (none when not asked); with
  │                  `max_rounds` > 1 inside LoopUntilSuccess "<name>.Rounds" with a RoundStep
  │                  after each round: the answer, or the next round's follow-ups
  ├─ AnswerStep      after follow-ups: the answer from every result
  └─ (review_answer) LoopUntilSuccess: ReviseStep (after a rejection) → CriticNode on the
                     supervisor's own answer

The sub-agents run concurrently (their model calls overlap) and never share keys: each has its
own namespace, so `AgentResult.agents["<ns>.q1"]` reports its answer, usage and termination and
`AgentResult.usage` is the total. A sub-agent that fails does not fail the supervisor: the
gather step reads why it stopped (and its fallback answer).

Approvals inside a sub-agent suspend the whole run (the other sub-agents finish first) and
resume like any tree, also from a checkpoint in another process: the sub-agents are rebuilt
from the restored state (the sub-questions) and put back where they stood.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import py_trees
from pydantic import BaseModel, Field

from ..bt import _composites as composites
from ..bt._dynamic_parallel import DynamicParallel
from ..bt._loop import LoopUntilSuccess
from ..guard._enforcer import GuardEnforcer
from ..models._client import ModelClient
from ..models._messages import human
from ..nodes._critic import DEFAULT_CRITIC_PROMPT, CriticNode
from ..nodes._results import attach_reader, read_key
from ..nodes._supervisor_steps import (
    FOLLOW_UPS,
    SUB_QUESTIONS,
    AnswerStep,
    ContextPruner,
    GatherStep,
    ReviseStep,
    RoundStep,
    SplitStep,
    asked,
    current_round,
)
from ..state._contract import StateContract, declare
from ..tools._base import Tool
from ..tools._toolset import ToolSet
from ._research import create_research_node
from .react import create_react_node
from .react._config import ReActConfig
from .react._state import react_reader

DEFAULT_SUPERVISOR_PROMPT = (
    "You are a supervisor. You split a task into independent sub-questions for research "
    "assistants working in parallel, then combine their findings into one answer."
)


class SupervisorConfig(BaseModel):
    """How the supervisor fans out, reviews and answers."""

    max_agents: int = Field(4, ge=1, le=32)
    """At most this many sub-agents per run (extra sub-questions of the plan are dropped)."""
    max_follow_ups: int = Field(2, ge=0)
    """Follow-up questions the supervisor may ask per follow-up round (0: none)."""
    max_rounds: int = Field(1, ge=1)
    """Follow-up rounds at most. After each, the supervisor decides again — the answer, or more
    follow-ups (document 004's routing after every step); the last one ends with the answer."""
    critic: bool = False
    """Review each sub-agent's answer; a rejected one is re-run with the critique."""
    max_critic_retries: int = Field(1, ge=0)
    """Re-runs per sub-agent after a rejection (the last answer is then kept); rewrites of the
    supervisor's answer with `review_answer`."""
    review_answer: bool = False
    """The critic also reviews the supervisor's own answer (its draft); a rejected one is
    rewritten from the results with the critique, at most `max_critic_retries` times."""
    system_prompt: str = DEFAULT_SUPERVISOR_PROMPT
    critic_prompt: str = DEFAULT_CRITIC_PROMPT
    worker_prompt: str | None = None
    """The sub-agents' system prompt (None: the ReAct default)."""
    prune_notes_above: int | None = Field(None, ge=1)
    """A context pruner after each round of sub-agents: a sub-agent whose raw notes (its
    messages: tool calls and results) exceed this many characters keeps only its question and
    final answer. None: off."""
    worker: Literal["react", "research"] = "react"
    """What each sub-agent is: a ReAct agent, or a researcher (document 004's): a cap of
    `worker_max_tool_calls` tool calls, the free `think` tool and a compress step whose cited
    summary is the sub-agent's answer (what the gather step reads)."""
    worker_max_tool_calls: int = Field(5, ge=0)
    """A researcher sub-agent's tool-call cap (`worker: research`)."""


def create_supervisor_node(
    name: str = "Supervisor",
    namespace: str = "supervisor",
    *,
    model_client: ModelClient,
    tools: Sequence[Tool | Callable[..., Any]] | None = None,
    supervisor: SupervisorConfig | None = None,
    config: ReActConfig | None = None,
    worker_config: ReActConfig | None = None,
    worker_client: ModelClient | None = None,
    constraints: GuardEnforcer | None = None,
) -> py_trees.behaviour.Behaviour:
    """Build a supervisor subtree (see the module docstring); its answer is `final_answer` in
    `namespace`, the question is that namespace's `messages` (`Agent` routes plain input there).

    `config` drives the supervisor's own calls (model, temperature, ...); `worker_config` each
    sub-agent (model, `max_iterations`, `max_budget_tokens` — a budget per sub-agent). Sub-agents
    use `worker_client` (default: `model_client`), `tools` and `constraints` (guard policies,
    approvals included).
    """
    settings = supervisor or SupervisorConfig()
    config = config or ReActConfig()
    worker = worker_config or config
    if settings.worker_prompt is not None:
        worker = worker.model_copy(update={"system_prompt": settings.worker_prompt})
    client = worker_client or model_client
    keys = config.keys
    tool_list = list(tools or ())
    if constraints is not None:  # the sub-agents are built at run time: check the rules now
        constraints.attach(ToolSet(tool_list))

    def build(index: int, item: dict[str, Any]) -> py_trees.behaviour.Behaviour:
        label, sub_ns, question = item["label"], item["namespace"], item["question"]
        agent_name = f"{name}.{label}.Agent" if settings.critic else f"{name}.{label}"
        react: py_trees.behaviour.Behaviour
        if settings.worker == "research":
            react = create_research_node(
                agent_name,
                sub_ns,
                model_client=client,
                tools=tool_list,
                max_tool_calls=settings.worker_max_tool_calls,
                config=worker,
                constraints=constraints,
            )
        else:
            react = create_react_node(
                agent_name,
                sub_ns,
                model_client=client,
                tools=tool_list,
                constraints=constraints,
                config=worker,
            )
        if not settings.critic:
            return react
        critic = CriticNode(
            f"{name}.{label}.Critic",
            model_client,
            question=question,
            namespace=sub_ns,
            usage_namespace=namespace,
            max_retries=settings.max_critic_retries,
            system_prompt=settings.critic_prompt,
            config=config,
        )
        body = composites.Sequence(f"{name}.{label}.Review", memory=True, children=[react, critic])
        loop = LoopUntilSuccess(
            f"{name}.{label}",
            body,
            max_iterations=settings.max_critic_retries + 1,
            namespace=sub_ns,
            termination_key="reflexion",
        )
        loop.abort_condition = _AgentFailed(loop, sub_ns, keys.termination)
        return loop

    described = f"tools=[{', '.join(_tool_name(t) for t in tool_list)}]" if tool_list else "no tools"
    critic_note = f" + critic (≤{settings.max_critic_retries} re-run)" if settings.critic else ""
    kind = (
        f"research (≤{settings.worker_max_tool_calls} tool calls)"
        if settings.worker == "research"
        else "ReAct"
    )
    asked = _Questions(namespace, SUB_QUESTIONS, keys.messages)
    agents = DynamicParallel(
        f"{name}.Agents",
        asked,
        build,
        seed=asked.seed,
        max_children=settings.max_agents,
        namespace=namespace,
        describe=f"built per run: ≤{settings.max_agents} {kind} sub-agents ({described}){critic_note}",
    )
    followed = _Questions(namespace, FOLLOW_UPS, keys.messages, current=settings.max_rounds > 1)
    follow_ups = DynamicParallel(
        f"{name}.FollowUps",
        followed,
        build,
        seed=followed.seed,
        max_children=max(settings.max_follow_ups, 1),
        namespace=namespace,
        describe=f"built per run: ≤{settings.max_follow_ups} follow-up sub-agents",
    )
    plan = SplitStep(
        f"{name}.Plan",
        model_client,
        config,
        namespace,
        max_agents=settings.max_agents,
        system_prompt=settings.system_prompt,
    )
    gather = GatherStep(
        f"{name}.Gather",
        model_client,
        config,
        namespace,
        max_follow_ups=settings.max_follow_ups,
        system_prompt=settings.system_prompt,
        max_rounds=settings.max_rounds,
    )
    answer = AnswerStep(
        f"{name}.Answer", model_client, config, namespace, system_prompt=settings.system_prompt
    )
    children: list[py_trees.behaviour.Behaviour] = [plan, agents, gather]
    if settings.max_follow_ups and settings.max_rounds > 1:
        route = RoundStep(
            f"{name}.Route",
            model_client,
            config,
            namespace,
            max_follow_ups=settings.max_follow_ups,
            max_rounds=settings.max_rounds,
            system_prompt=settings.system_prompt,
        )
        body = composites.Sequence(f"{name}.Round", memory=True, children=[follow_ups, route])
        rounds = LoopUntilSuccess(
            f"{name}.Rounds",
            body,
            max_iterations=settings.max_rounds,
            namespace=namespace,
            termination_key="rounds",
        )
        rounds.abort_condition = _SupervisorFailed(rounds, namespace, keys.error)
        children.append(rounds)
    elif settings.max_follow_ups:
        children += [follow_ups, answer]
    if settings.prune_notes_above is not None:
        limit = settings.prune_notes_above
        children.insert(2, ContextPruner(f"{name}.Prune", keys, namespace, max_chars=limit))
        if settings.max_follow_ups:  # after the follow-ups too
            children.insert(5, ContextPruner(f"{name}.PruneFollowUps", keys, namespace, max_chars=limit))
    if settings.review_answer:
        revise = ReviseStep(
            f"{name}.Revise", model_client, config, namespace, system_prompt=settings.system_prompt
        )
        judge = CriticNode(
            f"{name}.Critic",
            model_client,
            question=None,  # the run's task: the supervisor's first user message
            namespace=namespace,
            usage_namespace=namespace,
            max_retries=settings.max_critic_retries,
            system_prompt=settings.critic_prompt,
            config=config,
        )
        review = composites.Sequence(f"{name}.Review.Body", memory=True, children=[revise, judge])
        children.append(
            LoopUntilSuccess(
                f"{name}.Review",
                review,
                max_iterations=settings.max_critic_retries + 1,
                namespace=namespace,
                termination_key="reflexion",
            )
        )
    root = composites.Sequence(name, memory=True, children=children)
    root.namespace = namespace  # type: ignore[attr-defined]  # Agent routes plain input here
    used = (keys.messages, keys.usage, keys.final_answer, keys.termination, keys.error, keys.done)
    declare(root, StateContract(f"supervisor {name!r}", used, namespace, reads=(keys.messages,)))
    return attach_reader(root, react_reader(keys))


class _Questions:
    """A DynamicParallel's plan and seed: one item per question under `list_key` of the
    supervisor namespace (`nodes.supervisor_steps.asked`; with `current`, the current follow-up
    round's only); each sub-agent's namespace starts with its question as the only message."""

    __slots__ = ("current", "list_key", "messages_key", "namespace")

    def __init__(self, namespace: str, list_key: str, messages_key: str, *, current: bool = False) -> None:
        self.namespace = namespace
        self.list_key = list_key
        self.messages_key = messages_key
        self.current = current

    def __call__(self, node: DynamicParallel) -> list[Any]:
        if self.current:
            return current_round(node.state_manager, self.namespace)
        return list(asked(node.state_manager, self.namespace, self.list_key))

    def seed(self, node: DynamicParallel, items: list[Any]) -> None:
        for item in items:
            node.state_manager.update({self.messages_key: [human(item["question"])]}, item["namespace"])


class _AgentFailed:
    """The reflexion loop's abort condition: the sub-agent itself stopped without an answer
    (max_iterations, budget, model error): no critic round can help, so the branch ends.
    Bound to its loop like the ReAct preset's `ReActAbort`."""

    __slots__ = ("loop", "namespace", "termination_key")

    def __init__(self, loop: LoopUntilSuccess, namespace: str, termination_key: str) -> None:
        self.loop = loop
        self.namespace = namespace
        self.termination_key = termination_key

    def for_node(self, loop: LoopUntilSuccess) -> _AgentFailed:
        return _AgentFailed(loop, self.namespace, self.termination_key)

    def __call__(self) -> dict[str, Any] | None:
        termination = read_key(self.loop.state_manager, self.termination_key, self.namespace, None)
        reason = termination.get("reason") if isinstance(termination, dict) else None
        if reason is None or reason == "completed":
            return None
        return {"reason": "agent_failed", "agent_reason": reason}


class _SupervisorFailed:
    """The rounds loop's abort condition: a supervisor call failed (its error is in the
    supervisor namespace), so no further round may run. Bound to its loop like `_AgentFailed`."""

    __slots__ = ("error_key", "loop", "namespace")

    def __init__(self, loop: LoopUntilSuccess, namespace: str, error_key: str) -> None:
        self.loop = loop
        self.namespace = namespace
        self.error_key = error_key

    def for_node(self, loop: LoopUntilSuccess) -> _SupervisorFailed:
        return _SupervisorFailed(loop, self.namespace, self.error_key)

    def __call__(self) -> dict[str, Any] | None:
        error = read_key(self.loop.state_manager, self.error_key, self.namespace, None)
        return {"reason": "model_error", "error": error} if error else None


def _tool_name(tool: Tool | Callable[..., Any]) -> str:
    return str(getattr(tool, "name", None) or getattr(tool, "__name__", "tool"))
