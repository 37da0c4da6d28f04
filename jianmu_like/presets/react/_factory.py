"""create_react_node: the ReAct agent as a behaviour-tree subtree.

LoopUntilSuccess(max_iterations, abort_condition=token budget | model error)
  └─ Sequence(memory=True)
       ├─ ToolSelectionNode (above `tool_selection.threshold` tools) once per run: pick the tools
       ├─ AgentLLMNode   ask the model: tool calls or a final answer
       ├─ ToolExecutor   guard preflight, run the calls, append observations
       ├─ ReflectionNode (reflect_after) every N tool calls: is the chain consistent?
       ├─ InterruptGate  SUCCESS when `done`, else FAILURE → next iteration; lets injected
       │                 follow-ups in first (`Agent.inject`)
       ├─ AnswerCheck    (answer_check.enabled) re-ask an empty / too short / repeated answer once
       ├─ OutputNode     validate the answer into `output` (`output_type`, or the run's own
       │                 `output_schema`), re-ask once; passes when neither is set
       └─ SynthesisNode  (synthesize) one streaming call writes the answer from the trace

The loop also stops after `max_tool_failures` failed tool calls in a row (`tool_failures`), and a
run that stops without an answer (max_iterations, budget, tool failures) leaves a fallback answer
summarising the tools it ran (`fallback_answer`, `AgentResult.fallback_answer`). A context guard
(`config.context`) keeps each model request within the model's context window.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ...bt import _composites as composites
from ...bt._loop import LoopUntilSuccess
from ...guard._enforcer import GuardEnforcer
from ...guard._policies import Breakpoint
from ...models._client import ModelClient
from ...models._structured import OutputSchema
from ...nodes._answer_check import AnswerCheck
from ...nodes._context import DEFAULT_PERSONA, ContextBuilder, ContextBuilderProtocol, PromptRuntime
from ...nodes._context_guard import ContextGuard
from ...nodes._interrupts import InterruptGate
from ...nodes._llm import AgentLLMNode
from ...nodes._output import INVALID_OUTPUT, OutputNode
from ...nodes._reflection import ReflectionNode
from ...nodes._results import attach_reader
from ...nodes._synthesis import SynthesisNode
from ...nodes._tool_executor import ToolExecutor, ToolRunner
from ...nodes._tool_selection import ToolSelectionNode
from ...nodes._trace import FALLBACK_REASONS, fallback_answer, read_trace
from ...nodes._truncation import TRUNCATED
from ...state._contract import StateContract, declare
from ...telemetry import events as ev
from ...tools._base import Tool
from ...tools._provider import ToolProvider
from ...tools._skills import SkillSet, skill_tools
from ...tools._toolset import ToolSet
from ...tools.mcp._provider import MCPToolProvider
from ._config import ReActConfig
from ._mcp_prompts import MCPPromptReader
from ._state import react_reader


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
    output_type: type[BaseModel] | Mapping[str, Any] | None = None,
    skills: SkillSet | Sequence[str | Path] | None = None,
    prompt_runtime: PromptRuntime | None = None,
) -> LoopUntilSuccess:
    """Build a ReAct subtree. Embed it anywhere in a tree; give each copy its own `namespace`
    when several agents share one state. Children are named `<name>.LLM`, `<name>.Tools`,
    `<name>.Done` under `<name>.Loop` (and `<name>.SelectTools`, `<name>.AnswerCheck`,
    `<name>.Output`, `<name>.Synthesize` when configured).

    Tools from `tool_providers` (e.g. MCP servers) are merged with the static `tools`; a later
    registration overrides an earlier one of the same name, static tools last.

    `output_type` (a pydantic model class, or a JSON schema) asks for the final answer as JSON
    of that shape: the system prompt says so, `<name>.Output` validates it into the `output`
    key (`AgentResult.output`), an invalid answer is re-asked once, then the run fails with
    termination reason `invalid_output`.

    `skills` (a `SkillSet`, or skill folders) gives the agent skills (see `tools._skills`): their
    catalogue follows the system prompt, `use_skill`, `read_skill_file` and one `run_<skill>`
    tool per skill with scripts join its tools. `prompt_runtime` supplies the system prompt at
    run time, before the default one (see `nodes._context.ContextBuilder`); with an explicit
    `context_builder` it is refused (that builder owns the prompt).
    """
    config = config or ReActConfig()
    keys = config.keys
    schema = OutputSchema(output_type) if output_type is not None else None
    skillset, skill_tools_ = skill_tools(skills)

    def persona_of(system_prompt: str | None) -> str | None:
        """The agent's system prompt from its written (or MCP) one: the output schema's
        instruction and the skills' catalogue after it, when it has them."""
        if schema is None and skillset is None:
            return system_prompt
        parts = [system_prompt or DEFAULT_PERSONA]
        if schema is not None:
            parts.append(f"Final answer: {schema.instruction()}")
        if skillset is not None:
            parts.append(skillset.prompt())
        return "\n\n".join(parts)

    from_mcp = config.system_prompt_from is not None or config.first_messages_from is not None
    if from_mcp and context_builder is not None and not isinstance(context_builder, ContextBuilder):
        raise ValueError("an MCP system prompt or first messages need the default ContextBuilder")
    if prompt_runtime is not None and context_builder is not None:
        raise ValueError("give context_builder or prompt_runtime, not both: the builder owns the prompt")
    if context_builder is None and (schema is not None or from_mcp or skillset or prompt_runtime):
        context_builder = ContextBuilder(
            persona_of(config.system_prompt),
            include_tool_descriptions=config.include_tool_descriptions,
            prompt_runtime=prompt_runtime,
        )
    toolset = ToolSet.from_providers(tool_providers or (), context=tool_provider_context).with_tools(
        [*skill_tools_, *(tools or ())]
    )
    if from_mcp:  # read when the servers are ready, before the first model call
        assert isinstance(context_builder, ContextBuilder)
        reader = MCPPromptReader(
            toolset,
            context_builder,
            persona_of,
            system_prompt=config.system_prompt_from,
            first_messages=config.first_messages_from,
        )
        toolset.add_check(reader)
    if config.breakpoint_every is not None:  # a human look every N rounds: an approval
        pause = Breakpoint(config.breakpoint_every)
        constraints = constraints.with_policies(pause) if constraints else GuardEnforcer([pause])
    if constraints is not None:  # a rule for a tool the agent does not have fails here
        constraints.attach(toolset)
    for provider in toolset.providers:  # MCP servers allowed to sample ask this agent's model
        if isinstance(provider, MCPToolProvider):
            provider.use_model_client(model_client)
    select = config.tool_selection.enabled and (
        bool(toolset.providers) or len(toolset) > config.tool_selection.threshold
    )
    llm = AgentLLMNode(
        f"{name}.LLM",
        model_client,
        toolset,
        # With a synthesis phase the user reads its answer: only its tokens are streamed.
        config=config.model_copy(update={"stream": False}) if config.synthesize and config.stream else config,
        namespace=namespace,
        context_builder=context_builder,
        request_transform=ContextGuard(model_client, config.context, model=config.model)
        if config.context.enabled
        else None,
        selection_key=keys.selected_tools if select else None,
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
        max_budget_tokens=config.max_budget_tokens,
    )
    done = InterruptGate(f"{name}.Done", keys=keys, namespace=namespace)
    children: list[Any] = [llm, executor, done]
    if config.reflect_after is not None:
        reflect = ReflectionNode(
            f"{name}.Reflect", model_client, config.reflect_after, config=config, namespace=namespace
        )
        children.insert(2, reflect)
    if select:
        children.insert(
            0,
            ToolSelectionNode(
                f"{name}.SelectTools",
                model_client,
                toolset,
                config=config,
                namespace=namespace,
                selection=config.tool_selection,
            ),
        )
    if config.answer_check.enabled:
        children.append(
            AnswerCheck(
                f"{name}.AnswerCheck",
                config.answer_check,
                tool_names=toolset.names,
                keys=keys,
                namespace=namespace,
            )
        )
    # Always there: without an output_type it checks a run's own output schema (a caller's
    # `response_format`), and passes at once when the run has none.
    children.append(OutputNode(f"{name}.Output", schema, keys=keys, namespace=namespace))
    if config.synthesize:
        children.append(
            SynthesisNode(
                f"{name}.Synthesize",
                model_client,
                config=config,
                namespace=namespace,
                tool_chars=config.synthesis_tool_chars,
            )
        )
    body = composites.Sequence(f"{name}.Loop", memory=True, children=children)
    loop = LoopUntilSuccess(
        name,
        body,
        max_iterations=config.max_iterations,
        namespace=namespace,
        termination_key=keys.termination,
    )

    loop.abort_condition = ReActAbort(loop, config, namespace)
    loop.on_termination = ReActFallback(loop, config, namespace)
    owner = f"ReAct agent {name!r}" + (f" (namespace {namespace!r})" if namespace else "")
    unused: set[str] = {"text_output", "skill_result"}  # other nodes' keys
    per_run = {"client_tools", "output_schema"}  # a caller's run inputs: read when the state has them
    if schema is None:
        per_run |= {"output", "output_retries"}
    used = keys.model_dump(exclude={*unused, *per_run} if select else {*unused, *per_run, "selected_tools"})
    needed = tuple(used.values())
    optional = tuple(getattr(keys, key) for key in sorted(per_run))
    declare(loop, StateContract(owner, needed, namespace, reads=(*needed, *optional)))
    return attach_reader(loop, react_reader(keys))


class ReActAbort:
    """The ReAct loop's abort condition: a model error, too many failed tool calls in a row, or
    the token budget spent.

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
            text = str(error)
            reason = "invalid_output" if text.startswith(INVALID_OUTPUT) else "model_error"
            reason = TRUNCATED if text.startswith(TRUNCATED) else reason
            return {"reason": reason, "error": error}
        limit = self.config.max_tool_failures
        if limit is not None:
            failures: int = sm.get(keys.tool_failures, namespace) or 0
            if failures >= limit:
                return {
                    "reason": "tool_failures",
                    "consecutive_failures": failures,
                    "max_tool_failures": limit,
                }
        budget = self.config.max_budget_tokens
        if budget is not None:
            used = sm.get(keys.usage, namespace).total_tokens
            if used >= budget:
                return {"reason": "budget_exhausted", "total_tokens": used, "max_budget_tokens": budget}
        return None


class ReActFallback:
    """The ReAct loop's termination hook: a run that stops without an answer (max_iterations,
    budget, tool failures) gets a fallback answer in `fallback_answer` — why it stopped, which
    tools ran and what they returned — so the user is never left with nothing. The status stays
    failure. Bound to its loop like `ReActAbort`."""

    __slots__ = ("config", "loop", "namespace")

    def __init__(self, loop: LoopUntilSuccess, config: ReActConfig, namespace: str | None) -> None:
        self.loop = loop
        self.config = config
        self.namespace = namespace

    def for_node(self, loop: LoopUntilSuccess) -> ReActFallback:
        return ReActFallback(loop, self.config, self.namespace)

    def __call__(self, termination: dict[str, Any]) -> None:
        reason = termination.get("reason")
        if reason not in FALLBACK_REASONS:
            return
        sm, keys, ns = self.loop.state_manager, self.config.keys, self.namespace
        answer = fallback_answer(read_trace(sm.get(keys.messages, ns)), termination)
        sm.update({keys.fallback_answer: answer}, ns)
        self.loop.emit(ev.AnswerFallback, reason=reason, answer=answer)
