"""ReActConfig: everything `create_react_node` can be told, in one object.

It extends the LLM node's own config (`nodes._settings.LLMNodeConfig`: model, sampling, retries,
tool protocol, system prompt, state keys) with what only the ReAct loop reads: its limits, how
tools run, and the optional answer check, context guard, tool selection and synthesis. The
factory passes it to each node as that node's small config (a `ReActConfig` is an
`LLMNodeConfig`) or maps the relevant fields onto the node's parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator

from ..._base.config import (
    AnswerCheckConfig,
    ContextConfig,
    JianmuConfig,
    OutputChars,
    Positive,
    ToolSelectionConfig,
    get_config,
)
from ...nodes._settings import LLMNodeConfig
from ...nodes._tool_executor import ExecutionMode
from ...tools.mcp._prompts import MCPPrompt


class ReActConfig(LLMNodeConfig):
    """Configuration of `create_react_node`. Unset fields take their value from `get_config()`
    at construction time (models.react, llm.*, limits.max_iterations)."""

    max_budget_tokens: Positive | None = Field(default_factory=lambda: get_config().llm.max_budget_tokens)
    """Total tokens (`llm.usage.total_tokens`) a run may spend; checked before each iteration."""
    max_iterations: Positive = Field(default_factory=lambda: get_config().limits.max_iterations)
    execution_mode: ExecutionMode = "auto"
    """auto: parallel when several calls are requested and all their tools are parallel-safe."""
    tool_timeout: float = Field(60.0, gt=0)
    """Default seconds per tool call (a Tool's own `timeout` wins)."""
    max_output_chars: OutputChars = 8000
    """Tool outputs longer than this are cut, with a note telling the model so."""
    reflect_after: Positive | None = None
    """After every N tool calls of a run, one call asks the model whether its chain is
    consistent; the verdict becomes an observation (`nodes._reflection`). None: off."""
    breakpoint_every: Positive | None = None
    """A human breakpoint: the tool calls of every N-th model round wait for approval, like a
    guard's `require_approval` (the run suspends; approve or deny, then resume). None: off."""
    max_tool_failures: Positive | None = Field(default_factory=lambda: get_config().limits.max_tool_failures)
    """Stop (termination `tool_failures`) after this many failed tool calls in a row; None: never."""
    synthesize: bool = Field(default_factory=lambda: get_config().answers.synthesize)
    """Two-phase answers: after the loop, one streaming call writes the user-facing answer from
    the execution trace (`<name>.Synthesize`); on any failure the loop's own answer is kept."""
    synthesis_tool_chars: OutputChars = Field(
        default_factory=lambda: get_config().answers.synthesis_tool_chars
    )
    """Each tool result is cut to this many characters in the synthesis prompt."""
    answer_check: AnswerCheckConfig = Field(default_factory=lambda: get_config().answers.check.model_copy())
    """The answer-quality check (`<name>.AnswerCheck`); `AnswerCheckConfig(enabled=False)` turns
    it off. `True`/`False` are accepted as shorthands."""
    context: ContextConfig = Field(default_factory=lambda: get_config().context.model_copy())
    """The context guard (`nodes._context_guard`): window, strategy, ...; `False` turns it off."""
    tool_selection: ToolSelectionConfig = Field(
        default_factory=lambda: get_config().tools.selection.model_copy()
    )
    """Above `threshold` tools, one structured call picks at most `max_tools` of them for the
    run (`<name>.SelectTools`); `ToolSelectionConfig(enabled=False)` or `False` turns it off."""

    system_prompt_from: MCPPrompt | None = None
    """The system prompt read from a prompt of one of the agent's MCP servers (`prompts/get`),
    in place of `system_prompt`: read once the servers are ready, before the first model call
    (YAML `system_prompt: {mcp_prompt: {server, name, arguments}}`)."""
    first_messages_from: MCPPrompt | None = None
    """Messages from an MCP prompt that every conversation of the agent opens with, after the
    system prompt and before the task (YAML `first_messages: {mcp_prompt: {...}}`)."""

    @model_validator(mode="after")
    def _one_system_prompt(self) -> ReActConfig:
        if self.system_prompt is not None and self.system_prompt_from is not None:
            raise ValueError("give system_prompt or system_prompt_from (an MCP prompt), not both")
        return self

    @field_validator("context", "answer_check", "tool_selection", mode="before")
    @classmethod
    def _switch(cls, value: Any, info: ValidationInfo) -> Any:
        """`True`/`False` switch the configured section on or off and keep its other values (a
        `min_chars` or `threshold` from jianmu.yaml is not reset to the class default)."""
        if not isinstance(value, bool):
            return value
        configured = _SWITCHED_SECTIONS[str(info.field_name)](get_config())
        return {**configured.model_dump(), "enabled": value}


_SWITCHED_SECTIONS: dict[str, Callable[[JianmuConfig], BaseModel]] = {
    "context": lambda config: config.context,
    "answer_check": lambda config: config.answers.check,
    "tool_selection": lambda config: config.tools.selection,
}
"""The configured section behind each `True`/`False` shorthand of `ReActConfig`."""
