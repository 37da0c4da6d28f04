"""The cost of one telemetry event for an observed agent: built by the hub, read by a subscriber.

    python bench/event_cost.py [--base PATH] [--repeats N] [--instructions]

An unobserved agent pays nothing per event (the hub returns before building one; the in-memory
benchmarks, `overhead.py` and `instructions.py`, run unobserved). An observed one (a server's SSE
stream, `--json`, a recording, OpenTelemetry) builds every event and hands it to each subscriber.
This measures that, per event, for a ReAct iteration's typical events (`reply.started`, two
`text.delta`, `reply.completed`, `tool.call.started`, `tool.call.completed`, `loop.iteration`):

* `emit`: the hub builds the event for one subscriber that keeps it (the emit path the nodes
  use: the event's class and fields, or on a checkout before typed events its name);
* `emit+data`: the same, the subscriber reading `event.data` (recordings, `--json`, structlog);
* `emit+sse`: the same, the subscriber the server's SSE channel mapper (`ChannelMapper.map`).

`--base PATH` runs the same workload against another checkout (e.g. `git worktree add
/tmp/events-base <commit>`) in alternating subprocesses, so both see the same machine load;
`--instructions` counts instructions under callgrind (needs valgrind) instead of timing,
load-independent. Prints ns (or instructions) per event, the minimum over the repeats.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

N = 20_000
"""Iterations' worth of events per repeat (7 events each)."""


def _workload(mode: str, n: int) -> None:
    from jianmu_like.server._channels import ChannelMapper
    from jianmu_like.telemetry import TelemetryHub
    from jianmu_like.telemetry import events as ev

    typed = isinstance(getattr(ev, "ToolCallStarted", None), type) and hasattr(ev, "CatalogueEvent")
    hub = TelemetryHub(run_id="r1")
    kept: list[Any] = []
    if mode == "emit":
        hub.subscribe(kept.append)
    elif mode == "emit+data":
        hub.subscribe(lambda event: kept.append(event.data))
    else:
        mapper = ChannelMapper()
        hub.subscribe(lambda event: kept.append(mapper.map(event)))
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    node, ns = "agent/loop/llm", "agent"
    if typed:
        events: list[tuple[Any, dict[str, Any]]] = [
            (ev.ReplyStarted, {"round": 1}),
            (ev.TextDelta, {"delta": "Let me "}),
            (ev.TextDelta, {"delta": "add."}),
            (ev.ReplyCompleted, {"round": 1, "tool_calls": ["add"], "final": False, "usage": usage}),
            (ev.ToolCallStarted, {"tool": "add", "call_id": "c1", "arguments": {"a": 1, "b": 2}}),
            (ev.ToolCallCompleted, {"tool": "add", "call_id": "c1", "output": "3", "duration": 0.001}),
            (ev.LoopIteration, {"iteration": 1}),
        ]
    else:
        events = [
            (ev.REPLY_STARTED, {"round": 1}),
            (ev.TEXT_DELTA, {"delta": "Let me "}),
            (ev.TEXT_DELTA, {"delta": "add."}),
            (ev.REPLY_COMPLETED, {"round": 1, "tool_calls": ["add"], "final": False, "usage": usage}),
            (ev.TOOL_CALL_STARTED, {"tool": "add", "call_id": "c1", "arguments": {"a": 1, "b": 2}}),
            (ev.TOOL_CALL_COMPLETED, {"tool": "add", "call_id": "c1", "output": "3", "duration": 0.001}),
            (ev.LOOP_ITERATION, {"iteration": 1}),
        ]
    emit = hub.emit
    for _ in range(n):
        for kind, data in events:
            emit(kind, node=node, namespace=ns, **data)
        kept.clear()


def _child(mode: str, n: int, instructions: bool) -> None:
    os.environ.pop("JIANMU_CHECK_EVENTS", None)  # the hot path, as outside the test suite
    _workload(mode, 50)  # warm-up: imports, first calls
    if instructions:
        from instructions import _region  # the callgrind start/stop helper

        start, stop, _ = _region()
        start()
        _workload(mode, n)
        stop()
        return
    began = time.perf_counter_ns()
    _workload(mode, n)
    print((time.perf_counter_ns() - began) / (n * 7))


def _run(checkout: Path, mode: str, n: int, instructions: bool) -> float:
    env = {**os.environ, "PYTHONPATH": f"{checkout}{os.pathsep}{Path(__file__).parent}"}
    env.pop("JIANMU_CHECK_EVENTS", None)
    command = [sys.executable, __file__, "--child", mode, "--n", str(n)]
    if not instructions:
        out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
        return float(out.strip().splitlines()[-1])
    with tempfile.TemporaryDirectory() as tmp:
        from instructions import _build_helper

        helper = _build_helper(Path(tmp))
        if helper is None:
            raise SystemExit("--instructions needs cc and valgrind's headers (valgrind/callgrind.h)")
        env["JIANMU_CALLGRIND_HELPER"] = str(helper)
        out = Path(tmp) / "cg.out"
        valgrind = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}.%p"]
        subprocess.run([*valgrind, *command, "--instructions"], env=env, check=True, capture_output=True)
        texts = [path.read_text() for path in sorted(Path(tmp).glob("cg.out.*"))]
        measured = [text for text in texts if "measured" in text.split("\nevents:", 1)[0]]
        match = re.search(r"^totals: (\d+)", measured[0] if measured else "", re.M)
        assert match is not None, "no totals in the callgrind output"
        total = int(match.group(1))
        return total / (n * 7)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", type=Path, help="another checkout to measure alongside this one")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n", type=int, default=N)
    parser.add_argument("--instructions", action="store_true", help="count instructions (callgrind)")
    parser.add_argument("--child", choices=("emit", "emit+data", "emit+sse"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.n, args.instructions)
        return
    here = Path(__file__).resolve().parents[1]
    checkouts = {"this": here} | ({"base": args.base.resolve()} if args.base else {})
    repeats = 1 if args.instructions else args.repeats
    n = min(args.n, 2_000) if args.instructions else args.n
    unit = "instructions" if args.instructions else "ns"
    for mode in ("emit", "emit+data", "emit+sse"):
        best = {name: float("inf") for name in checkouts}
        for _ in range(repeats):  # alternating: both checkouts see the same load
            for name, checkout in checkouts.items():
                best[name] = min(best[name], _run(checkout, mode, n, args.instructions))
        row = "  ".join(f"{name}: {value:,.0f} {unit}/event" for name, value in best.items())
        ratio = f"  (this/base {best['this'] / best['base']:.2f}x)" if "base" in best else ""
        print(f"{mode:10} {row}{ratio}", flush=True)


if __name__ == "__main__":
    main()
