"""The shape of an agent file (`presets/*.yaml`), as pydantic models.

An agent file is one ReAct agent (`kind: react`), a supervisor (`kind: supervisor`), a
plan-and-execute or research agent (`kind: plan_execute | research`) or a whole tree
(`kind: tree`) whose nodes are `sequence`, `selector`, `parallel`, `loop`, `condition`,
`message`, `react`, `supervisor`, `plan_execute`, `research` and `preset` (another agent file).
Unknown keys are errors; every error is reported with its line.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from .._base.config import (
    AnswerCheckConfig,
    ContextConfig,
    ModelSettings,
    OutputChars,
    Positive,
    ToolProtocol,
    ToolSelectionConfig,
)
from .._run.breakpoints import BreakpointRule
from .._run.substitutions import Substitution
from ..tools._a2a import A2AAgentConfig
from ..tools.mcp._prompts import MCPPrompt

AgentKindName = Literal["react", "supervisor", "plan_execute", "research"]
"""The kinds of one agent (an agent file's `kind:`, or a tree node's key); see `kinds.AGENT_KINDS`."""

FileKindName = Literal["react", "supervisor", "plan_execute", "research", "tree"]
"""What an agent file's `kind:` may say: one agent, or a tree of nodes."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelSpec(_Strict):
    """Which model, on which server. The API key is never written in the file: name the
    environment variable holding it."""

    name: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    fallback: list[str] = Field(default_factory=list)
    tool_protocol: ToolProtocol | None = None
    """How tools reach this model: native function calling, `json` or `text` (described in the
    prompt, for servers without function calling), `auto` (native, JSON when tools are refused)."""
    supports_tools: bool | None = None
    """Whether the server has function calling (for `auto`; unset: learned from a rejection)."""
    supports_json_mode: bool | None = None
    """Whether the server has JSON mode (false: structured calls skip that level)."""
    context_window: int | None = Field(None, ge=256)
    """The model's context window in tokens: the context guard keeps every request within it."""


class A2ASkill(_Strict):
    """One skill of the A2A agent card (`a2a.skills`)."""

    id: str
    name: str
    description: str = ""
    tags: list[str] = Field(default_factory=list)
    examples: list[str] = Field(default_factory=list)


class A2ACard(_Strict):
    """What the A2A agent card says (`a2a:` of an agent file, `create_app(a2a=...)`) beyond what
    the agent tells: unset, the name is the file's (the tree's root name), the description the
    file's, and each tool a skill."""

    name: str | None = None
    description: str | None = None
    version: str | None = None
    skills: list[A2ASkill] | None = None


class LimitsSpec(_Strict):
    max_iterations: Positive | None = None
    max_budget_tokens: Positive | None = None
    max_tool_failures: Positive | None = None
    """Stop after this many failed tool calls in a row (termination `tool_failures`)."""
    max_output_chars: OutputChars | None = None
    """The most characters of one tool result the model reads (default 8000); see
    `tool_output_chars` for single tools."""


class LLMSpec(ModelSettings):
    """An agent's `llm:` section: the model settings (`_base.config.ModelSettings`, bounds
    included), each unset one taken from the configuration."""


class MCPPromptSpec(_Strict):
    """`{mcp_prompt: {server, name, arguments}}`: text read from a prompt of one of the agent's
    MCP servers (`prompts/get`) when the servers are ready, before the first model call."""

    mcp_prompt: MCPPrompt


class ReActSpec(_Strict):
    """One ReAct agent (the body of `kind: react`, or a `react:` node of a tree)."""

    name: str = "ReActAgent"
    namespace: str | None = None
    description: str | None = None
    model: str | ModelSpec | None = None
    system_prompt: str | MCPPromptSpec | None = None
    """The agent's persona: text, or `{mcp_prompt: {server, name, arguments}}` from one of its
    MCP servers."""
    first_messages: MCPPromptSpec | None = None
    """Messages every conversation opens with, before the task: `{mcp_prompt: {...}}`."""
    tools: list[str] = Field(default_factory=list)
    """Built-in tool names (`calculator`, `think`) or `package.module:attribute` references to
    allowed modules (under the file's directory, `agents.allowed_modules`, `--allow-module`)."""
    mcp_servers: list[dict[str, Any]] | dict[str, dict[str, Any]] = Field(default_factory=list)
    a2a_agents: list[A2AAgentConfig] = Field(default_factory=list)
    """Remote A2A agents, each one tool: `{name, url, auth: {token_env}}` (the token is read from
    that environment variable, never written here; see `tools._a2a`)."""
    skills: list[str] = Field(default_factory=list)
    """Skill folders (a `SKILL.md` each), relative to the agent file and under its directory:
    their descriptions join the system prompt, the model loads one with `use_skill`."""
    tool_output_chars: dict[str, OutputChars] = Field(default_factory=dict)
    """Tool name -> the most characters of one of its results the model reads (the tools listed
    in `tools`; an MCP server takes `max_output_chars` in its own entry)."""
    guard: dict[str, Any] | None = None
    limits: LimitsSpec = Field(default_factory=LimitsSpec)
    llm: LLMSpec = Field(default_factory=LLMSpec)
    tool_choice: Any = None
    execution_mode: Literal["serial", "parallel", "auto"] = "auto"
    breakpoint_every: Positive | None = None
    """A human breakpoint: the tool calls of every N-th model round wait for approval."""
    reflect_after: Positive | None = None
    """After every N tool calls, one call checks that the chain is consistent."""
    tool_protocol: ToolProtocol | None = None
    """Overrides the model's tool protocol for this agent."""
    output_schema: dict[str, Any] | str | None = None
    """A structured answer: a JSON schema, or a pydantic model as `package.module:Model` (or
    `package.module.Model`) from an allowed module; the result's `output` is the validated value."""
    synthesize: bool | None = None
    """Two-phase answers: after the loop, one streaming call writes the answer from the trace."""
    answer_check: bool | AnswerCheckConfig | None = None
    """The answer-quality check: `false` turns it off; or `{min_chars, reject_repeats, retries}`."""
    context: bool | ContextConfig | None = None
    """The context guard: `false` turns it off; or `{window, strategy, reserve_tokens, ...}`
    (`window` overrides the model's `context_window` for this agent)."""
    tool_selection: bool | ToolSelectionConfig | None = None
    """Tool selection above a number of tools: `false` turns it off; or `{threshold, max_tools}`."""

    @field_validator("system_prompt", mode="wrap")
    @classmethod
    def _one_form(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        """A mapping is the MCP form, validated as that alone: its errors name its own keys
        (`system_prompt.mcp_prompt.sever: unknown key (did you mean 'server'?)`), not the text
        form's "should be a valid string" beside them."""
        if isinstance(value, dict):
            return MCPPromptSpec.model_validate(value)
        return handler(value)

    input: str | None = None
    """In a tree: a message template written to this agent's namespace before it starts, e.g.
    "Research: {plan.final_answer}" (`{task}` is the run's question)."""


BUILT_FROM = frozenset(
    {
        "name",
        "namespace",
        "description",
        "input",
        "tools",
        "mcp_servers",
        "a2a_agents",
        "skills",
        "tool_output_chars",
        "guard",
        "output_schema",
        "first_messages",
    }
)
"""The `ReActSpec` fields the loader builds an agent from (its tools, guard, prompt, place in a
tree). Every other field is a `ReActConfig` setting: of the same name (`_builder.SAME_NAMED`), the
`llm:` and `limits:` sections (settings by their fields' names), or one read with more than the
spec says (`model`, `system_prompt`, `tool_protocol`, `context`). tests/agentfile/test_settings.py
checks that every field is one or the other, so none is accepted and ignored."""


class SupervisorOptions(_Strict):
    """The `supervisor:` section of a supervisor agent (`kind: supervisor`, `supervisor:` nodes)."""

    max_agents: int = Field(4, ge=1, le=32)
    """Sub-agents per run at most (the model's plan decides how many)."""
    max_follow_ups: int = Field(2, ge=0)
    """Follow-up questions per follow-up round (0: none)."""
    max_rounds: int = Field(1, ge=1)
    """Follow-up rounds at most; after each the supervisor answers or asks again."""
    prune_notes_above: int | None = Field(None, ge=1)
    """Drop a sub-agent's raw notes (its messages) above this many characters, keeping its
    question and answer."""
    critic: bool = False
    """Review each sub-agent's answer; a rejected one is re-run with the critique."""
    max_critic_retries: int = Field(1, ge=0)
    review_answer: bool = False
    """The critic also reviews the supervisor's own answer; a rejected one is rewritten."""
    prompt: str | None = None
    """The supervisor's system prompt (the ReAct `system_prompt` is the sub-agents')."""
    critic_prompt: str | None = None
    worker: Literal["react", "research"] = "react"
    """Each sub-agent is a ReAct agent, or a researcher (a tool-call cap, `think`, a cited summary)."""
    worker_max_tool_calls: int = Field(5, ge=0)
    """A researcher sub-agent's tool-call cap (`worker: research`)."""


class SupervisorSpec(ReActSpec):
    """A supervisor: the ReAct fields (tools, model, limits, system_prompt, guard) apply to each
    sub-agent; `limits` is a budget per sub-agent. Default namespace: `supervisor`."""

    supervisor: SupervisorOptions = Field(default_factory=SupervisorOptions)


class PlanOptions(_Strict):
    """The `plan:` section of a plan-and-execute agent (`kind: plan_execute`, `plan_execute:` nodes)."""

    max_steps: int = Field(5, ge=1)
    max_replans: int = Field(1, ge=0)
    """Re-plans after a failed step (then the run fails with reason `step_failed`)."""
    models: dict[str, str] = Field(default_factory=dict)
    """Model aliases the planner may give a step, e.g. {fast: gpt-4o-mini, strong: gpt-4o}."""
    planner_prompt: str | None = None


class PlanExecuteSpec(ReActSpec):
    """A plan-and-execute agent: the ReAct fields apply to every step (tools, model, limits)."""

    plan: PlanOptions = Field(default_factory=PlanOptions)


class ResearchOptions(_Strict):
    """The `research:` section of a research agent (`kind: research`, `research:` nodes)."""

    max_tool_calls: int = Field(5, ge=0)
    """Hard cap on tool calls per run (`think` is free); later calls are refused."""
    compress_prompt: str | None = None


class ResearchSpec(ReActSpec):
    """A research agent: search tools plus `think`, a tool-call cap, a cited summary."""

    research: ResearchOptions = Field(default_factory=ResearchOptions)


NODE_KINDS = (
    "sequence",
    "selector",
    "parallel",
    "loop",
    "condition",
    "message",
    "react",
    "preset",
    "supervisor",
    "plan_execute",
    "research",
    "a2a_agent",
)


class TreeNodeSpec(_Strict):
    """Exactly one of the node kinds."""

    sequence: CompositeSpec | None = None
    selector: CompositeSpec | None = None
    parallel: ParallelSpec | None = None
    loop: LoopSpec | None = None
    condition: ConditionSpec | None = None
    message: MessageSpec | None = None
    react: ReActSpec | None = None
    preset: PresetRefSpec | None = None
    supervisor: SupervisorSpec | None = None
    plan_execute: PlanExecuteSpec | None = None
    research: ResearchSpec | None = None
    a2a_agent: A2ANodeSpec | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> TreeNodeSpec:
        given = [kind for kind in NODE_KINDS if getattr(self, kind) is not None]
        if len(given) != 1:
            found = ", ".join(given) or "none"
            raise ValueError(f"a tree node needs exactly one of {', '.join(NODE_KINDS)} (found: {found})")
        return self

    @property
    def kind(self) -> str:
        return next(kind for kind in NODE_KINDS if getattr(self, kind) is not None)


class CompositeSpec(_Strict):
    name: str | None = None
    memory: bool = True
    children: list[TreeNodeSpec] = Field(min_length=1)


class ParallelSpec(_Strict):
    name: str | None = None
    policy: Literal["all", "one"] = "all"
    """all: succeed when every child succeeded; one: as soon as one did."""
    children: list[TreeNodeSpec] = Field(min_length=1)


class LoopSpec(_Strict):
    name: str | None = None
    max_iterations: int = Field(3, ge=1)
    child: TreeNodeSpec


class ConditionSpec(_Strict):
    name: str | None = None
    key: str
    namespace: str | None = None


class MessageSpec(_Strict):
    name: str | None = None
    namespace: str | None = None
    content: str
    role: Literal["user", "system"] = "user"


class A2ANodeSpec(A2AAgentConfig):
    """A remote A2A agent as a leaf of the tree (`nodes.A2AAgentNode`): the `a2a_agents` entry's
    keys (`name` is the node's name too) and where the node reads and writes."""

    namespace: str | None = None
    message_key: str | None = None
    """The state key whose text is sent; unset: the last user message of `messages`."""
    output_key: str = "a2a_reply"
    """Where the remote answer is written (in `namespace`)."""


class PresetRefSpec(_Strict):
    path: str
    """Agent file, relative to the file that references it; it must lie in that file's directory
    tree, the shipped presets or a directory listed in `agents.preset_roots`."""
    name: str | None = None
    namespace: str | None = None
    input: str | None = None


class AgentFileSpec(ReActSpec):
    """A whole agent file. `kind: react` uses the ReAct fields; `kind: tree` uses `tree` and
    takes the ReAct fields as defaults for its `react:` nodes (model, llm, limits, guard)."""

    kind: FileKindName = "react"
    tree: TreeNodeSpec | None = None
    output: str | None = None
    """For trees: the namespace whose `final_answer` is the agent's answer."""
    inputs: list[str] = Field(default_factory=list)
    """Top-level keys the caller provides besides `task` and `messages` (for `{key}` in templates)."""
    supervisor: SupervisorOptions | None = None
    """For `kind: supervisor`."""
    plan: PlanOptions | None = None
    """For `kind: plan_execute`."""
    research: ResearchOptions | None = None
    """For `kind: research`."""
    a2a: A2ACard | None = None
    """The A2A agent card `jianmu-like serve` publishes (see `server._a2a`)."""
    breakpoints: list[BreakpointRule] = Field(default_factory=list)
    """Where the agent's runs pause before a node ticks (`{node: ...}`, `{tool: ...}`, `{status:
    FAILURE}` with an optional `node:`, or `{event: tool.call.failed}` each; see
    `_run.breakpoints`): for debugging an agent file in the console or the command line."""
    substitutions: list[Substitution] = Field(default_factory=list)
    """Nodes forced (`{node: ..., status: SUCCESS}`), model replies (`{node: ..., reply: ...}`)
    and tool outputs (`{tool: ..., output: ...}`) scripted in the agent's runs, without code (see
    `_run.substitutions`)."""

    def a2a_card(self) -> A2ACard:
        """The card's settings: the `a2a:` section, its name and description defaulting to the
        file's."""
        card = self.a2a or A2ACard()
        return card.model_copy(
            update={
                "name": card.name or self.name,
                "description": card.description or self.description,
            }
        )

    @model_validator(mode="after")
    def _tree_for_tree_kind(self) -> AgentFileSpec:
        if self.kind == "tree" and self.tree is None:
            raise ValueError("kind: tree needs a `tree:` section")
        if self.kind != "tree" and self.tree is not None:
            raise ValueError("`tree:` is only for kind: tree")
        return self  # the kinds' own sections: checked with their lines (`loader`, `kinds`)


TreeNodeSpec.model_rebuild()
