"""Profile jianmu_like on the overhead benchmark's scenarios: where the time and memory go.

    python bench/profile_overhead.py [seq|conc|mem|all] [--top N]

seq:  cProfile of 10 sequential runs of k=200 iterations (zero latency).
conc: cProfile of N=1,000 concurrent runs of 5 iterations (10 ms model latency), conversations
      of one AgentTemplate created in the profiled window (as overhead.py's scenario (b)).
mem:  tracemalloc of the N=1,000 case: peak per run, and what is still held at the end of the
      gather (results included), grouped by the innermost jianmu_like line that allocated it.

cProfile inflates per-call costs roughly 2.5x and favours code with many small calls; use it
for the call graph and counts, and overhead.py for the timings.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import gc
import io
import pstats
import tracemalloc
from typing import Any

from overhead import CONC_ITERATIONS, CONC_LATENCY, JianmuImpl, Prepared, concurrent_builder

SEQ_K = 200
SEQ_RUNS = 10
CONC_N = 1000


def _print_stats(profile: cProfile.Profile, title: str, top: int) -> None:
    for sort in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profile, stream=out).strip_dirs().sort_stats(sort).print_stats(top)
        print(f"=== {title}, by {sort}\n{out.getvalue()}")


async def _warm(impl: JianmuImpl, iterations: int, latency: float) -> None:
    warm = [impl.build(iterations, latency) for _ in range(20)]
    for p, r in zip(warm, await asyncio.gather(*(p.run() for p in warm)), strict=True):
        p.verify(r)


async def profile_seq(top: int) -> None:
    impl = JianmuImpl()
    await _warm(impl, SEQ_K, 0.0)
    runs = [impl.build(SEQ_K, 0.0) for _ in range(SEQ_RUNS)]
    gc.collect()
    profile = cProfile.Profile()
    profile.enable()
    for prepared in runs:
        await prepared.run()
    profile.disable()
    _print_stats(profile, f"{SEQ_RUNS} runs x k={SEQ_K} ({SEQ_RUNS * SEQ_K} iterations)", top)


async def _gather(runs: list[Prepared]) -> list[Any]:
    return await asyncio.gather(*(p.run() for p in runs))


async def profile_conc(top: int) -> None:
    # As overhead.py's scenario (b): one template, conversations created in the profiled window
    # (the tree pool warmed by a first gather).
    build = concurrent_builder(JianmuImpl(), CONC_ITERATIONS, CONC_LATENCY)
    await _gather([build() for _ in range(CONC_N)])
    gc.collect()
    profile = cProfile.Profile()
    profile.enable()
    await _gather([build() for _ in range(CONC_N)])
    profile.disable()
    _print_stats(profile, f"N={CONC_N} concurrent runs x {CONC_ITERATIONS} iterations", top)


def _site(traceback: tracemalloc.Traceback) -> str:
    """The innermost jianmu_like frame of an allocation (else its innermost frame)."""
    for frame in reversed(traceback):  # most recent call last
        if "/jianmu_like/" in frame.filename:
            return f"jianmu_like/{frame.filename.split('/jianmu_like/')[-1]}:{frame.lineno}"
    frame = traceback[-1]
    return f"{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno} (outside jianmu_like)"


async def profile_mem(top: int) -> None:
    build = concurrent_builder(JianmuImpl(), CONC_ITERATIONS, CONC_LATENCY)
    await _gather([build() for _ in range(CONC_N)])  # the template's pool holds CONC_N trees
    runs = [build() for _ in range(CONC_N)]
    gc.collect()
    tracemalloc.start(30)
    before = tracemalloc.take_snapshot()
    base = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    results = await _gather(runs)
    current, peak = tracemalloc.get_traced_memory()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    print(
        f"=== N={CONC_N}: peak {(peak - base) / CONC_N / 1024:.1f} KB/run during the gather, "
        f"{(current - base) / CONC_N / 1024:.1f} KB/run still held at its end ({len(results)} results)"
    )
    ignore = [tracemalloc.Filter(False, tracemalloc.__file__)]
    stats = after.filter_traces(ignore).compare_to(before.filter_traces(ignore), "traceback")
    size: collections.Counter[str] = collections.Counter()
    count: collections.Counter[str] = collections.Counter()
    for stat in stats:
        site = _site(stat.traceback)
        size[site] += stat.size_diff
        count[site] += stat.count_diff
    print(f"{'B/run':>7} {'obj/run':>7}  allocation site (held at the end of the gather)")
    for site, total in size.most_common(top):
        print(f"{total / CONC_N:7.0f} {count[site] / CONC_N:7.1f}  {site}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("what", nargs="?", default="all", choices=["seq", "conc", "mem", "all"])
    parser.add_argument("--top", type=int, default=30, help="rows per listing")
    args = parser.parse_args()
    jobs = {"seq": profile_seq, "conc": profile_conc, "mem": profile_mem}
    for name, job in jobs.items():
        if args.what in (name, "all"):
            asyncio.run(job(args.top))


if __name__ == "__main__":
    main()
