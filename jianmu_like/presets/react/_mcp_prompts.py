"""An agent's system prompt or first messages read from its MCP servers' prompts.

MCP servers start lazily (on the first model call), while the tree, its context builder and its
clones are built before that. So the prompt is read by a check of the agent's `ToolSet`
(`add_check`): it runs in `ensure_ready`, once the servers listed their tools and before the
first model request, and sets the text on the context builder every clone shares. The persona
rule (`persona_of`, e.g. the output schema's instruction) is applied to it as to a written one.
A server's `prompts/list_changed` makes the check run again before the next model call, and the
prompt is read again.
"""

from __future__ import annotations

from collections.abc import Callable

from ..._base.names import did_you_mean
from ...nodes._context import ContextBuilder
from ...tools._toolset import ToolSet
from ...tools.mcp._prompts import MCPPrompt, PromptUse, read_agent_prompt
from ...tools.mcp._provider import MCPToolProvider


def _provider(toolset: ToolSet, prompt: MCPPrompt, use: PromptUse) -> MCPToolProvider:
    """The agent's MCP server named by `prompt` (a ValueError naming the servers if none is)."""
    servers = {p.name: p for p in toolset.providers if isinstance(p, MCPToolProvider)}
    found = servers.get(prompt.server)
    if found is None:
        known = ", ".join(servers) or "none"
        raise ValueError(
            f"{use}: {prompt.describe()}: the agent has no MCP server {prompt.server!r}"
            f"{did_you_mean(prompt.server, servers)} (its MCP servers: {known})"
        )
    return found


class MCPPromptReader:
    """The ToolSet check that reads the prompts: once, and again after the server said its
    prompts changed (a failure is retried by the next run, as a server that could not start is)."""

    def __init__(
        self,
        toolset: ToolSet,
        builder: ContextBuilder,
        persona_of: Callable[[str | None], str | None],
        *,
        system_prompt: MCPPrompt | None,
        first_messages: MCPPrompt | None,
    ) -> None:
        self.builder = builder
        self.persona_of = persona_of
        uses: tuple[tuple[PromptUse, MCPPrompt | None], ...] = (
            ("system_prompt", system_prompt),
            ("first_messages", first_messages),
        )
        self.wanted = [(use, prompt, _provider(toolset, prompt, use)) for use, prompt in uses if prompt]
        self.read_at: dict[PromptUse, int] = {}
        """The server's `prompts_version` each prompt was read at (read again when it moved on)."""

    async def __call__(self) -> None:
        for use, prompt, provider in self.wanted:
            version = provider.prompts_version
            if self.read_at.get(use) == version:
                continue
            messages = await read_agent_prompt(provider, prompt, use)
            if use == "system_prompt":
                self.builder.set_system_prompt(
                    self.persona_of("\n\n".join(m.content or "" for m in messages))
                )
            else:
                self.builder.opening = tuple(messages)
            self.read_at[use] = version
