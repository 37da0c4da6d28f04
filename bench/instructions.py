"""Instruction counts (callgrind) of the overhead benchmark's workloads: load-independent.

    python bench/instructions.py measure [--floor] [--only seq|conc] [--k K] [--run-only]
    python bench/instructions.py seq|conc REPEATS [--floor]     # the workload (under valgrind)

On a shared machine wall and CPU times move by 2x with the load; instructions executed do
not. `measure` runs each workload under `valgrind --tool=callgrind` and counts only the
measured part: with a C compiler and valgrind's headers it builds a two-function helper
(`CALLGRIND_START_INSTRUMENTATION` / `STOP`), so imports and warm-up run uninstrumented (fast)
and are not counted; without them it runs each workload twice, with a small and a larger repeat
count, and reports the difference / the extra work:

* seq: sequential runs of k=50 iterations (zero latency), per iteration (12 vs 2 runs);
  `--k 1`: runs of one iteration, per run (600 vs 100 runs): the fixed cost of a fresh run,
  building its agent included (`--run-only`: the runs alone, as `overhead.py` times them);
* conc: gathers of N=1,000 conversations x 5 iterations (10 ms latency; the conversations are
  created inside), per gather (3 vs 1 gathers). GC included, so it moves between gathers.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from overhead import CONC_ITERATIONS, CONC_LATENCY, FloorImpl, Impl, JianmuImpl, concurrent_builder

SEQ_K = 50
CONC_N = 1000
PLANS = {"seq": (2, 12), "conc": (1, 3)}
_HELPER_C = """#include <valgrind/callgrind.h>
void cg_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void cg_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; CALLGRIND_DUMP_STATS_AT("measured"); }
void cg_toggle(void) { CALLGRIND_TOGGLE_COLLECT; }
"""
_HELPER_ENV = "JIANMU_CALLGRIND_HELPER"


def _build_helper(directory: Path) -> Path | None:
    """The start/stop helper library, or None without a compiler or valgrind's headers."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None or not Path("/usr/include/valgrind/callgrind.h").exists():
        return None
    source, library = directory / "cg.c", directory / "cg.so"
    source.write_text(_HELPER_C)
    command = [compiler, "-shared", "-fPIC", "-O1", "-o", str(library), str(source)]
    built = subprocess.run(command, check=False)
    return library if built.returncode == 0 else None


def _region() -> tuple[Callable[[], None], Callable[[], None], Callable[[], None]]:
    """(start, stop, toggle) of the counted region: the helper's, or no-ops (whole process
    counted); `toggle` pauses / resumes counting inside the region."""
    path = os.environ.get(_HELPER_ENV)
    if not path:
        return (lambda: None), (lambda: None), (lambda: None)
    helper = ctypes.CDLL(path)
    return helper.cg_start, helper.cg_stop, helper.cg_toggle


def _seq_plan(k: int) -> tuple[int, int]:
    """Runs of the small and the large seq workload: about as many iterations at any k."""
    scale = max(1, SEQ_K // k)
    low, high = PLANS["seq"]
    return low * scale, high * scale


async def _seq(impl: Impl, runs: int, k: int, run_only: bool) -> None:
    for _ in range(2):  # warm-up
        prepared = impl.build(k, 0.0)
        prepared.verify(await prepared.run())
    start, stop, toggle = _region()
    pause = toggle if run_only else (lambda: None)
    start()
    for _ in range(runs):
        pause()
        prepared = impl.build(k, 0.0)
        pause()
        await prepared.run()
    stop()


async def _conc(impl: Impl, gathers: int, n: int) -> None:
    build = concurrent_builder(impl, CONC_ITERATIONS, CONC_LATENCY)
    warm = [build() for _ in range(n)]
    for p, r in zip(warm, await asyncio.gather(*(p.run() for p in warm)), strict=True):
        p.verify(r)
    start, stop, _ = _region()
    start()
    for _ in range(gathers):
        await asyncio.gather(*(p.run() for p in [build() for _ in range(n)]))
    stop()


def _count(
    what: str, floor: bool, repeats: int, helper: Path | None, n: int, k: int, run_only: bool = False
) -> int:
    """Instructions of one workload run: its measured region with the helper, else in all."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        options = ["--instr-atstart=no"] if helper is not None else []
        env = {**os.environ, _HELPER_ENV: str(helper)} if helper is not None else None
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                *options,
                f"--callgrind-out-file={out}.%p",
                sys.executable,
                __file__,
                what,
                str(repeats),
                f"--n={n}",
                f"--k={k}",
                *(["--run-only"] if run_only else []),
                *(["--floor"] if floor else []),
            ],
            check=True,
            capture_output=True,
            env=env,
        )
        texts = [path.read_text() for path in sorted(Path(tmp).glob("callgrind.out.*"))]
        if helper is not None:
            texts = [text for text in texts if "measured" in text.split("\nevents:", 1)[0]]
        match = re.search(r"^totals: (\d+)", texts[0] if texts else "", re.MULTILINE)
        assert match is not None, "no totals in the callgrind output"
        return int(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("what", choices=["seq", "conc", "measure"])
    parser.add_argument("--only", choices=list(PLANS), help="measure: this workload only")
    parser.add_argument("repeats", nargs="?", type=int, default=1)
    parser.add_argument("--floor", action="store_true", help="the hand-written loop instead")
    parser.add_argument("--n", type=int, default=CONC_N, help=f"conc: runs per gather (default {CONC_N})")
    parser.add_argument(
        "--k", type=int, default=SEQ_K, help=f"seq: iterations per run (default {SEQ_K}; 1: per-run cost)"
    )
    parser.add_argument(
        "--run-only",
        action="store_true",
        help="seq: count the runs only, not the building of each run's agent (needs the helper)",
    )
    args = parser.parse_args()
    impl: Impl = FloorImpl() if args.floor else JianmuImpl()
    if args.what == "seq":
        asyncio.run(_seq(impl, args.repeats, args.k, args.run_only))
    elif args.what == "conc":
        asyncio.run(_conc(impl, args.repeats, args.n))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            helper = _build_helper(Path(tmp))
            for what, (low, high) in PLANS.items():
                if args.only not in (None, what):
                    continue
                if what == "seq":
                    low, high = _seq_plan(args.k)
                    per_what = "per iteration" if args.k > 1 else "per run"
                    label = f"{per_what} (k={args.k})"
                else:
                    label = f"per gather (N={args.n})"
                per_repeat = args.k if what == "seq" else 1
                if args.run_only and what == "seq":
                    label += ", runs only"
                if helper is not None:
                    count = _count(what, args.floor, high - low, helper, args.n, args.k, args.run_only)
                    per = count / (high - low) / per_repeat
                    print(f"{what}: {per / 1e3:,.1f} k Ir {label} [{count:,} in {high - low} repeats]")
                    continue
                if args.run_only:
                    parser.error("--run-only needs a C compiler and valgrind's headers (the helper)")
                small = _count(what, args.floor, low, None, args.n, args.k)
                large = _count(what, args.floor, high, None, args.n, args.k)
                unit = (high - low) * per_repeat
                print(f"{what}: {(large - small) / unit / 1e3:,.1f} k Ir {label} [{small:,} / {large:,}]")


if __name__ == "__main__":
    main()
