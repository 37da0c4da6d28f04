"""What the model reads from an MCP server: rendered tool results, and errors as observations.

Every failure is an `MCPServerError` whose message names the server and says what happened in
words a model can act on (the executor shows it as `Error: tool 'x' raised ...`); messages are
redacted, since they may quote a command line or a URL.

A `CallToolResult` carries content blocks (text, images, audio, embedded resources, resource
links), optional `structuredContent` and an `isError` flag. The model only reads text, so:
text blocks are joined; structured content is sent as compact JSON when no text says the same;
images, audio, binary resources and embedded HTML or markdown documents become artifacts, whole
for the user (`tools._artifact`), while the model reads a short placeholder naming the type and
size (a base64 blob would burn the context window and mean nothing to the model); a resource
link tells the model to read it with the `read_resource` tool; an `isError` result
raises `MCPToolError` with the server's own words, which the executor turns into an error
observation.

Blocks are read by their `type` field rather than by class, so rendering needs no import of the
MCP SDK (which costs half a second) and keeps working for block types added later.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..._base.redact import redact_text
from .._artifact import Artifact
from .._call_context import add_artifact, current_tool_call
from .._errors import ToolError

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


def _mime(block: Any, attr: str = "mime_type") -> str:
    value = getattr(block, attr, None)
    return value if isinstance(value, str) and value else "unknown type"


DOCUMENT_MIME_TYPES = frozenset({"text/html", "text/markdown"})
"""Embedded text resources of these types are documents for the user: artifacts."""

_EXTENSIONS = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "image/svg+xml": ".svg",
    "audio/wav": ".wav",
    "audio/mpeg": ".mp3",
    "application/pdf": ".pdf",
}


def _name_of(uri: str) -> str:
    return str(uri).rstrip("/").rsplit("/", 1)[-1] or str(uri)


def is_text_mime(mime: str) -> bool:
    """text/*, JSON, XML, YAML and their `+json` / `+xml` kin: content a model can read."""
    kind = mime.split(";", 1)[0].strip().lower()
    return (
        kind.startswith("text/")
        or kind in ("application/json", "application/xml", "application/yaml", "application/x-yaml")
        or kind.endswith(("+json", "+xml"))
    )


def render_resource_contents(resource: Any, *, requested: bool = False) -> str:
    """One resource's contents (embedded in a tool result, or read with `resources/read`) as
    observation text: plain text is the text; documents (HTML, markdown) and binary data
    (images, audio, any blob) become artifacts, whole for the user, a placeholder for the model.

    `requested`: the model asked to read this resource (the `read_resource` tool), so every text
    it can read is its observation (bounded like any tool output) — documents, and a blob of a
    text type that decodes as UTF-8, too; only binary content becomes an artifact."""
    text = getattr(resource, "text", None)
    uri = str(getattr(resource, "uri", "?"))
    mime = _mime(resource)
    if isinstance(text, str):
        kind = mime.split(";", 1)[0].strip().lower()
        if requested or kind not in DOCUMENT_MIME_TYPES:
            return text
        return add_artifact(Artifact(name=_name_of(uri), mime_type=kind, content=text))
    blob = getattr(resource, "blob", None)
    if not isinstance(blob, str):
        return f"[resource: {uri} ({mime}), no content]"
    if requested and is_text_mime(mime):
        decoded = _utf8(blob)
        if decoded is not None:
            return decoded
    return add_artifact(Artifact(name=_name_of(uri), mime_type=mime, content=blob, encoding="base64"))


def _utf8(blob: str) -> str | None:
    import base64
    import binascii

    try:
        return base64.b64decode(blob, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def _media_name(kind: str, mime: str) -> str:
    """`image-1.png`, `audio-2.wav`: numbered within the running call, so names do not clash."""
    context = current_tool_call()
    number = len(context.artifacts) + 1 if context is not None else 1
    return f"{kind}-{number}{_EXTENSIONS.get(mime, '')}"


def render_mcp_block(block: Any) -> str:
    """One content block as text (images, audio and binary resources become artifacts)."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(getattr(block, "text", ""))
    if kind in ("image", "audio"):
        data = getattr(block, "data", "")
        mime = _mime(block)
        if not isinstance(data, str) or not data:
            return f"[{kind}: {mime}, empty]"
        return add_artifact(
            Artifact(name=_media_name(kind, mime), mime_type=mime, content=data, encoding="base64")
        )
    if kind == "resource":
        return render_resource_contents(getattr(block, "resource", None))
    if kind == "resource_link":
        uri = getattr(block, "uri", "?")
        name = getattr(block, "name", "") or ""
        description = getattr(block, "description", "") or ""
        label = f" {name}" if name and name != uri else ""
        detail = f": {description}" if description else ""
        return f"[resource link: {uri}{label} ({_mime(block)}){detail}; read it with the read_resource tool]"
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
