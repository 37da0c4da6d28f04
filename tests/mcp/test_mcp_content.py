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
from jianmu_like.tools._artifact import Artifact
from jianmu_like.tools._call_context import ToolCallContext, reset_current_tool_call, set_current_tool_call


def render(*blocks: Any, structured: Any = None, error: bool = False) -> str:
    result = CallToolResult(content=list(blocks), structured_content=structured, is_error=error)
    return render_mcp_result(result, server="srv", tool="t")


def b64(size: int) -> str:
    return base64.b64encode(bytes(size)).decode()


def rendered_in_a_call(*blocks: Any) -> tuple[str, list[Artifact]]:
    """Render inside a tool call, as the executor runs it: artifacts attach to the call."""
    context = ToolCallContext(call_id="c1", tool="t", idempotency_key="c1")
    token = set_current_tool_call(context)
    try:
        return render(*blocks), context.artifacts
    finally:
        reset_current_tool_call(token)


def test_text_blocks_are_joined_and_binary_blocks_become_whole_artifacts() -> None:
    assert render(TextContent(text="one"), TextContent(text=""), TextContent(text="two")) == "one\ntwo"
    image, audio = b64(1000), b64(31)
    text, artifacts = rendered_in_a_call(
        ImageContent(data=image, mime_type="image/png"), AudioContent(data=audio, mime_type="audio/wav")
    )
    assert text == (
        "[Artifact generated: image-1.png] (image/png, 1000 bytes; shown to the user, not to you)\n"
        "[Artifact generated: audio-2.wav] (audio/wav, 31 bytes; shown to the user, not to you)"
    )
    assert [(a.name, a.mime_type, a.encoding, a.content) for a in artifacts] == [
        ("image-1.png", "image/png", "base64", image),
        ("audio-2.wav", "audio/wav", "base64", audio),
    ]
    # The base64 data never reaches the model's text.
    assert image not in text


def test_resources() -> None:
    text = TextResourceContents(uri="file:///a.txt", mime_type="text/plain", text="contents of a")
    blob = BlobResourceContents(uri="file:///b.bin", mime_type="application/octet-stream", blob=b64(10))
    assert render(EmbeddedResource(resource=text)) == "contents of a"
    observation, artifacts = rendered_in_a_call(EmbeddedResource(resource=blob))
    assert observation == (
        "[Artifact generated: b.bin] (application/octet-stream, 10 bytes; shown to the user, not to you)"
    )
    assert artifacts[0].content == b64(10) and artifacts[0].encoding == "base64"
    link = ResourceLink(uri="file:///c.md", name="c.md", mime_type="text/markdown", description="Notes")
    assert render(link) == (
        "[resource link: file:///c.md c.md (text/markdown): Notes; read it with the read_resource tool]"
    )


def read_in_a_call(*contents: Any) -> tuple[str, list[Artifact]]:
    """What the model reads after asking `read_resource` for a resource with `contents`."""
    from mcp.types import ReadResourceResult

    from jianmu_like.tools.mcp._resources import render_read_result

    context = ToolCallContext(call_id="c1", tool="read_resource", idempotency_key="c1")
    token = set_current_tool_call(context)
    try:
        return render_read_result(
            ReadResourceResult(contents=list(contents)), server="srv", uri="u"
        ), context.artifacts
    finally:
        reset_current_tool_call(token)


def test_what_the_model_asked_to_read_it_reads() -> None:
    """Text of any text type the model requested with `read_resource` is its observation; only
    binary content becomes an artifact. The same markdown embedded in a tool result the model did
    not ask to read stays an artifact for the user."""
    doc = TextResourceContents(uri="file:///guide.md", mime_type="text/markdown", text="# Guide\nStep one.")
    page = TextResourceContents(uri="file:///p.html", mime_type="text/html", text="<p>hello</p>")
    data = BlobResourceContents(
        uri="file:///d.json", mime_type="application/json", blob=base64.b64encode(b'{"k": "v"}').decode()
    )
    feed = BlobResourceContents(
        uri="file:///f.xml", mime_type="application/atom+xml", blob=base64.b64encode(b"<feed/>").decode()
    )
    observation, artifacts = read_in_a_call(doc, page, data, feed)
    assert observation == '# Guide\nStep one.\n<p>hello</p>\n{"k": "v"}\n<feed/>'
    assert artifacts == []

    binary = BlobResourceContents(uri="file:///b.png", mime_type="image/png", blob=b64(10))
    not_utf8 = BlobResourceContents(
        uri="file:///x.txt", mime_type="text/plain", blob=base64.b64encode(b"\xff\xfe").decode()
    )
    observation, artifacts = read_in_a_call(binary, not_utf8)
    assert observation.startswith("[Artifact generated: b.png] (image/png, 10 bytes")
    assert [a.name for a in artifacts] == ["b.png", "x.txt"]

    embedded, artifacts = rendered_in_a_call(EmbeddedResource(resource=doc))
    assert embedded.startswith("[Artifact generated: guide.md] (text/markdown")
    assert artifacts[0].content == "# Guide\nStep one."


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
