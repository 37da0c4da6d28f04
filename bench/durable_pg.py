"""The cost of durability on PostgreSQL (issue 25): jianmu_like's checkpointer against LangGraph's
`AsyncPostgresSaver`, in one run, on one throwaway cluster with fsync on.

    python bench/durable_pg.py [--runs 200] [--concurrency 50] [--iterations 3] [--rounds 3]
                               [--seq-k 20] [--seq-runs 30] [--only jianmu,langgraph]

Part 1, concurrent: `--runs` runs of `--iterations` ReAct iterations (the model answers after
10 ms; the tool is an async `add`), `--concurrency` at a time in one process. For each shape:
runs/s, this process's CPU ms per run, the PostgreSQL backends' CPU ms per run, write
transactions per run (transaction ids assigned: `pg_current_xact_id()` delta), commits per run
(`pg_stat_database.xact_commit` delta, read-only ones included) and statements per run
(`pg_stat_statements`, BEGIN/COMMIT included). Shapes run in interleaved rounds (each sees the
same machine load); the medians of the rounds are printed, with the ratios to LangGraph's async
saver of the same rounds.

Part 2, sequential: one run of `--seq-k` iterations at a time, no model latency: the extra wall
time per iteration of each durable shape over the same run without a checkpointer.

The cluster runs with `fsync=on`, `synchronous_commit=on`, `full_page_writes=on` (the throwaway
cluster of the tests turns them off) and `pg_stat_statements` loaded. Needs the `bench` extra
(`langgraph`, `langgraph-checkpoint-postgres`). Run by hand only; results in bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import time
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import overhead
from durable import postgres_cpu

from jianmu_like import Agent, ReActConfig, create_react_node, human
from jianmu_like.checkpoint import PostgresCheckpointer
from jianmu_like.testing._postgres import TemporaryPostgres

LATENCY = 0.010
DURABLE = {
    "fsync": "on",
    "synchronous_commit": "on",
    "full_page_writes": "on",
    "shared_preload_libraries": "pg_stat_statements",
    "max_connections": "200",
}
POOL_SIZE = 20
"""Connections of the jianmu store (each pool; LangGraph's pool gets the same)."""


class SyncPostgres(PostgresCheckpointer):
    """The store without its async forms: a run then calls the synchronous contract from the
    event loop (how every run used it before the async store)."""

    acommit = aload = ajournal = arelease = aclose = None  # type: ignore[assignment]


class UngroupedPostgres(PostgresCheckpointer):
    """The async store with each write in a transaction of its own (how it wrote before group
    commit): the same rounds show what grouping the writes of concurrent runs changes."""

    async def _awrite(self, thread_id: str, parts: Any) -> Any:
        return await self._awrite_alone(parts)


RunOne = Callable[[str], Awaitable[None]]
"""Runs one whole run on the thread named by its argument (and checks its answer)."""


# ------------------------------------------------------------------------------------ shapes
class JianmuShape:
    """One agent per concurrent slot (runs of a slot go one after another, on new threads)."""

    def __init__(
        self,
        url: str | None,
        iterations: int,
        latency: float,
        *,
        store: type | None = None,
        **run_options: Any,
    ) -> None:
        kind = store or PostgresCheckpointer
        self.store = kind(url, keep=None, pool_size=POOL_SIZE) if url else None
        self.iterations = iterations
        self.client = overhead.shared_client(iterations, latency)
        self.run_options = run_options
        self.free: list[Agent] = []

    def _agent(self) -> Agent:
        if self.free:
            return self.free.pop()
        root = create_react_node(
            model_client=self.client,
            tools=[overhead.add],
            config=ReActConfig(max_iterations=self.iterations + 1),
        )
        return Agent(root, checkpointer=self.store, log_events=False)

    async def run(self, thread: str) -> None:
        agent = self._agent()
        try:
            result = await agent.run(
                {"messages": [human(overhead.PROMPT)]}, thread_id=thread, **self.run_options
            )
        finally:
            self.free.append(agent)
        assert result.status == "success", result
        assert result.final_answer == overhead.FINAL_ANSWER, result.final_answer

    async def close(self) -> None:
        if self.store is not None:
            await asyncio.to_thread(self.store.close)


class LangGraphShape:
    """`create_react_agent` with `AsyncPostgresSaver` on a connection pool (LangGraph's
    documented setup), `durability` as given to `ainvoke`."""

    def __init__(self, url: str, iterations: int, latency: float, durability: str, pool_size: int) -> None:
        self.url, self.iterations, self.latency = url, iterations, latency
        self.durability, self.pool_size = durability, pool_size
        self.graph: Any = None
        self.pool: Any = None

    async def open(self) -> None:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from langgraph.prebuilt import create_react_agent
        from langchain_core.tools import tool as lc_tool
        from langgraph_compare import ScriptedChatModel

        self.pool = AsyncConnectionPool(
            self.url,
            min_size=1,
            max_size=self.pool_size,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
            open=False,
        )
        await self.pool.open(wait=True)
        saver = AsyncPostgresSaver(self.pool)
        await saver.setup()
        model = ScriptedChatModel(iterations=self.iterations, latency=self.latency)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.graph = create_react_agent(model, [lc_tool(overhead.add.fn)], checkpointer=saver)

    async def run(self, thread: str) -> None:
        from langchain_core.messages import HumanMessage

        config = {"configurable": {"thread_id": thread}, "recursion_limit": 2 * self.iterations + 10}
        result = await self.graph.ainvoke(
            {"messages": [HumanMessage(overhead.PROMPT)]}, config=config, durability=self.durability
        )
        assert result["messages"][-1].content == overhead.FINAL_ANSWER, result["messages"][-1]

    async def close(self) -> None:
        await self.pool.close()


# ------------------------------------------------------------------------------------ counters
class Counters:
    """Database-side counters of one database (read on a connection of its own)."""

    def __init__(self, url: str, postmaster: int | None) -> None:
        import psycopg

        self.postmaster = postmaster
        self.conn = psycopg.connect(url, autocommit=True)
        self.conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")

    def reset(self) -> None:
        self.conn.execute("SELECT pg_stat_statements_reset()")
        self.conn.execute("SELECT pg_stat_force_next_flush()")
        self.xid0, self.commits0 = self._xid(), self._commits()
        self.cpu0 = postgres_cpu(self.postmaster) if self.postmaster else 0.0

    def _xid(self) -> int:
        row = self.conn.execute("SELECT pg_current_xact_id()::text::bigint").fetchone()
        assert row is not None
        return int(row[0])

    def _commits(self) -> int:
        row = self.conn.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
        assert row is not None
        return int(row[0])

    def pg_cpu(self) -> float:
        """CPU seconds of the PostgreSQL processes since `reset`."""
        return (postgres_cpu(self.postmaster) - self.cpu0) if self.postmaster else float("nan")

    def read(self) -> dict[str, float]:
        """Since `reset` (the shape's connections closed first: a backend flushes its commit
        counts when it goes away)."""
        xids = self._xid() - self.xid0 - 1  # the reading's own pg_current_xact_id()
        time.sleep(1.2)  # the stats of exited backends reach pg_stat_database within PGSTAT_MIN_INTERVAL
        self.conn.execute("SELECT pg_stat_force_next_flush()")
        commits = self._commits() - self.commits0
        row = self.conn.execute(
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE dbid = "
            "(SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT ILIKE "
            "'%pg_stat%' AND query NOT ILIKE '%pg_current_xact_id%'"
        ).fetchone()
        statements = int(row[0]) if row is not None else 0
        return {"xids": xids, "commits": commits, "statements": statements}


async def drive(run_one: RunOne, runs: int, concurrency: int, prefix: str) -> float:
    """Wall seconds for `runs` runs, `concurrency` at a time."""
    queue = iter(range(runs))

    async def worker() -> None:
        for i in queue:
            await run_one(f"{prefix}-{i}")

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started


Factory = Callable[[str | None, int, float], Any]


def shapes(only: set[str]) -> dict[str, Factory]:
    found: dict[str, Factory] = {}
    if "jianmu" in only:
        found["jianmu, no checkpointer"] = lambda url, it, lat: JianmuShape(None, it, lat)
        found["jianmu + PostgreSQL"] = lambda url, it, lat: JianmuShape(url, it, lat)
        found["jianmu + PostgreSQL, one xact per write"] = lambda url, it, lat: JianmuShape(
            url, it, lat, store=UngroupedPostgres
        )
        found["jianmu + PostgreSQL, sync store"] = lambda url, it, lat: JianmuShape(
            url, it, lat, store=SyncPostgres
        )
        for mode in ("async",):
            if durability_modes():
                found[f"jianmu + PostgreSQL ({mode})"] = lambda url, it, lat, m=mode: JianmuShape(
                    url, it, lat, durability=m
                )
    if "langgraph" in only:
        # `--only langgraph,async`: its async saver only (both without a mode named)
        for mode in [m for m in ("async", "sync") if m in only] or ["async", "sync"]:
            found[f"LangGraph + AsyncPostgresSaver ({mode})"] = lambda url, it, lat, m=mode: LangGraphShape(
                str(url), it, lat, m, pool_size=POOL_SIZE
            )
    return found


def durability_modes() -> bool:
    """Whether this jianmu_like takes `durability=` on runs (issue 25 item 4)."""
    import inspect

    return "durability" in inspect.signature(Agent.run).parameters


async def measure(
    name: str, factory: Factory, url: str, counters: Counters, args: argparse.Namespace, tag: str
) -> dict[str, float]:
    shape = factory(url, args.iterations, LATENCY)
    if isinstance(shape, LangGraphShape):
        await shape.open()
    await drive(shape.run, min(args.concurrency, 20), min(args.concurrency, 20), f"warm-{tag}")
    counters.reset()
    cpu0 = time.process_time()
    wall = await drive(shape.run, args.runs, args.concurrency, tag)
    cpu = time.process_time() - cpu0
    pg_cpu = counters.pg_cpu()  # before the shape's backends exit (and leave the live set)
    await shape.close()
    db = counters.read()
    n = args.runs
    return {
        "runs_per_s": n / wall,
        "cpu_ms": 1000 * cpu / n,
        "pg_cpu_ms": 1000 * pg_cpu / n,
        "xids": db["xids"] / n,
        "commits": db["commits"] / n,
        "statements": db["statements"] / n,
    }


async def sequential(name: str, factory: Factory, url: str, args: argparse.Namespace, tag: str) -> float:
    """Median wall seconds of one `--seq-k`-iteration run, one at a time."""
    shape = factory(url, args.seq_k, 0.0)
    if isinstance(shape, LangGraphShape):
        await shape.open()
    samples = []
    for i in range(args.seq_runs + 3):
        started = time.perf_counter()
        await shape.run(f"seq-{tag}-{i}")
        if i >= 3:
            samples.append(time.perf_counter() - started)
    await shape.close()
    return statistics.median(samples)


def table(rows: dict[str, list[dict[str, float]]], baseline: str | None) -> None:
    def med(name: str, key: str) -> float:
        return statistics.median(r[key] for r in rows[name])

    def ratio(name: str, other: str | None) -> str:
        if other not in rows or name == other:
            return ""
        pairs = zip(rows[name], rows[other], strict=True)
        return f"{statistics.median(a['runs_per_s'] / b['runs_per_s'] for a, b in pairs):.2f}x"

    print(
        "| shape | runs/s | x LangGraph (async) | x no checkpointer | CPU ms/run | PG CPU ms/run "
        "| write xacts/run | commits/run | statements/run |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in rows:
        print(
            f"| {name} | {med(name, 'runs_per_s'):.1f} | {ratio(name, baseline)} | "
            f"{ratio(name, 'jianmu, no checkpointer')} | {med(name, 'cpu_ms'):.2f} | "
            f"{med(name, 'pg_cpu_ms'):.2f} | {med(name, 'xids'):.1f} | {med(name, 'commits'):.1f} | "
            f"{med(name, 'statements'):.1f} |"
        )


async def main_async(args: argparse.Namespace, cluster: TemporaryPostgres, postmaster: int | None) -> None:
    found = shapes(set(args.only.split(",")))
    url = cluster.new_database()
    counters = Counters(url, postmaster)
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in found}
    for r in range(args.rounds):
        for i, (name, factory) in enumerate(found.items()):
            rows[name].append(await measure(name, factory, url, counters, args, f"r{r}s{i}"))
            print(f"# round {r} {name} (load {os.getloadavg()[0]:.1f}): {rows[name][-1]}", flush=True)
    print(
        f"\n{args.runs} runs x {args.iterations} iterations, {args.concurrency} concurrent, "
        f"{LATENCY * 1000:.0f} ms model; medians of {args.rounds} rounds; fsync on; cpus {os.cpu_count()}\n"
    )
    table(rows, "LangGraph + AsyncPostgresSaver (async)")
    if args.seq_runs:
        print(f"\nsequential, k={args.seq_k}, no latency: extra per iteration over no checkpointer")
        walls: dict[str, list[float]] = {name: [] for name in found}
        for r in range(args.rounds):
            for i, (name, factory) in enumerate(found.items()):
                walls[name].append(await sequential(name, factory, url, args, f"r{r}s{i}"))
        base = (
            statistics.median(walls["jianmu, no checkpointer"]) if "jianmu, no checkpointer" in walls else 0.0
        )
        for name, values in walls.items():
            median = statistics.median(values)
            print(
                f"| {name} | {median * 1e3:.2f} ms/run "
                f"| {(median - base) / args.seq_k * 1e3:.2f} ms/iteration |"
            )
    counters.conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seq-k", type=int, default=20)
    parser.add_argument("--seq-runs", type=int, default=30)
    parser.add_argument("--only", default="jianmu,langgraph")
    parser.add_argument("--pool-size", type=int, default=POOL_SIZE, help="connections of each store's pool")
    args = parser.parse_args()
    globals()["POOL_SIZE"] = args.pool_size
    print(f"# load average at start: {os.getloadavg()}, cpus: {os.cpu_count()}", flush=True)
    with TemporaryPostgres(settings=DURABLE) as cluster:
        postmaster = None
        if cluster.folder is not None:
            with contextlib.suppress(OSError, ValueError):
                postmaster = int((cluster.folder / "data" / "postmaster.pid").read_text().split()[0])
        asyncio.run(main_async(args, cluster, postmaster))
    print(f"# load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
