"""Write transactions of one parallel batch of n tool calls on PostgreSQL (issue 25, item 3).

    python bench/batch_commits.py [--sizes 1,2,4,8] [--repeats 5]

One run per case: the model asks for n parallel calls, then answers. The run's write
transactions (`pg_current_xact_id()` delta) minus the claim and the final save are the batch's
commits. Two kinds of calls: `together` (each returns at once, so all outcomes arrive within
one commit's latency) and `spread` (call i returns after i x 30 ms, so each outcome arrives
alone). The guarantee that a finished call is never run again, and is replayed, after a SIGKILL
mid-batch needs each outcome durable before the batch goes on without it; outcomes that arrive
while a commit is in flight share the next one. Medians of `--repeats` runs; fsync on.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from durable_pg import DURABLE

from jianmu_like import Agent, ReActConfig, create_react_node, human, tool
from jianmu_like.checkpoint import PostgresCheckpointer
from jianmu_like.testing import call, calls, scripted_client
from jianmu_like.testing._postgres import TemporaryPostgres

SPACING = 0.030


@tool(parallel_safe=True)
async def together(i: int) -> int:
    """Return at once."""
    return i


@tool(parallel_safe=True)
async def spread(i: int) -> int:
    """Return after i x SPACING seconds."""
    await asyncio.sleep(i * SPACING)
    return i


def xid(url: str) -> int:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_current_xact_id()::text::bigint").fetchone()
    assert row is not None
    return int(row[0])


async def batch_commits(store: PostgresCheckpointer, url: str, kind: str, n: int, thread: str) -> int:
    script = [calls(*(call(kind, i=i) for i in range(n))), "done"]
    root = create_react_node(
        model_client=scripted_client(script, record=False),
        tools=[together if kind == "together" else spread],
        config=ReActConfig(max_iterations=3),
    )
    agent = Agent(root, checkpointer=store, log_events=False)
    before = xid(url)
    result = await agent.run({"messages": [human("go")]}, thread_id=thread)
    after = xid(url)
    assert result.status == "success", result
    return after - before - 1 - 2  # the reading's own xid; the claim and the final save


async def main_async(url: str, sizes: list[int], repeats: int) -> None:
    store = PostgresCheckpointer(url, keep=None, pool_size=8)
    print("| calls in the batch | commits, outcomes together | commits, outcomes spread |")
    print("|---|---|---|")
    for n in sizes:
        row = []
        for kind in ("together", "spread"):
            counts = [await batch_commits(store, url, kind, n, f"{kind}-{n}-{r}") for r in range(repeats)]
            row.append(statistics.median(counts))
        print(f"| {n} | {row[0]:g} | {row[1]:g} |", flush=True)
    await store.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1,2,4,8")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with TemporaryPostgres(settings=DURABLE) as cluster:
        asyncio.run(main_async(cluster.new_database(), [int(s) for s in args.sizes.split(",")], args.repeats))


if __name__ == "__main__":
    main()
