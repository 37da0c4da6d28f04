"""An MCP server's prompts as the framework's messages, and an agent's prompt read from one.

A prompt (`prompts/get`) is a list of messages with a role (user or assistant) and content
blocks. `prompt_messages` turns one into `Message`s of text for Python callers: text blocks as
they are, an embedded text resource as its text, anything else (an image, audio, a blob) as the
placeholder the model would read for it in a tool result.

An agent may take its system prompt or its first messages from a server's prompt (`MCPPrompt`,
YAML `system_prompt: {mcp_prompt: {...}}`). That prompt is checked against the server's own
listing before it is asked for (a misspelt name or argument is named, with the closest real
one), and only text may serve: a placeholder in a system prompt would tell the model nothing,
so an image or a blob is an error naming the message, not a silent `[image: ...]`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..._base.names import did_you_mean
from ...models._messages import Message, ai, human
from .._errors import ToolProviderError
from ._content import MCPServerError, MCPToolError

if TYPE_CHECKING:
    from mcp.types import GetPromptResult, Prompt

PromptUse = Literal["system_prompt", "first_messages"]
"""Where an agent puts an MCP prompt: its system prompt, or the messages its conversation opens with."""


class MCPPrompt(BaseModel):
    """A prompt of one of the agent's MCP servers (`prompts/get` of `name` with `arguments`).

    It is read once the agent's servers are ready (before the first model call), since servers
    start lazily, and kept until the server says its prompts changed (`prompts/list_changed`):
    then again before the agent's next model call.
    Arguments are strings on the wire (MCP's rule); numbers are written as text.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, coerce_numbers_to_str=True)

    server: str = Field(min_length=1)
    """The `name` of one of the agent's MCP servers."""
    name: str = Field(min_length=1)
    """The prompt's name, as the server lists it (`prompts/list`)."""
    arguments: dict[str, str] = Field(default_factory=dict)

    def describe(self) -> str:
        """`prompt 'args-prompt' of MCP server 'everything' (city='Paris')`, for show and errors."""
        args = ", ".join(f"{key}={value!r}" for key, value in self.arguments.items())
        return f"prompt {self.name!r} of MCP server {self.server!r}" + (f" ({args})" if args else "")


class MCPPromptError(ToolProviderError):
    """An agent's MCP prompt cannot be used: unknown server or prompt, a missing or unknown
    argument, the server refused it, or it holds what its place cannot take (an image in a system
    prompt). A `ToolProviderError`: the run ends with reason "provider_error", naming the cause."""

    def __init__(self, prompt: MCPPrompt, use: PromptUse, problem: str) -> None:
        self.prompt = prompt
        self.use = use
        super().__init__(
            prompt.server, f"reading the agent's {use.replace('_', ' ')} from {prompt.describe()}", problem
        )


def _text_of(content: Any) -> str | None:
    """A block's text: a text block, or an embedded resource with text; None for anything else."""
    kind = getattr(content, "type", None)
    if kind == "text":
        return str(getattr(content, "text", ""))
    if kind == "resource":
        text = getattr(getattr(content, "resource", None), "text", None)
        return text if isinstance(text, str) else None
    return None


def _what(content: Any) -> str:
    """The words for a block that is not text: `an image (image/png)`, `a resource (demo://x)`."""
    kind = getattr(content, "type", None) or "unknown"
    if kind == "resource":
        resource = getattr(content, "resource", None)
        mime = getattr(resource, "mime_type", None) or "binary"
        return f"an embedded binary resource ({getattr(resource, 'uri', '?')}, {mime})"
    if kind == "resource_link":
        return f"a resource link ({getattr(content, 'uri', '?')})"
    mime = getattr(content, "mime_type", None)
    return f"a{'n' if kind[0] in 'aeiou' else ''} {kind} block" + (f" ({mime})" if mime else "")


def _placeholder(content: Any) -> str:
    kind = getattr(content, "type", None)
    if kind == "resource":
        return f"[resource: {getattr(getattr(content, 'resource', None), 'uri', '?')}]"
    mime = getattr(content, "mime_type", None) or "unknown type"
    return f"[{kind or 'unknown'}: {mime}]"


def _blocks(message: Any) -> list[Any]:
    return message.content if isinstance(message.content, list) else [message.content]


def prompt_messages(result: GetPromptResult, *, server: str, prompt: str) -> list[Message]:
    """`result`'s messages as `human` / `ai` messages (MCP has no system role)."""
    messages: list[Message] = []
    for message in result.messages:
        texts = ((_text_of(block), block) for block in _blocks(message))
        text = "\n".join(t if t is not None else _placeholder(block) for t, block in texts)
        messages.append(ai(text) if message.role == "assistant" else human(text))
    if not messages:
        raise MCPToolError(
            server, prompt, f"MCP server {server!r} returned no messages for prompt {prompt!r}"
        )
    return messages


def check_arguments(prompt: MCPPrompt, listed: Sequence[Prompt], use: PromptUse) -> None:
    """`prompt` against the server's listing: the prompt exists, every required argument is given
    and every given one is declared (a typo would otherwise be dropped by the server)."""
    found = next((p for p in listed if p.name == prompt.name), None)
    if found is None:
        names = [p.name for p in listed]
        known = f"its prompts: {', '.join(names)}" if names else "it has no prompts"
        raise MCPPromptError(
            prompt,
            use,
            f"server {prompt.server!r} has no prompt {prompt.name!r}"
            f"{did_you_mean(prompt.name, names)}; {known}",
        )
    declared = {argument.name: bool(argument.required) for argument in found.arguments or ()}
    signature = ", ".join(f"{n} (required)" if r else n for n, r in declared.items()) or "none"
    missing = [name for name, required in declared.items() if required and name not in prompt.arguments]
    if missing:
        raise MCPPromptError(
            prompt,
            use,
            f"missing required argument{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))} "
            f"(the prompt's arguments: {signature})",
        )
    for name in prompt.arguments:
        if name not in declared:
            raise MCPPromptError(
                prompt,
                use,
                f"unknown argument {name!r}{did_you_mean(name, declared)} "
                f"(the prompt's arguments: {signature})",
            )


def usable_messages(result: GetPromptResult, prompt: MCPPrompt, use: PromptUse) -> list[Message]:
    """The prompt's messages where `use` puts them: text only (an image or a blob would reach
    the model as a meaningless placeholder), and for a system prompt the user's words only (an
    assistant turn folded into the system text would lose who said it)."""
    messages: list[Message] = []
    for index, message in enumerate(result.messages, 1):
        if use == "system_prompt" and message.role == "assistant":
            raise MCPPromptError(
                prompt,
                use,
                f"message {index} is an assistant message, which a system prompt cannot hold "
                "(use the prompt as first_messages to keep the conversation)",
            )
        texts: list[str] = []
        for block in _blocks(message):
            text = _text_of(block)
            if text is None:
                raise MCPPromptError(
                    prompt,
                    use,
                    f"message {index} holds {_what(block)}; "
                    f"the agent's {use.replace('_', ' ')} can only be text",
                )
            texts.append(text)
        content = "\n".join(texts)
        messages.append(ai(content) if message.role == "assistant" else human(content))
    if not messages:
        raise MCPPromptError(prompt, use, f"server {prompt.server!r} returned no messages")
    return messages


async def read_agent_prompt(provider: Any, prompt: MCPPrompt, use: PromptUse) -> list[Message]:
    """`prompt` read from `provider` (an `MCPToolProvider`, connected or not) for `use`:
    checked against `prompts/list`, then `prompts/get`; every failure an `MCPPromptError`."""
    try:
        listed = await provider.list_prompts()
        check_arguments(prompt, listed, use)
        result = await provider.read_prompt(prompt.name, prompt.arguments)
    except MCPServerError as exc:
        raise MCPPromptError(prompt, use, str(exc)) from exc
    return usable_messages(result, prompt, use)
