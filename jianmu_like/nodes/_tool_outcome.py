"""ToolOutcome: what one executed (or refused) tool call produced, before it becomes a message."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..models._types import Usage
from ..tools._artifact import Artifact


class ToolOutcome(BaseModel):
    """The observation text for one call, whether it failed, and the effects it had."""

    content: str
    failed: bool = False
    effect_tags: list[str] = Field(default_factory=list)
    """Effect tags of the tool when it actually ran (empty when refused or failed)."""
    final_answer: str | None = None
    """The tool called `finish(answer)`: the loop ends with this answer."""
    artifacts: list[Artifact] = Field(default_factory=list)
    """Documents the call produced for the user; `content` holds only their placeholders."""
    usage: Usage | None = None
    """Model tokens the call spent itself (an MCP server's sampling requests), added to the run's
    usage and budget like the agent's own calls."""
