"""The agent kinds of agent files, declared once: what each is made of and how it is built.

An agent file is `kind: tree` or one agent of a kind below; a tree node may be an agent of any of
these kinds too. The loader (checking, building, `preset:` references), the wiring check and
`jianmu-like show` all read this table, so a new kind is one entry here (and its spec model in
`spec`), never a list to update in five places (one forgot `supervisor` before this table).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_args

import py_trees
from pydantic import BaseModel

from ..presets.react._config import ReActConfig
from ._spec import (
    AgentKindName,
    FileKindName,
    PlanExecuteSpec,
    PlanOptions,
    ReActSpec,
    ResearchOptions,
    ResearchSpec,
    SupervisorOptions,
    SupervisorSpec,
)

BuildArgs = dict[str, Any]
"""The arguments of `create_react_node` the loader derives from the ReAct fields (`_react_args`)."""

Build = Callable[[BuildArgs, ReActSpec, Any], py_trees.behaviour.Behaviour]
"""Builds the agent from the common ReAct arguments, its spec and its options section (or None)."""


@dataclass(frozen=True)
class AgentKind:
    """One agent kind: its tree-node spec, its options section, what it refuses, how it is built."""

    name: AgentKindName
    spec: type[ReActSpec]
    """The body of a tree node of this kind (the ReAct fields plus the options section)."""
    section: str | None
    """The key of the kind's options (`supervisor:`, `plan:`, `research:`), None for react."""
    options: type[BaseModel] | None
    """The model of that section (its defaults apply when a file leaves it out)."""
    unsupported: tuple[str, ...]
    """ReAct keys the kind does not take (an error with its line, never silently ignored)."""
    namespace: str | None
    """The namespace it writes when the file names none."""
    implicit_tools: tuple[str, ...]
    """Tools the kind adds to the agent's own (guard rules may name them)."""
    build: Build
    summary: str
    """What it is, in a few words (for `show` and error messages)."""

    def options_of(self, spec: Any) -> Any:
        """The kind's options in `spec` (a tree node body or a whole file), defaults if unset."""
        if self.section is None or self.options is None:
            return None
        found = getattr(spec, self.section, None)
        return found if found is not None else self.options()


def _react(args: BuildArgs, spec: ReActSpec, options: Any) -> py_trees.behaviour.Behaviour:
    from ..presets.react import create_react_node

    return create_react_node(**args)


def _supervisor(args: BuildArgs, spec: ReActSpec, options: SupervisorOptions) -> py_trees.behaviour.Behaviour:
    """A supervisor; the ReAct settings are its sub-agents' (and model settings its own)."""
    from ..presets._supervisor import SupervisorConfig, create_supervisor_node

    config: ReActConfig = args["config"]
    prompts = (("system_prompt", options.prompt), ("critic_prompt", options.critic_prompt))
    settings = SupervisorConfig(
        max_agents=options.max_agents,
        max_follow_ups=options.max_follow_ups,
        max_rounds=options.max_rounds,
        critic=options.critic,
        max_critic_retries=options.max_critic_retries,
        prune_notes_above=options.prune_notes_above,
        worker=options.worker,
        review_answer=options.review_answer,
        worker_max_tool_calls=options.worker_max_tool_calls,
        **{k: v for k, v in prompts if v},
    )
    return create_supervisor_node(
        spec.name if "name" in spec.model_fields_set else "Supervisor",
        spec.namespace or "supervisor",
        model_client=args["model_client"],
        tools=args["tools"],
        supervisor=settings,
        config=config.model_copy(update={"system_prompt": None}),
        worker_config=config,
        constraints=args["constraints"],
    )


def _plan_execute(args: BuildArgs, spec: ReActSpec, options: PlanOptions) -> py_trees.behaviour.Behaviour:
    from ..presets._plan_execute import create_plan_execute_node

    args = {k: v for k, v in args.items() if k not in ("tool_providers", "output_type")}
    return create_plan_execute_node(
        **args,
        models=options.models,
        planner_prompt=options.planner_prompt,
        max_steps=options.max_steps,
        max_replans=options.max_replans,
    )


def _research(args: BuildArgs, spec: ReActSpec, options: ResearchOptions) -> py_trees.behaviour.Behaviour:
    from ..presets._research import create_research_node

    args = {k: v for k, v in args.items() if k != "output_type"}
    return create_research_node(
        **args, max_tool_calls=options.max_tool_calls, compress_prompt=options.compress_prompt
    )


AGENT_KINDS: dict[str, AgentKind] = {
    kind.name: kind
    for kind in (
        AgentKind("react", ReActSpec, None, None, (), None, (), _react, "one ReAct agent"),
        AgentKind(
            "supervisor",
            SupervisorSpec,
            "supervisor",
            SupervisorOptions,
            # the supervisor plans with every tool name known before the run
            ("mcp_servers", "output_schema", "skills"),
            "supervisor",
            (),
            _supervisor,
            "a supervisor of parallel ReAct sub-agents",
        ),
        AgentKind(
            "plan_execute",
            PlanExecuteSpec,
            "plan",
            PlanOptions,
            ("mcp_servers", "output_schema", "skills"),  # the planner needs every tool name before the run
            None,
            (),
            _plan_execute,
            "a planner and one ReAct agent per step",
        ),
        AgentKind(
            "research",
            ResearchSpec,
            "research",
            ResearchOptions,
            ("output_schema", "skills"),
            None,
            ("think",),
            _research,
            "a research agent with a tool-call cap and a cited summary",
        ),
    )
}
"""Every agent kind by name."""

FILE_KINDS: tuple[str, ...] = (*AGENT_KINDS, "tree")
"""Every `kind:` an agent file may have."""

if tuple(AGENT_KINDS) != get_args(AgentKindName) or get_args(FileKindName) != FILE_KINDS:
    raise AssertionError("agentfile._kinds: AgentKindName/FileKindName differ from AGENT_KINDS")


def agent_kind(name: str) -> AgentKind | None:
    """The agent kind called `name` (None for `tree` and node kinds that are not agents)."""
    return AGENT_KINDS.get(name)
