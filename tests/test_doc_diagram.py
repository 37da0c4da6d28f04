"""The ReAct page's diagram draws the tree the preset builds: every child, in order.

The README's headline diagram once showed three children where the preset built up to seven;
this builds the preset with every option on and reads the diagram of docs/guides/react.md
(its `<name>.X` column) against the built loop body.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from jianmu_like import ReActConfig, Tool, create_react_node
from jianmu_like.testing import scripted_client

ROOT = Path(__file__).resolve().parents[1]


class Answer(BaseModel):
    text: str


def _tool(index: int) -> Tool:
    def look(query: str) -> str:
        return query

    return Tool.from_function(look, name=f"look_{index}", description="Look something up.")


def test_the_react_page_draws_every_child_the_preset_can_build_in_order() -> None:
    page = (ROOT / "docs" / "guides" / "react.md").read_text(encoding="utf-8")
    diagram = page.split("```\nLoopUntilSuccess", 1)[1].split("```", 1)[0]
    drawn = re.findall(r"[├└]── <name>\.(\w+)", diagram)
    config = ReActConfig(synthesize=True, tool_selection={"threshold": 1, "max_tools": 1})
    root = create_react_node(
        "Agent",
        model_client=scripted_client(["x"]),
        tools=[_tool(1), _tool(2)],
        config=config,
        output_type=Answer,
    )
    built = [child.name.removeprefix("Agent.") for child in root.children[0].children]
    assert drawn == built
