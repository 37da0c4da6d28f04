"""What recording costs a run (issue 37, item 7): k=50 iterations, in memory, scripted model.

    python bench/recording_cost.py [--k 50] [--rounds 7] [--runs 20]

Four shapes, run interleaved in one process, each round timing `runs` fresh runs of each:

- `jianmu`: an agent nobody observes (its telemetry hub has no subscriber, so no event is built);
- `jianmu + events`: the same with one subscriber that keeps every event (what the CLI, the
  server and OpenTelemetry do: every observed run pays for its events);
- `jianmu + events, dropped`: the same with one subscriber that lets each event go at once (the
  events are freed inside the run, as a recording's are: the shape above frees them only after
  its timed window, when its list goes);
- `jianmu + recording`: `agent.run(..., record=FILE)` (a file under a temporary folder): every
  model call, tool call and event written as JSON Lines;
- `langgraph`: LangGraph's prebuilt ReAct agent on the same scenario (when the `bench` extra is
  installed), from bench/langgraph_compare.py.

Prints the median wall time and CPU time (`time.process_time`) per run of each shape and the
recording's extra cost against the unobserved and the observed run. On a shared, loaded machine
read the CPU figures: a run's wall time there is its CPU time times however long the scheduler
kept it waiting, which swings with the load from one round to the next. Run by hand only (never
collected by pytest).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from overhead import PROMPT, add, script_client

from jianmu_like import Agent, ReActConfig, create_react_node, human
from jianmu_like.telemetry.events import Event

Run = Callable[[], Awaitable[Any]]


def jianmu(k: int, *, events: bool = False, dropped: bool = False, record: Path | None = None) -> Run:
    client = script_client(k, 0.0, record=False)
    agent = Agent(
        create_react_node(model_client=client, tools=[add], config=ReActConfig(max_iterations=k + 1)),
        log_events=False,
    )
    if events:
        kept: list[Event] = []
        agent.telemetry.subscribe(kept.append)
    if dropped:
        agent.telemetry.subscribe(deque[Event](maxlen=1).append)  # keeps the last one only

    async def run() -> Any:
        result = await agent.run({"messages": [human(PROMPT)]}, record=record)
        assert result.status == "success" and len(result.state.messages) == 2 * k, result
        return result

    return run


_LANGGRAPH: list[Any] = []


def langgraph(k: int) -> Run | None:
    """A LangGraph run (its compiled graph built once and shared, as overhead.py does)."""
    if not _LANGGRAPH:
        try:
            from langgraph_compare import LangGraphImpl
        except ImportError:
            return None
        from overhead import Prepared, check_transcript

        _LANGGRAPH.append(LangGraphImpl(Prepared, check_transcript, add.fn))
    prepared = _LANGGRAPH[0].build(k, 0.0)

    async def run() -> Any:
        result = await prepared.run()
        prepared.verify(result)
        return result

    return run


async def timed(make: Callable[[], Run], runs: int) -> tuple[list[float], list[float]]:
    """The wall and the CPU seconds of `runs` fresh runs."""
    walls, cpus = [], []
    for _ in range(runs):
        run = make()  # built outside the timed window
        gc.collect()
        started, cpu = time.perf_counter(), time.process_time()
        await run()
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
    return walls, cpus


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--k", type=int, default=50, help="iterations per run (model calls)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--runs", type=int, default=20, help="runs of each shape per round")
    args = parser.parse_args(argv)
    k = args.k
    folder = Path(tempfile.mkdtemp(prefix="jianmu-recording-bench-"))
    files = iter(range(10**9))
    shapes: dict[str, Callable[[], Run]] = {
        "jianmu": lambda: jianmu(k),
        "jianmu + events": lambda: jianmu(k, events=True),
        "jianmu + events, dropped": lambda: jianmu(k, dropped=True),
        "jianmu + recording": lambda: jianmu(k, record=folder / f"run{next(files)}.jsonl"),
    }
    if langgraph(k) is not None:
        shapes["langgraph"] = lambda: langgraph(k)  # type: ignore[return-value,arg-type]
    else:
        print("langgraph not installed (pip install -e '.[bench]'): measured without it")
    medians: dict[str, list[float]] = {name: [] for name in shapes}
    cpu_medians: dict[str, list[float]] = {name: [] for name in shapes}
    for make in shapes.values():  # warm-up
        await timed(make, 2)
    for _ in range(args.rounds):
        for name, make in shapes.items():
            walls, cpus = await timed(make, args.runs)
            medians[name].append(statistics.median(walls))
            cpu_medians[name].append(statistics.median(cpus))
    size = statistics.median(p.stat().st_size for p in folder.glob("*.jsonl"))
    ms = {name: statistics.median(values) * 1000 for name, values in medians.items()}
    cpu = {name: statistics.median(values) * 1000 for name, values in cpu_medians.items()}
    print(f"k={k}, {args.rounds} rounds x {args.runs} runs per shape (median of per-round medians)")
    print("| shape | wall ms/run | CPU ms/run | CPU µs/iteration |")
    print("|---|---|---|---|")
    for name, value in ms.items():
        print(f"| {name} | {value:.2f} | {cpu[name]:.2f} | {cpu[name] * 1000 / k:.1f} |")
    for what, of in (("wall", ms), ("CPU", cpu)):
        plain, observed, recorded = of["jianmu"], of["jianmu + events"], of["jianmu + recording"]
        print(f"{what}: recording vs unobserved run: +{(recorded / plain - 1) * 100:.1f}%")
        extra = (recorded / observed - 1) * 100
        print(f"{what}: recording vs observed run (one event subscriber): +{extra:.1f}%")
        extra = (recorded / of["jianmu + events, dropped"] - 1) * 100
        print(f"{what}: recording vs observed run whose subscriber drops the events: +{extra:.1f}%")
    print(f"recording size: {size / 1024:.0f} KiB per run")
    if "langgraph" in ms:
        recorded = ms["jianmu + recording"]
        print(f"langgraph / jianmu + recording (wall): {ms['langgraph'] / recorded:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
