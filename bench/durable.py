"""Durable runs at scale (issue 11): DBOS workers on one PostgreSQL, and the cost of durability.

    python bench/durable.py [--runs 2000] [--workers 1,2,4] [--iterations 10] [--repeats 200]
                            [--database postgresql://...]

Part 1, throughput: `--runs` runs of 3 ReAct iterations each (two calculator calls, then the
answer) against the scripted OpenAI-compatible HTTP model at 10 ms latency, enqueued at once and
executed by 1, 2 and 4 `jianmu-like worker` processes sharing one database (a throwaway cluster
unless `--database`; a fresh database per worker count). Reported: runs per second (first
enqueue to last completion), p50/p99 latency (DBOS's created_at -> updated_at of each run), and
the database's share: CPU seconds of the PostgreSQL processes against those of the workers, and
`pg_stat_database.active_time` (time spent executing statements) per run.

Part 2, per-iteration cost of durability, in-process against the in-process scripted model (no
HTTP, no latency): the same `--iterations`-iteration run in memory, with the SQLite checkpointer,
with the PostgreSQL checkpointer, and as a DBOS workflow with model and tool calls as steps.
Reported: median wall per run and the extra time per iteration over the in-memory run.

Run by hand only (never collected by pytest); results in bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jianmu_like import Agent, ReActConfig, create_react_node, human
from jianmu_like.testing import ScriptedOpenAIServer, call, calls, reply, scripted_client
from jianmu_like.testing._postgres import TemporaryPostgres
from jianmu_like.tools.builtin import calculator

AGENT_YAML = """\
kind: react
name: Bench
model: scripted-model
tools: [calculator]
"""
LATENCY = 0.010


def responder(body: dict[str, Any]) -> Any:
    """Two calculator rounds, then the answer; every reply after 10 ms."""
    done = sum(1 for m in body["messages"] if m["role"] == "tool")
    if done < 2:
        return calls(call("calculator", expression=f"{done} + 1"), delay=LATENCY)
    return reply("the answer is 2", delay=LATENCY)


# ---------------------------------------------------------------------------------------- part 1
def cpu_seconds(pid: int) -> float:
    """utime + stime (+ reaped children) of a live process, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def postgres_cpu(postmaster: int) -> float:
    """CPU of the postmaster, its reaped backends and its live children."""
    total = cpu_seconds(postmaster)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == postmaster:
            with contextlib.suppress(OSError):
                total += cpu_seconds(int(entry.name))
    return total


def active_time_ms(url: str) -> float:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(active_time), 0) FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
    return float(row[0]) if row else 0.0


def throughput(
    url: str, postmaster: int | None, n_workers: int, runs: int, base_url: str, folder: Path
) -> dict[str, Any]:
    from jianmu_like.durable import DurableClient

    agent_file = folder / "bench.yaml"
    env = {**os.environ, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "bench"}
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jianmu_like",
                "worker",
                str(agent_file),
                "--database",
                url,
                "--executor-id",
                f"bench-{n_workers}-{i}",
                "--concurrency",
                "64",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for i in range(n_workers)
    ]
    try:
        for worker in workers:
            assert worker.stdout is not None
            worker.stdout.readline()  # the ready line
        with DurableClient(url) as client:
            client.submit(agent_file, "warm-up").result()  # DBOS's first-use costs, not measured
            cpu_workers0 = sum(cpu_seconds(w.pid) for w in workers)
            cpu_pg0 = postgres_cpu(postmaster) if postmaster else 0.0
            active0 = active_time_ms(url)
            started = time.perf_counter()
            handles = [client.submit(agent_file, f"q{i}") for i in range(runs)]
            results = [h.result(polling_interval=0.05) for h in handles]
            wall = time.perf_counter() - started
            cpu_workers = sum(cpu_seconds(w.pid) for w in workers) - cpu_workers0
            cpu_pg = (postgres_cpu(postmaster) - cpu_pg0) if postmaster else float("nan")
            active = active_time_ms(url) - active0
            statuses = client.dbos.list_workflows(
                workflow_ids=[h.run_id for h in handles], load_input=False, load_output=False
            )
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(timeout=60)
    assert all(r.status == "success" for r in results), [r.error for r in results if r.status != "success"][
        :3
    ]
    latencies = sorted((s.updated_at or 0) - (s.created_at or 0) for s in statuses)
    return {
        "workers": n_workers,
        "runs": runs,
        "runs_per_s": runs / wall,
        "p50_ms": statistics.median(latencies),
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        "db_cpu_share": cpu_pg / (cpu_pg + cpu_workers) if cpu_pg == cpu_pg else float("nan"),
        "db_active_ms_per_run": active / runs,
        "worker_cpu_ms_per_run": 1000 * cpu_workers / runs,
    }


# ---------------------------------------------------------------------------------------- part 2
def make_agent(iterations: int, checkpointer: Any = None) -> Agent:
    script = [call("calculator", expression="1 + 1")] * (iterations - 1) + ["done"]
    client = scripted_client(script, record=False)
    root = create_react_node(
        "Bench", model_client=client, tools=[calculator], config=ReActConfig(max_iterations=iterations + 1)
    )
    return Agent(root, checkpointer=checkpointer, log_events=False)


async def timed(make: Callable[[], Any], repeats: int) -> float:
    """Median wall seconds of `await make()` (a coroutine running one whole run)."""
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        result = await make()
        samples.append(time.perf_counter() - started)
        status = result.status if hasattr(result, "status") else result["status"]
        assert status == "success", result
    return statistics.median(samples)


async def durability_costs(url: str, iterations: int, repeats: int, folder: Path) -> dict[str, float]:
    from dbos import DBOS

    from jianmu_like.checkpoint import open_checkpointer
    from jianmu_like.durable._naming import APP_NAME, APP_VERSION
    from jianmu_like.durable._workflow import agent_run, register_agent

    data = {"messages": [human("add")]}
    sqlite = open_checkpointer(folder / "bench.db")
    postgres = open_checkpointer(url)
    register_agent("bench", lambda: make_agent(iterations), fingerprint="bench")
    DBOS(config={"name": APP_NAME, "system_database_url": url, "application_version": APP_VERSION,
                 "executor_id": "bench-inprocess", "log_level": "WARNING"})  # fmt: skip
    DBOS.launch()

    async def dbos_run() -> Any:
        handle = await DBOS.start_workflow_async(agent_run, "bench", "add", {})
        return await handle.get_result()

    def agent_run_with(store: Any) -> Callable[[], Any]:
        return lambda: make_agent(iterations, store).run(data)

    shapes: dict[str, Callable[[], Any]] = {
        "memory": agent_run_with(None),
        "sqlite": agent_run_with(sqlite),
        "postgres": agent_run_with(postgres),
        "dbos": dbos_run,
    }
    medians: dict[str, list[float]] = {name: [] for name in shapes}
    try:
        for make in shapes.values():
            await timed(make, 3)  # warm-up
        for _ in range(3):  # interleaved rounds: each shape sees the same machine load
            for name, make in shapes.items():
                medians[name].append(await timed(make, max(1, repeats // 3)))
    finally:
        DBOS.destroy()
        sqlite.close()
        postgres.close()
    return {name: statistics.median(values) for name, values in medians.items()}


# ---------------------------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--iterations", type=int, default=10, help="ReAct iterations per run in part 2")
    parser.add_argument("--repeats", type=int, default=60, help="runs per shape in part 2")
    parser.add_argument("--database", help="a PostgreSQL server URL (default: a throwaway cluster)")
    parser.add_argument("--skip-throughput", action="store_true")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="jianmu-bench-durable-"))
    (folder / "bench.yaml").write_text(AGENT_YAML)
    cluster = None if args.database else TemporaryPostgres().start()
    try:
        postmaster = None
        if cluster is not None and cluster.folder is not None:
            postmaster = int((cluster.folder / "data" / "postmaster.pid").read_text().split()[0])

        def new_database() -> str:
            return cluster.new_database() if cluster is not None else str(args.database)

        print(f"# load average at start: {os.getloadavg()}, cpus: {os.cpu_count()}")
        if not args.skip_throughput:
            with ScriptedOpenAIServer(responder) as server:
                for n in (int(w) for w in args.workers.split(",")):
                    row = throughput(new_database(), postmaster, n, args.runs, server.base_url, folder)
                    print(
                        f"workers={n} runs={row['runs']} runs/s={row['runs_per_s']:.1f} "
                        f"p50={row['p50_ms']:.0f}ms p99={row['p99_ms']:.0f}ms "
                        f"db_cpu_share={row['db_cpu_share']:.0%} "
                        f"db_active/run={row['db_active_ms_per_run']:.2f}ms "
                        f"worker_cpu/run={row['worker_cpu_ms_per_run']:.1f}ms",
                        flush=True,
                    )
        costs = asyncio.run(durability_costs(new_database(), args.iterations, args.repeats, folder))
        base = costs["memory"]
        for name, median in costs.items():
            extra = (median - base) / args.iterations * 1e6
            print(f"{name:9s} median/run={median * 1e3:8.2f}ms  extra/iteration={extra:8.0f}us")
        print(f"# load average at end: {os.getloadavg()}")
    finally:
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
