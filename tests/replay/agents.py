"""Agents the replay tests record and replay, importable as `module:function` entries (a
recording names its agent that way when it was built in code)."""

from __future__ import annotations

from pathlib import Path

from jianmu_like import Agent, ReActConfig, create_react_node, tool
from jianmu_like.testing import scripted_client

OUT = Path("written.txt")
"""Where `write_note` writes (the test points it at its own folder)."""


@tool
def write_note(text: str) -> str:
    """Write a note to a file.

    Args:
        text: What to write.
    """
    with OUT.open("a", encoding="utf-8") as file:
        file.write(text + "\n")
    return f"wrote {len(text)} characters"


def offline() -> Agent:
    """The recorded agent, with a model that has no replies left: any call reaching it fails."""
    config = ReActConfig(system_prompt="You keep notes.")
    return Agent(create_react_node(model_client=scripted_client([]), tools=[write_note], config=config))
