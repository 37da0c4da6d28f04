"""The small configs of the model-calling nodes.

A node takes only what it reads: `ModelCallConfig` (the model, its sampling settings, the
resilience and tool protocol, the state keys) for every node that asks the model once or in a
loop, and `LLMNodeConfig` (plus the system prompt) for the ReAct LLM node. A preset's own config
extends them (`presets.react.ReActConfig` is an `LLMNodeConfig` with the loop's limits, tool
execution and answer settings), so the preset hands its config to its nodes as it is and no node
imports a preset. Unset fields take their value from `get_config()` at construction time.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from .._base.config import (
    ModelSettings,
    Positive,
    ResilienceConfig,
    Seconds,
    Temperature,
    ToolProtocol,
    TopP,
    get_config,
)
from ..models._keys import StateKeys


class ModelCallConfig(ModelSettings):
    """What a node needs to ask the model: which model, how to sample, how to retry, and the
    state keys it reads and writes (models.react, llm.* of the configuration by default).

    The sampling settings and their bounds are `ModelSettings`' (the configuration file's and
    the agent file's `llm:` are the same model): `ModelCallConfig(temperature=5)` is refused."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(default_factory=lambda: get_config().models.react)
    """Model name; None uses the ModelClient's own default model."""
    temperature: Temperature | None = Field(default_factory=lambda: get_config().llm.temperature)
    max_tokens: Positive | None = Field(default_factory=lambda: get_config().llm.max_tokens)
    top_p: TopP | None = Field(default_factory=lambda: get_config().llm.top_p)
    top_k: Positive | None = Field(default_factory=lambda: get_config().llm.top_k)
    timeout: Seconds = Field(default_factory=lambda: get_config().llm.timeout)
    """Seconds for one model call attempt (a streamed reply included)."""
    resilience: ResilienceConfig | None = None
    """Retries and fallback models; None keeps the ModelClient's own policy."""
    tool_choice: Any = None
    """Sent on the first model call of a run only (kept through its retries and fallbacks)."""
    extra_params: dict[str, Any] = Field(default_factory=dict)
    """Extra model API parameters; an `extra_params["tool_choice"]` has first-round semantics too."""
    stream: bool = Field(default_factory=lambda: get_config().llm.stream)
    """Stream the model's answer (emits `text.delta` events)."""
    tool_protocol: ToolProtocol | None = None
    """How this agent's tools reach the model (see `ModelClient`); None keeps the client's."""
    keys: StateKeys = Field(default_factory=StateKeys)


class LLMNodeConfig(ModelCallConfig):
    """The config of a node that writes its own system prompt (`AgentLLMNode`, `PromptCall`): a
    model call plus the persona and whether the prompt describes the tools."""

    system_prompt: str | None = None
    """Replaces the default persona (ignored when a context_builder is given)."""
    include_tool_descriptions: bool = True
    """Also describe the tools in the system prompt (in addition to the function schemas)."""
    on_truncated: Literal["continue", "end", "accept"] = Field(
        default_factory=lambda: get_config().answers.on_truncated
    )
    """A final answer cut off by the length limit: see `AnswersConfig.on_truncated`."""
