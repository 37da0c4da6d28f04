"""An agent whose second tool call hangs (after saying so in a file): the recording durability
test runs it in a child process, kills that with SIGKILL mid-run, and replays what was written."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from jianmu_like import Agent, ReActConfig, create_react_node, human, tool
from jianmu_like.models._client import ModelClient
from jianmu_like.testing import ScriptedReply, ScriptedToolCall, scripted_client

HANGING = Path("hanging.txt")
"""Written by the call that hangs, once it has started (the test points it at its folder)."""


@tool(timeout=3600)
async def step(n: int) -> str:
    """Take step n.

    Args:
        n: The step.
    """
    if n == 2:
        HANGING.write_text("hanging\n")
        await asyncio.Event().wait()  # until the process is killed
    return f"step {n} done"


SCRIPT = [ScriptedReply(tool_calls=[ScriptedToolCall(name="step", arguments={"n": n})]) for n in (1, 2)]


@tool(name="step")
async def quick_step(n: int) -> str:
    """Take step n.

    Args:
        n: The step.
    """
    return f"step {n} done quickly"


def build(client: ModelClient, *, hangs: bool = True) -> Agent:
    tools = [step if hangs else quick_step]
    return Agent(create_react_node(model_client=client, tools=tools, config=ReActConfig(max_iterations=6)))


async def main(record: Path) -> None:
    await build(scripted_client([*SCRIPT, ScriptedReply(content="done")])).run(
        {"messages": [human("Take the steps.")]}, record=record
    )


if __name__ == "__main__":
    HANGING = Path(sys.argv[2])
    asyncio.run(main(Path(sys.argv[1])))
