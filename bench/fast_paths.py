"""What each fast path (jianmu_like/_base/speed.py) pays in: instructions per ReAct iteration with
every fast path on, with each one off in turn, and with all off.

Instruction counts (callgrind, through `bench/instructions.py measure --only seq`) do not depend
on machine load, so one run is enough. Each trick earns its place by the instructions it saves
per iteration; one that saves nothing should go.

    python bench/fast_paths.py          # prints a Markdown table for bench/RESULTS.md
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jianmu_like._base.speed import ITEMS, SETTING

HERE = Path(__file__).resolve().parent


def per_iteration(setting: str) -> float:
    """Instructions per iteration (seq workload) with `JIANMU_FAST_PATHS=setting`."""
    done = subprocess.run(
        [sys.executable, str(HERE / "instructions.py"), "measure", "--only", "seq"],
        env={**os.environ, SETTING: setting},
        capture_output=True,
        text=True,
        check=True,
    )
    match = re.search(r"([\d.]+)\s*k\b", done.stdout)
    if match is None:
        raise SystemExit(f"no per-iteration figure in:\n{done.stdout}")
    return float(match.group(1))


def main() -> None:
    every = per_iteration("all")
    rows = [("all on", every, 0.0)]
    for item in ITEMS:
        others = ",".join(name for name in ITEMS if name != item)
        cost = per_iteration(others or "none")
        rows.append((f"`{item}` off", cost, cost - every))
    plain = per_iteration("none")
    rows.append(("all off", plain, plain - every))
    print("| fast paths | instructions per iteration (k) | the trick saves (k) |")
    print("|---|---|---|")
    for label, value, saved in rows:
        print(f"| {label} | {value:.1f} | {saved:+.1f} |")


if __name__ == "__main__":
    main()
