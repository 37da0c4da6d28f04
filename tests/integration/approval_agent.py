"""A file-deleting agent used by the approval tests, in the test process and in subprocesses.

Run as a script: `python approval_agent.py BASE_URL DB THREAD run|resume [DECISION]` prints the
result as one JSON line (and with `run --hang`, prints it and then waits to be killed).
`delete_file` waits while the file `<log>.block` (next to its log) exists. The checkpoints go to
the SQLite file DB, or with `--store TARGET` to that store (a postgresql:// URL); the log and
block files are always next to DB.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from jianmu_like import Agent, ModelClient, ReActState, ToolCall, create_react_node, human, tool
from jianmu_like.guard import GuardDecision, GuardEnforcer
from jianmu_like.testing import fast_resilience


def needs_approval(call: ToolCall, _tool: Any, _ctx: Any) -> GuardDecision | None:
    if call.name == "delete_file":
        return GuardDecision.pending(f"deleting {call.arguments.get('path')} needs a human")
    return None


def build_agent(base_url: str, log: Path, db: Path | str | None = None) -> Agent:
    """The same tree every time (a checkpoint can only be resumed by the tree that wrote it)."""

    @tool(effect_tags={"destructive"})
    def delete_file(path: str) -> str:
        """Delete a file."""
        while log.with_suffix(".block").exists():
            time.sleep(0.02)
        with log.open("a") as f:
            f.write(f"delete {path}\n")
        return f"deleted {path}"

    @tool
    def list_files(folder: str) -> str:
        """List a folder."""
        with log.open("a") as f:
            f.write(f"list {folder}\n")
        return "a.txt b.txt"

    client = ModelClient.resolve(
        base_url=base_url, api_key="test-key", model="m", resilience=fast_resilience()
    )
    root = create_react_node(
        "Janitor",
        model_client=client,
        tools=[delete_file, list_files],
        constraints=GuardEnforcer([needs_approval]),
    )
    return Agent(root, state_schema=ReActState, checkpointer=db)  # a path or URL: Agent opens it


def summary(result: Any) -> dict[str, Any]:
    return {
        "status": result.status,
        "final_answer": result.final_answer,
        "usage": result.usage.model_dump(),
        "messages": [m.model_dump() for m in result.state.messages],
        "pending": [a.model_dump() for a in result.pending_approvals],
    }


async def main(argv: list[str]) -> None:
    store = None
    if "--store" in argv:
        at = argv.index("--store")
        store, argv = argv[at + 1], argv[:at] + argv[at + 2 :]
    base_url, db, thread, mode = argv[:4]
    log = Path(db).with_suffix(".log")
    agent = build_agent(base_url, log, store or Path(db))
    if mode == "run":
        result = await agent.run({"messages": [human("clean up /tmp/x")]}, thread_id=thread)
    else:
        decisions = json.loads(argv[4]) if len(argv) > 4 else None
        result = await agent.resume(decisions, thread_id=thread)
    print(json.dumps(summary(result)), flush=True)
    if "--hang" in argv:
        await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
