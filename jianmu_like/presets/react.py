"""create_react_node: the ReAct agent as a behaviour-tree subtree.

LoopUntilSuccess(max_iterations, abort_condition=token budget | model error)
  └─ Sequence(memory=True)
       ├─ AgentLLMNode   ask the model: tool calls or a final answer
       ├─ ToolExecutor   guard preflight, run the calls, append observations
       └─ StateCondition SUCCESS when `done`, else FAILURE → next iteration
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..bt import composites
from ..bt.conditions import StateCondition
from ..bt.loop import LoopUntilSuccess
from ..config import ReActConfig
from ..guard.enforcer import GuardEnforcer
from ..models.client import ModelClient
from ..nodes.context import ContextBuilderProtocol
from ..nodes.llm import AgentLLMNode
from ..nodes.tool_executor import ToolExecutor, ToolRunner
from ..state.contract import StateContract, declare
from ..tools.base import Tool
from ..tools.provider import ToolProvider
from ..tools.toolset import ToolSet


def create_react_node(
    name: str = "ReActAgent",
    namespace: str | None = None,
    *,
    model_client: ModelClient,
    tools: Sequence[Tool | Callable[..., Any]] | None = None,
    tool_providers: Sequence[ToolProvider] | None = None,
    tool_provider_context: Any = None,
    tool_runner: ToolRunner | None = None,
    constraints: GuardEnforcer | None = None,
    context_builder: ContextBuilderProtocol | None = None,
    config: ReActConfig | None = None,
) -> LoopUntilSuccess:
    """Build a ReAct subtree. Embed it anywhere in a tree; give each copy its own `namespace`
    when several agents share one state. Children are named `<name>.LLM`, `<name>.Tools`,
    `<name>.Done` under `<name>.Loop`.

    Tools from `tool_providers` (e.g. MCP servers) are merged with the static `tools`; a later
    registration overrides an earlier one of the same name, static tools last.
    """
    config = config or ReActConfig()
    keys = config.keys
    toolset = ToolSet.from_providers(tool_providers or (), context=tool_provider_context).with_tools(
        tools or ()
    )
    llm = AgentLLMNode(
        f"{name}.LLM",
        model_client,
        toolset,
        config=config,
        namespace=namespace,
        context_builder=context_builder,
    )
    executor = ToolExecutor(
        f"{name}.Tools",
        toolset,
        keys=keys,
        namespace=namespace,
        constraints=constraints,
        tool_runner=tool_runner,
        execution_mode=config.execution_mode,
        default_timeout=config.tool_timeout,
        max_output_chars=config.max_output_chars,
    )
    done = StateCondition(f"{name}.Done", key=keys.done, namespace=namespace)
    body = composites.Sequence(f"{name}.Loop", memory=True, children=[llm, executor, done])
    loop = LoopUntilSuccess(
        name,
        body,
        max_iterations=config.max_iterations,
        namespace=namespace,
        termination_key=keys.termination,
    )

    loop.abort_condition = ReActAbort(loop, config, namespace)
    owner = f"ReAct agent {name!r}" + (f" (namespace {namespace!r})" if namespace else "")
    declare(loop, StateContract(owner, tuple(keys.model_dump().values()), namespace))
    return loop


class ReActAbort:
    """The ReAct loop's abort condition: a model error, or the token budget spent.

    Bound to its loop (it reads the loop's state manager); `for_node` re-binds a cloned loop."""

    __slots__ = ("config", "loop", "namespace")

    def __init__(self, loop: LoopUntilSuccess, config: ReActConfig, namespace: str | None) -> None:
        self.loop = loop
        self.config = config
        self.namespace = namespace

    def for_node(self, loop: LoopUntilSuccess) -> ReActAbort:
        return ReActAbort(loop, self.config, self.namespace)

    def __call__(self) -> dict[str, Any] | None:
        sm, keys, namespace = self.loop.state_manager, self.config.keys, self.namespace
        error = sm.get(keys.error, namespace)
        if error:
            return {"reason": "model_error", "error": error}
        budget = self.config.max_budget_tokens
        if budget is not None:
            used = sm.get(keys.usage, namespace).total_tokens
            if used >= budget:
                return {"reason": "budget_exhausted", "total_tokens": used, "max_budget_tokens": budget}
        return None
