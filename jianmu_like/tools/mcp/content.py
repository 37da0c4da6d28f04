"""What the model reads from an MCP server: rendered tool results, and errors as observations.

Every failure is an `MCPServerError` whose message names the server and says what happened in
words a model can act on (the executor shows it as `Error: tool 'x' raised ...`); messages are
redacted, since they may quote a command line or a URL.

A `CallToolResult` carries content blocks (text, images, audio, embedded resources, resource
links), optional `structuredContent` and an `isError` flag. The model only reads text, so:
text blocks are joined; structured content is sent as compact JSON when no text says the same;
binary blocks become a short placeholder naming their type and size (a base64 blob would burn
the context window and mean nothing to the model); an embedded HTML or markdown document is an
artifact for the user (`tools.artifact`: the model reads its placeholder); an `isError` result
raises `MCPToolError` with the server's own words, which the executor turns into an error
observation.

Blocks are read by their `type` field rather than by class, so rendering needs no import of the
MCP SDK (which costs half a second) and keeps working for block types added later.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...redact import redact_text
from ..artifact import Artifact
from ..call_context import add_artifact
from ..errors import ToolError

if TYPE_CHECKING:
    from mcp.types import CallToolResult


class MCPServerError(ToolError):
    """Talking to an MCP server failed; `server` is its configured name. Messages are redacted."""

    def __init__(self, server: str, message: str) -> None:
        self.server = server
        super().__init__(redact_text(message))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.server, str(self)))


class MCPConnectError(MCPServerError):
    """The server could not be started or reached, or did not finish the handshake in time."""


class MCPTimeoutError(MCPServerError):
    """A request got no answer within its timeout (not a `TimeoutError`: the executor would
    then report its own, longer backstop timeout instead of this one)."""


class MCPServerCrashedError(MCPServerError):
    """The connection died during a request: the server crashed, exited or went away.

    `sent` is False when the session was already dead, so the request surely never ran.
    """

    def __init__(self, server: str, message: str, *, sent: bool = True) -> None:
        self.sent = sent
        super().__init__(server, message)


class MCPToolError(MCPServerError):
    """The tool reported an error (`isError`) or the server rejected the call."""

    def __init__(self, server: str, tool: str, detail: str) -> None:
        self.tool = tool
        self.detail = detail
        super().__init__(server, detail)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.server, self.tool, self.detail))


def _decoded_size(data: str) -> int:
    """Bytes a base64 string decodes to, without decoding it."""
    data = data.strip()
    if not data:
        return 0
    return len(data) * 3 // 4 - data[-2:].count("=")


def _mime(block: Any, attr: str = "mime_type") -> str:
    value = getattr(block, attr, None)
    return value if isinstance(value, str) and value else "unknown type"


DOCUMENT_MIME_TYPES = frozenset({"text/html", "text/markdown"})
"""Embedded text resources of these types are documents for the user: artifacts."""


def _render_resource(resource: Any) -> str:
    text = getattr(resource, "text", None)
    uri = getattr(resource, "uri", "?")
    if isinstance(text, str):
        mime = _mime(resource).split(";", 1)[0].strip().lower()
        if mime not in DOCUMENT_MIME_TYPES:
            return text
        name = str(uri).rstrip("/").rsplit("/", 1)[-1] or str(uri)
        return add_artifact(Artifact(name=name, mime_type=mime, content=text))
    blob = getattr(resource, "blob", None)
    size = f", {_decoded_size(blob)} bytes" if isinstance(blob, str) else ""
    return f"[resource: {uri} ({_mime(resource)}){size}]"


def render_mcp_block(block: Any) -> str:
    """One content block as text."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(getattr(block, "text", ""))
    if kind in ("image", "audio"):
        data = getattr(block, "data", "")
        size = _decoded_size(data) if isinstance(data, str) else 0
        return f"[{kind}: {_mime(block)}, {size} bytes]"
    if kind == "resource":
        return _render_resource(getattr(block, "resource", None))
    if kind == "resource_link":
        uri = getattr(block, "uri", "?")
        name = getattr(block, "name", "") or ""
        description = getattr(block, "description", "") or ""
        label = f" {name}" if name and name != uri else ""
        detail = f": {description}" if description else ""
        return f"[resource link: {uri}{label} ({_mime(block)}){detail}]"
    return f"[{kind or 'unknown'} content]"


def render_mcp_content(blocks: Sequence[Any]) -> str:
    """Content blocks joined by newlines, empty text blocks skipped."""
    return "\n".join(part for part in (render_mcp_block(b) for b in blocks) if part)


def render_structured(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def render_mcp_result(result: CallToolResult, *, server: str, tool: str) -> str:
    """The observation text of a tool result; raises `MCPToolError` for `isError` results."""
    text = render_mcp_content(result.content)
    structured = result.structured_content
    if not text and structured is not None:
        text = render_structured(structured)
    if result.is_error:
        raise MCPToolError(server, tool, text or "the tool reported an error without a message")
    return text
