"""ReActConfig: every knob of a ReAct agent, defaulting from the framework configuration."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..config import ResilienceConfig, get_config
from ..state.schema import StateKeys

ExecutionMode = Literal["serial", "parallel", "auto"]


class ReActConfig(BaseModel):
    """Configuration of `create_react_node`. Unset fields take their value from `get_config()`
    at construction time (models.react, llm.*, limits.max_iterations)."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(default_factory=lambda: get_config().models.react)
    """Model name; None uses the ModelClient's own default model."""
    temperature: float | None = Field(default_factory=lambda: get_config().llm.temperature)
    max_tokens: int | None = Field(default_factory=lambda: get_config().llm.max_tokens)
    top_p: float | None = Field(default_factory=lambda: get_config().llm.top_p)
    top_k: int | None = Field(default_factory=lambda: get_config().llm.top_k)
    timeout: float = Field(default_factory=lambda: get_config().llm.timeout, gt=0)
    """Seconds for one model call attempt."""
    max_budget_tokens: int | None = Field(default_factory=lambda: get_config().llm.max_budget_tokens)
    """Total tokens (`llm.usage.total_tokens`) a run may spend; checked before each iteration."""
    max_iterations: int = Field(default_factory=lambda: get_config().limits.max_iterations, ge=1)
    resilience: ResilienceConfig | None = None
    """Retries and fallback models; None keeps the ModelClient's own policy."""
    system_prompt: str | None = None
    """Replaces the default persona (ignored when a context_builder is given)."""
    tool_choice: Any = None
    """Sent on the first model call of a run only (kept through its retries and fallbacks)."""
    extra_params: dict[str, Any] = Field(default_factory=dict)
    """Extra model API parameters; an `extra_params["tool_choice"]` has first-round semantics too."""
    stream: bool = Field(default_factory=lambda: get_config().llm.stream)
    """Stream the model's answer (emits `text.delta` events)."""
    execution_mode: ExecutionMode = "auto"
    """auto: parallel when several calls are requested and all their tools are parallel-safe."""
    tool_timeout: float = Field(60.0, gt=0)
    """Default seconds per tool call (a Tool's own `timeout` wins)."""
    max_output_chars: int = Field(8000, ge=100)
    """Tool outputs longer than this are cut, with a note telling the model so."""
    include_tool_descriptions: bool = True
    """Also describe the tools in the system prompt (in addition to the function schemas)."""
    keys: StateKeys = Field(default_factory=StateKeys)
