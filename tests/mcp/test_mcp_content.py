"""Rendering MCP tool results for the model: every content block type, structured content and
`isError`."""

from __future__ import annotations

import base64
import pickle
from typing import Any

import pytest
from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from jianmu_like.tools import MCPServerCrashedError, MCPToolError, render_mcp_result


def render(*blocks: Any, structured: Any = None, error: bool = False) -> str:
    result = CallToolResult(content=list(blocks), structured_content=structured, is_error=error)
    return render_mcp_result(result, server="srv", tool="t")


def b64(size: int) -> str:
    return base64.b64encode(bytes(size)).decode()


def test_text_blocks_are_joined_and_binary_blocks_summarised() -> None:
    assert render(TextContent(text="one"), TextContent(text=""), TextContent(text="two")) == "one\ntwo"
    assert render(ImageContent(data=b64(1000), mime_type="image/png")) == "[image: image/png, 1000 bytes]"
    assert render(AudioContent(data=b64(31), mime_type="audio/wav")) == "[audio: audio/wav, 31 bytes]"


def test_resources() -> None:
    text = TextResourceContents(uri="file:///a.txt", mime_type="text/plain", text="contents of a")
    blob = BlobResourceContents(uri="file:///b.bin", mime_type="application/octet-stream", blob=b64(10))
    assert render(EmbeddedResource(resource=text)) == "contents of a"
    assert (
        render(EmbeddedResource(resource=blob))
        == "[resource: file:///b.bin (application/octet-stream), 10 bytes]"
    )
    link = ResourceLink(uri="file:///c.md", name="c.md", mime_type="text/markdown", description="Notes")
    assert render(link) == "[resource link: file:///c.md c.md (text/markdown): Notes]"


def test_structured_content_is_compact_json_only_without_text() -> None:
    assert render(structured={"a": 1, "b": ["é"]}) == '{"a":1,"b":["é"]}'
    assert render(TextContent(text="a is 1"), structured={"a": 1}) == "a is 1"
    assert render() == ""


def test_is_error_raises_with_the_servers_text() -> None:
    with pytest.raises(MCPToolError, match=r"^disk full$") as caught:
        render(TextContent(text="disk full"), error=True)
    assert (caught.value.server, caught.value.tool) == ("srv", "t")
    with pytest.raises(MCPToolError, match="without a message"):
        render(error=True)


def test_errors_pickle_and_redact() -> None:
    error = MCPServerCrashedError("srv", "server 'srv' (run --key sk-abcdefghijklmnop) crashed")
    assert "sk-abcdefghijklmnop" not in str(error)
    copy = pickle.loads(pickle.dumps(MCPToolError("srv", "t", "bad")))
    assert (copy.server, copy.tool, str(copy)) == ("srv", "t", "bad")
