"""An agent whose batch `[append a, slow, append b]` is killed mid-way, for the journal tests.

Run as a script: `python journal_agent.py BASE_URL DB THREAD MODE run|resume` (MODE: serial or
parallel) prints the result as one JSON line. Every tool writes a line to `DB.log` when it
starts; `slow` then waits while the file `DB.block` exists (the test kills the process there).
With `--idempotent`, `slow` is marked idempotent.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from jianmu_like import Agent, ModelClient, ReActConfig, create_react_node, human, tool
from jianmu_like.checkpoint._store import SQLiteCheckpointer
from jianmu_like.testing import fast_resilience
from jianmu_like.tools._call_context import current_tool_call


def build_agent(base_url: str, db: Path, mode: str, *, idempotent: bool = False) -> Agent:
    log, block = db.with_suffix(".log"), db.with_suffix(".block")

    def write(line: str) -> None:
        with log.open("a") as f:
            f.write(line + "\n")

    @tool
    def append(item: str) -> str:
        """Append an item to the list."""
        write(f"append {item}")
        return f"appended {item}"

    @tool(idempotent=idempotent)
    def slow() -> str:
        """Take a long time."""
        context = current_tool_call()
        write(f"slow started {context.idempotency_key if context else '-'}")
        while block.exists():
            time.sleep(0.02)
        return "slow done"

    client = ModelClient.resolve(base_url=base_url, api_key="k", model="m", resilience=fast_resilience())
    root = create_react_node(
        "Journal",
        model_client=client,
        tools=[append, slow],
        config=ReActConfig(execution_mode="serial" if mode == "serial" else "parallel"),
    )
    return Agent(root, checkpointer=SQLiteCheckpointer(db))


def summary(result: Any) -> dict[str, Any]:
    return {
        "status": result.status,
        "final_answer": result.final_answer,
        "messages": [m.model_dump() for m in result.state.messages],
    }


async def main(argv: list[str]) -> None:
    base_url, db, thread, mode, action = argv[:5]
    agent = build_agent(base_url, Path(db), mode, idempotent="--idempotent" in argv)
    if action == "run":
        result = await agent.run({"messages": [human("do the batch")]}, thread_id=thread)
    else:
        result = await agent.resume(thread_id=thread)
    print(json.dumps(summary(result)), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
