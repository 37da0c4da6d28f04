"""An MCP server's resources, offered to the model as one `read_resource` tool.

A server's resources (files, database rows, API objects, each named by a URI) are data the
model may need but did not ask for: listing every resource's contents up front would fill the
context window. So the model gets a tool: its description lists the URIs the server announced
(and its URI templates), and a call reads one. A resource link in a tool result names a URI the
model can read with the same tool. What the model asked to read, it reads: text of any text type
(plain, markdown, HTML, JSON, XML) comes back as the observation, bounded like any tool output;
only binary data (images, audio, PDFs) becomes an artifact, whole for the user, with a short
placeholder for the model (see `content`). Documents embedded in a tool result the model did not
ask to read stay artifacts.

The index of resources goes stale when the server says so (`resources/list_changed`,
`resources/updated`); the provider then lists them again before the agent's next model call. A
subscribed resource that changed (`resources/updated`) is named in the description until it is
read again, so the model knows what it read before is out of date.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._base import Tool
from ._content import MCPToolError, render_resource_contents

if TYPE_CHECKING:
    from mcp.types import ReadResourceResult, Resource, ResourceTemplate

    from ._provider import MCPToolProvider

LISTED_URIS = 30
"""URIs the tool's description names; the rest are counted ("and 70 more")."""


class ResourceIndex:
    """What a server announced: resources and URI templates, and whether that is still current."""

    def __init__(self, resources: Sequence[Resource], templates: Sequence[ResourceTemplate]) -> None:
        self.resources = list(resources)
        self.templates = list(templates)
        self.stale = False

    def describe(self, updated: Sequence[str] = ()) -> str:
        """The tool description: what the tool does, which URIs exist, and which subscribed ones
        changed since they were last read (`updated`)."""
        lines = [
            "Read a resource of this MCP server by its URI (a URI listed below, one that matches "
            "a template below, or one named by a resource link in a tool result)."
        ]
        if updated:  # subscribed URIs only (the client's own list), and at most LISTED_URIS
            more = len(updated) - LISTED_URIS
            lines.append(
                "Changed since last read (read again for the current content): "
                + ", ".join(updated[:LISTED_URIS])
                + (f" and {more} more" if more > 0 else "")
            )
        if self.resources:
            lines.append("Resources:")
            for resource in self.resources[:LISTED_URIS]:
                about = resource.description or resource.title or resource.name
                kind = f" ({resource.mime_type})" if resource.mime_type else ""
                lines.append(
                    f"- {resource.uri}{kind}" + (f": {about}" if about and about != resource.uri else "")
                )
            more = len(self.resources) - LISTED_URIS
            if more > 0:
                lines.append(f"... and {more} more")
        if self.templates:
            lines.append("URI templates (fill in the {placeholders}):")
            for template in self.templates[:LISTED_URIS]:
                about = template.description or template.title or template.name
                lines.append(f"- {template.uri_template}" + (f": {about}" if about else ""))
        return "\n".join(lines)


def read_resource_tool(provider: MCPToolProvider, index: ResourceIndex, updated: Sequence[str] = ()) -> Tool:
    """The `<prefix>read_resource` tool of `provider` (not retried after a crash mid-call:
    reading is harmless, but the provider's own restart already retries reads)."""
    from ._provider import mcp_tool_name

    async def read_resource(uri: str) -> str:
        return await provider.read_resource_text(uri)

    name = mcp_tool_name(provider.config.prefix, "read_resource")
    read_resource.__name__ = name
    return Tool(
        name=name,
        description=index.describe(updated),
        parameters={
            "type": "object",
            "properties": {"uri": {"type": "string", "description": "The resource's URI"}},
            "required": ["uri"],
            "additionalProperties": False,
        },
        fn=read_resource,
        parallel_safe=provider.config.parallel_safe,
        effect_tags=provider.config.effect_tags_for("read_resource"),
        idempotent=True,
        timeout=2 * provider.config.call_timeout + provider.config.connect_timeout + 15.0,
    )


def render_read_result(result: ReadResourceResult, *, server: str, uri: str) -> str:
    """The observation of a `resources/read` the model asked for: each content's text (any text
    type, documents included: the model asked to read it), an artifact placeholder for binary
    content only."""
    contents: list[Any] = list(result.contents)
    if not contents:
        raise MCPToolError(server, "read_resource", f"MCP server {server!r} returned no contents for {uri!r}")
    return "\n".join(render_resource_contents(content, requested=True) for content in contents)
