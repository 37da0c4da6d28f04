"""An agent whose batch `[append a, slow, append b]` is killed mid-way, for the journal tests.

Run as a script: `python journal_agent.py BASE_URL DB THREAD MODE run|resume` (MODE: serial or
parallel) prints the result as one JSON line. Every tool writes a line to `DB.log` when it
starts; `slow` then waits while the file `DB.block` exists (the test kills the process there).
With `--idempotent`, `slow` is marked idempotent; with `--durability MODE` the agent runs with
that durability; with `--kill-at WHERE` the process SIGKILLs itself at a batch boundary of the
store's writes (see `KillingStore`); with `--store URL` the checkpoints go to that PostgreSQL
database (the async store: its `acommit` is where it kills itself) instead of DB.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, cast

from jianmu_like import Agent, ModelClient, ReActConfig, create_react_node, human, tool
from jianmu_like.checkpoint._contract import Checkpointer, Commit, Durability
from jianmu_like.checkpoint._postgres import PostgresCheckpointer
from jianmu_like.checkpoint._store import SQLiteCheckpointer
from jianmu_like.testing import fast_resilience
from jianmu_like.tools._call_context import current_tool_call


def kill_if(kill_at: str, work: Commit, *, committed: bool) -> None:
    """SIGKILL this process at `kill_at`: `after-start` right after the commit of a batch's
    started rows (before any call runs), `before-last` right before the commit joining the
    batch's last outcome with the save, and `after-last` right after it."""
    joined = bool(work.finished) and work.checkpoint is not None
    if committed:
        due = (kill_at == "after-start" and bool(work.started)) or (kill_at == "after-last" and joined)
    else:
        due = kill_at == "before-last" and joined
    if due:
        os.kill(os.getpid(), signal.SIGKILL)


class KillingStore(SQLiteCheckpointer):
    """The SQLite store, but the process kills itself at one boundary of a run's writes."""

    def __init__(self, path: Path, kill_at: str) -> None:
        super().__init__(path)
        self.kill_at = kill_at

    def commit(self, work: Commit) -> None:
        kill_if(self.kill_at, work, committed=False)
        super().commit(work)
        kill_if(self.kill_at, work, committed=True)


class KillingPostgres(PostgresCheckpointer):
    """The async PostgreSQL store, killing the process at one boundary of a run's writes."""

    def __init__(self, url: str, kill_at: str) -> None:
        super().__init__(url)
        self.kill_at = kill_at

    async def acommit(self, work: Commit) -> None:
        kill_if(self.kill_at, work, committed=False)
        await super().acommit(work)
        kill_if(self.kill_at, work, committed=True)


def open_store(db: Path, url: str | None, kill_at: str | None) -> Checkpointer:
    if url is not None:
        return KillingPostgres(url, kill_at) if kill_at else PostgresCheckpointer(url)
    return KillingStore(db, kill_at) if kill_at else SQLiteCheckpointer(db)


def build_agent(
    base_url: str,
    db: Path,
    mode: str,
    *,
    idempotent: bool = False,
    kill_at: str | None = None,
    durability: Durability | None = None,
    url: str | None = None,
) -> Agent:
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
    return Agent(root, checkpointer=open_store(db, url, kill_at), durability=durability)


def summary(result: Any) -> dict[str, Any]:
    return {
        "status": result.status,
        "final_answer": result.final_answer,
        "messages": [m.model_dump() for m in result.state.messages],
    }


async def main(argv: list[str]) -> None:
    base_url, db, thread, mode, action = argv[:5]
    kill_at = argv[argv.index("--kill-at") + 1] if "--kill-at" in argv else None
    durability = cast(Durability, argv[argv.index("--durability") + 1]) if "--durability" in argv else None
    url = argv[argv.index("--store") + 1] if "--store" in argv else None
    agent = build_agent(
        base_url,
        Path(db),
        mode,
        idempotent="--idempotent" in argv,
        kill_at=kill_at,
        durability=durability,
        url=url,
    )
    if action == "run":
        result = await agent.run({"messages": [human("do the batch")]}, thread_id=thread)
    else:
        result = await agent.resume(thread_id=thread)
    print(json.dumps(summary(result)), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
