"""An MCP server's prompts as the framework's messages.

A prompt (`prompts/get`) is a list of messages with a role (user or assistant) and content
blocks. A tree uses them as its system prompt or its first messages, so they become `Message`s
of text: text blocks as they are, an embedded text resource as its text, anything else (an
image, audio, a blob) as the placeholder the model would read for it in a tool result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...models._messages import Message, ai, human
from ._content import MCPToolError

if TYPE_CHECKING:
    from mcp.types import GetPromptResult


def _text_of(content: Any) -> str:
    kind = getattr(content, "type", None)
    if kind == "text":
        return str(getattr(content, "text", ""))
    if kind == "resource":
        resource = getattr(content, "resource", None)
        text = getattr(resource, "text", None)
        if isinstance(text, str):
            return text
        return f"[resource: {getattr(resource, 'uri', '?')}]"
    mime = getattr(content, "mime_type", None) or "unknown type"
    return f"[{kind or 'unknown'}: {mime}]"


def prompt_messages(result: GetPromptResult, *, server: str, prompt: str) -> list[Message]:
    """`result`'s messages as `human` / `ai` messages (MCP has no system role)."""
    messages: list[Message] = []
    for message in result.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        text = "\n".join(_text_of(block) for block in blocks)
        messages.append(ai(text) if message.role == "assistant" else human(text))
    if not messages:
        raise MCPToolError(
            server, prompt, f"MCP server {server!r} returned no messages for prompt {prompt!r}"
        )
    return messages
