"""Artifacts over real HTTP (real `openai` client, the scripted server): a document a tool makes
for the user never reaches the model whole, and is whole on the result and in the events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp.types import EmbeddedResource, TextResourceContents

from jianmu_like import (
    Agent,
    Artifact,
    ReActConfig,
    ReActState,
    add_artifact,
    create_react_node,
    human,
    load_agent,
    tool,
)
from jianmu_like.nodes import ToolNode
from jianmu_like.server._channels import ChannelMapper
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import ScriptedOpenAIServer, call, calls, reply
from jianmu_like.tools._call_context import ToolCallContext, reset_current_tool_call, set_current_tool_call
from jianmu_like.tools.mcp._content import render_mcp_block

ROW = "<tr><td>Paris</td><td>2,102,650</td></tr>\n"
HTML = "<html><head><style>td { color: red }</style></head><body><h1>Population report</h1><table>\n"
HTML += ROW * (50_000 // len(ROW)) + "</table></body></html>"


@tool
def report(city: str) -> Artifact:
    """Write a population report as an HTML page.

    Args:
        city: The city.
    """
    return Artifact(name="report.html", mime_type="text/html", content=HTML)


@tool
def notes(topic: str) -> str:
    """Write notes and say where they are.

    Args:
        topic: The topic.
    """
    placeholder = add_artifact(Artifact(name="notes.md", mime_type="text/markdown", content="# " + topic))
    return f"Notes written.\n{placeholder}"


def _agent(srv: ScriptedOpenAIServer) -> tuple[Agent, list[Event]]:
    config = ReActConfig(max_iterations=5, stream=False)
    agent = Agent(
        create_react_node(model_client=srv.client(max_retries=0), tools=[report, notes], config=config)
    )
    events: list[Event] = []
    agent.telemetry.subscribe(events.append)
    return agent, events


async def test_a_50_kb_artifact_never_reaches_the_model() -> None:
    assert len(HTML) >= 50_000
    script = [
        calls(call("report", city="Paris"), call("notes", topic="Paris")),
        reply("The report is ready."),
        reply("Anything else?"),
    ]
    async with ScriptedOpenAIServer(script) as srv:
        agent, events = _agent(srv)
        result = await agent.run({"messages": [human("Report on Paris, please.")]})
        second = await agent.run({"messages": [human("Hi")]})  # artifacts are run-scoped
    assert second.artifacts == [] and second.state.artifacts == []
    assert result.status == "success" and result.final_answer == "The report is ready."
    for request in srv.requests:  # the follow-up run's request carries the whole history
        body = json.dumps(request)
        assert "2,102,650</td></tr>\n<tr>" not in body and len(body) < 10_000
    observations = [m for m in srv.requests[1]["messages"] if m["role"] == "tool"]
    first = observations[0]["content"]
    assert first.startswith("[Artifact generated: report.html] (text/html, ")
    assert "Preview: Population report Paris 2,102,650" in first and "color: red" not in first
    assert observations[1]["content"].startswith("Notes written.\n[Artifact generated: notes.md]")
    # Whole on the result, in the state and in the events.
    assert [a.name for a in result.artifacts] == ["report.html", "notes.md"]
    assert result.artifacts[0].content == HTML and result.artifacts[1].content == "# Paris"
    assert result.state.artifacts == result.artifacts
    emitted = [e for e in events if e.type == "artifact"]
    assert [e.data["tool"] for e in emitted] == ["report", "notes"]
    assert emitted[0].data["artifact"]["content"] == HTML
    # The server's SSE stream forwards them on the `artifact` channel.
    mapper = ChannelMapper()
    forwarded = [data for e in events for channel, data in mapper.map(e) if channel == "artifact"]
    assert forwarded[0]["artifact"]["name"] == "report.html" and forwarded[0]["call_id"]


async def test_a_yaml_agents_tool_returns_an_artifact(tmp_path: Path) -> None:
    (tmp_path / "pages.py").write_text(
        "from jianmu_like import Artifact, tool\n\n"
        "@tool\ndef page(title: str) -> Artifact:\n"
        "    '''Make a page.'''\n"
        "    return Artifact(name='page.md', mime_type='text/markdown', content='# ' + title * 1000,\n"
        "                    summary='A page titled ' + title)\n"
    )
    (tmp_path / "agent.yaml").write_text("kind: react\nname: Pages\ntools:\n  - pages:page\n")
    async with ScriptedOpenAIServer([calls(call("page", title="Hello")), reply("done")]) as srv:
        agent = load_agent(tmp_path / "agent.yaml", model_client=srv.client(max_retries=0))
        result = await agent.run({"messages": [human("A page please")]})
    observation = srv.requests[1]["messages"][-1]["content"]
    assert observation == (
        "[Artifact generated: page.md] (text/markdown, 5002 characters; shown to the user, not to you)\n"
        "Summary: A page titled Hello"
    )
    assert result.artifacts[0].content == "# " + "Hello" * 1000


async def test_a_tool_node_writes_the_placeholder_and_emits_the_artifact() -> None:
    agent = Agent(ToolNode("Report", report, constants={"city": "Paris"}, namespace="r"), ReActState)
    events: list[Event] = []
    agent.telemetry.subscribe(events.append)
    result = await agent.run()
    assert result.state.model_extra["r.tool_output"].startswith("[Artifact generated: report.html]")
    [event] = [e for e in events if e.type == "artifact"]
    assert event.data["artifact"]["content"] == HTML and event.node == "Report"


def test_an_artifact_needs_content_or_path() -> None:
    with pytest.raises(ValueError, match="artifact 'x' needs exactly one of content or path"):
        Artifact(name="x")
    file = Artifact(name="chart.png", mime_type="image/png", path="/tmp/chart.png")
    assert file.placeholder().startswith("[Artifact generated: chart.png] (image/png, file /tmp/chart.png")


def test_an_mcp_embedded_html_document_becomes_an_artifact() -> None:
    context = ToolCallContext(call_id="c1", tool="render", idempotency_key="c1")
    token = set_current_tool_call(context)
    try:
        html = TextResourceContents(uri="file:///out/page.html", mime_type="text/html", text=HTML)
        plain = TextResourceContents(uri="file:///notes.txt", mime_type="text/plain", text="the notes")
        assert render_mcp_block(EmbeddedResource(type="resource", resource=plain)) == "the notes"
        text = render_mcp_block(EmbeddedResource(type="resource", resource=html))
    finally:
        reset_current_tool_call(token)
    assert text.startswith("[Artifact generated: page.html] (text/html, ") and len(text) < 400
    assert [a.content for a in context.artifacts] == [HTML]
