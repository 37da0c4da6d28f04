"""An agent whose tools make artifacts (HTML with a script that must not run, a PNG file, CSV),
for the artifact tests over HTTP and in Chromium."""

from __future__ import annotations

import base64
import tempfile
from pathlib import Path
from typing import Any

from starlette.applications import Starlette

from jianmu_like import AgentTemplate, ReActConfig, create_react_node, tool
from jianmu_like.server import create_app
from jianmu_like.testing import call, calls, reply, scripted_client
from jianmu_like.tools._artifact import Artifact

PNG = base64.b64decode(  # a 1x1 red pixel
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
HTML = "<h1>Sales chart</h1><script>parent.document.title = 'owned'; document.title = 'ran'</script>"
CSV = "city,people\nParis,2.1\n"


@tool
def chart() -> Artifact:
    """Draw the chart."""
    return Artifact(name="chart.html", mime_type="text/html", content=HTML, summary="a chart")


@tool
def photo() -> Artifact:
    """Take the photo."""
    path = Path(tempfile.mkdtemp()) / "dot.png"
    path.write_bytes(PNG)
    return Artifact(name="dot.png", mime_type="image/png", path=str(path))


@tool
def table() -> Artifact:
    """Export the table."""
    return Artifact(name="cities.csv", mime_type="text/csv", content=CSV)


def responder(body: dict[str, Any]) -> Any:
    if body["messages"][-1]["role"] == "tool":
        return reply("made them")
    return calls(call("chart"), call("photo"), call("table"))


def artifact_app() -> Starlette:
    root = create_react_node(
        model_client=scripted_client(responder),
        tools=[chart, photo, table],
        config=ReActConfig(max_iterations=3),
    )
    return create_app(AgentTemplate.from_prototype(root, log_events=False).conversation)
