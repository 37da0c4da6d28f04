"""DBOS at its floor (issue 25 item 6): what the project adds per step over a bare `@DBOS.step`.

    python bench/dbos_floor.py [--iterations 10] [--repeats 30] [--database postgresql://...]
    py-spy record -r 400 -f raw -o spy.txt -- python bench/dbos_floor.py --profile 200

Three shapes, in one process against one database (a throwaway cluster unless `--database`),
interleaved round by round so each sees the same machine load, medians reported:

- `memory`: the `--iterations`-iteration ReAct run in memory (the in-process scripted model,
  no latency): the agent's own work, no durability;
- `bare`: a DBOS workflow running as many bare steps as the durable run makes (one per model
  call, one per tool call, the fingerprint), each returning a payload of the size a model step
  records: the floor, DBOS's own per-step cost and one workflow's start and end;
- `durable`: the same run as the project's durable workflow (`durable.workflow.agent_run`);
- `pydantic_ai`: the same run as pydantic-ai's `DBOSAgent`, when `pydantic-ai-slim[dbos]` is
  installed (its model call a step, its tool a `@DBOS.step`: the same 2 steps per iteration).

`durable - memory - bare` is what the project adds for the steps, divided by the steps: the
extra per step. `--profile N` runs only the durable shape N times (for py-spy: who the time goes
to), and `--breakdown` prints a per-package share of py-spy's raw output (`--breakdown spy.txt`).

Run by hand only (never collected by pytest); results in bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from durable import make_agent

from jianmu_like import human
from jianmu_like.testing._postgres import TemporaryPostgres

PAYLOAD = {"content": "x" * 200, "tool_calls": [{"id": "c1", "name": "calculator", "arguments": "{}"}]}
"""About what a model step records (a small reply with one tool call)."""


RECORD_READ: Any = None
PYDANTIC_AI: Any = None
"""pydantic-ai's DBOS agent, when installed (see `_pydantic_ai_agent`)."""


async def _echo(value: dict[str, Any]) -> dict[str, Any]:
    return value


def _bare_workflow() -> Callable[[int], Awaitable[int]]:
    from dbos import DBOS

    @DBOS.workflow(name="bench.bare_loop")
    async def bare_loop(steps: int) -> int:
        for _ in range(steps):
            await DBOS.run_step_async({"name": "bare"}, _echo, PAYLOAD)
        return steps

    return bare_loop


def _pydantic_ai_agent(iterations: int) -> Any:
    """The same run with pydantic-ai's DBOS agent (`pip install 'pydantic-ai-slim[dbos]'`), or
    None: its in-process `FunctionModel` scripts the same replies, and the tool is a DBOS step
    (pydantic-ai runs function tools inline; a tool with a side effect must be a step to be
    exactly-once, as every tool call is in the project's durable runs)."""
    try:
        from dbos import DBOS
        from pydantic_ai import Agent as PydanticAgent
        from pydantic_ai.durable_exec.dbos import DBOSAgent
        from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
        from pydantic_ai.models.function import AgentInfo, FunctionModel
    except ImportError:
        return None

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = sum(isinstance(part, ToolReturnPart) for m in messages for part in m.parts)
        if done < iterations - 1:
            return ModelResponse(parts=[ToolCallPart("calculator", {"expression": "1 + 1"}, f"c{done}")])
        return ModelResponse(parts=[TextPart("done")])

    agent = PydanticAgent(FunctionModel(script), name="bench_pydantic_ai")

    @agent.tool_plain
    @DBOS.step(name="calculator")
    async def calculator(expression: str) -> str:
        """Evaluate a sum."""
        return str(sum(int(term) for term in expression.split("+")))

    return DBOSAgent(agent)


def _record_read_workflow() -> Any:
    """A workflow timing `StepOrder.load` of its own record (see `components`)."""
    from dbos import DBOS

    from jianmu_like.durable._steps import StepOrder

    @DBOS.workflow(name="bench.record_read")
    async def record_read() -> float:
        run_id = DBOS.workflow_id or ""
        samples = []
        for _ in range(30):
            cpu = time.process_time()
            await StepOrder.load(run_id)
            samples.append(time.process_time() - cpu)
        return statistics.median(samples)

    return record_read


def launch(url: str, iterations: int) -> Callable[[int], Awaitable[int]]:
    from dbos import DBOS

    from jianmu_like.durable._naming import APP_NAME, APP_VERSION
    from jianmu_like.durable._workflow import register_agent

    register_agent("bench", lambda: make_agent(iterations), fingerprint="bench")
    bare = _bare_workflow()
    global PYDANTIC_AI, RECORD_READ
    RECORD_READ = _record_read_workflow()
    PYDANTIC_AI = _pydantic_ai_agent(iterations)  # registered before DBOS launches
    DBOS(config={"name": APP_NAME, "system_database_url": url, "application_version": APP_VERSION,
                 "executor_id": "bench-floor", "log_level": "WARNING"})  # fmt: skip
    DBOS.launch()
    return bare


async def shapes(iterations: int, bare: Callable[[int], Awaitable[int]]) -> dict[str, Callable[[], Any]]:
    from dbos import DBOS

    from jianmu_like.durable._workflow import agent_run

    steps = 2 * iterations  # the fingerprint, `iterations` model calls, `iterations - 1` tool calls
    data = {"messages": [human("add")]}

    async def memory() -> None:
        result = await make_agent(iterations).run(data)
        assert result.status == "success", result

    async def bare_run() -> None:
        handle = await DBOS.start_workflow_async(bare, steps)
        assert await handle.get_result() == steps

    async def durable() -> None:
        handle = await DBOS.start_workflow_async(agent_run, "bench", "add", {})
        result = await handle.get_result()
        assert result["status"] == "success", result

    found: dict[str, Callable[[], Any]] = {"memory": memory, "bare": bare_run, "durable": durable}
    if PYDANTIC_AI is not None:

        async def pydantic_ai() -> None:
            result = await PYDANTIC_AI.run("add")
            assert result.output == "done", result

        found["pydantic_ai"] = pydantic_ai
    return found


async def median_of(make: Callable[[], Awaitable[None]], repeats: int) -> tuple[float, float]:
    """Median wall and median CPU seconds (this process, all threads: DBOS's pool included) of
    one run; CPU is what a loaded machine moves least, and what sizes workers."""
    walls, cpus = [], []
    for _ in range(repeats):
        started, cpu = time.perf_counter(), time.process_time()
        await make()
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


async def measure(
    iterations: int, repeats: int, bare: Callable[[int], Awaitable[int]]
) -> dict[str, tuple[float, float]]:
    found = await shapes(iterations, bare)
    for make in found.values():
        await median_of(make, 3)  # warm-up
    rounds: dict[str, list[tuple[float, float]]] = {name: [] for name in found}
    for _ in range(3):
        for name, make in found.items():
            rounds[name].append(await median_of(make, max(1, repeats // 3)))
    return {
        name: (statistics.median(w for w, _ in values), statistics.median(c for _, c in values))
        for name, values in rounds.items()
    }


def components(url: str) -> None:
    """CPU of the project's per-step and per-run parts, alone (load-independent enough to compare
    before and after a change): the model step's name at 10 and 50 iterations of conversation,
    by the old way (model_dump + json.dumps with sorted keys) and today's `request_digest`; and
    reading a run's step record (`StepOrder.load`), which only a recovered run does now."""
    import hashlib
    import json
    import timeit

    from dbos import DBOS

    from jianmu_like.durable._steps import request_digest
    from jianmu_like.models._messages import ToolCall, ai, human, system, tool_message
    from jianmu_like.models._types import ModelRequest
    from jianmu_like.tools.builtin import calculator

    def old_digest(request: ModelRequest) -> str:
        asked = request.model_dump(mode="json", exclude={"timeout", "stream"})
        raw = json.dumps(asked, sort_keys=True, default=str, separators=(",", ":"))
        return hashlib.sha256(raw.encode()).hexdigest()[:16]

    for k in (10, 50):
        messages = [system("You are a helpful assistant. " * 20), human("add")]
        for i in range(k):
            messages.append(
                ai("", tool_calls=[ToolCall(id=f"c{i}", name="calculator", arguments={"e": "1+1"})])
            )
            messages.append(tool_message("2", tool_call_id=f"c{i}", name="calculator"))
        request = ModelRequest(messages=messages, model="m", tools=[calculator.schema()])
        n = 300
        before = min(timeit.repeat(lambda: old_digest(request), number=n, repeat=3)) / n  # noqa: B023
        after = min(timeit.repeat(lambda: request_digest(request), number=n, repeat=3)) / n  # noqa: B023
        print(f"model step name, {k} iterations: old {before * 1e6:6.0f} us  now {after * 1e6:6.0f} us")

    async def read() -> float:
        handle = await DBOS.start_workflow_async(RECORD_READ)
        return float(await handle.get_result())

    print(f"StepOrder.load (per run, recovered runs only now): {asyncio.run(read()) * 1e6:.0f} us CPU")


def breakdown(raw: Path) -> None:
    """Share of py-spy's samples by the package of the innermost frame, and by whether any frame
    of the stack is the project's (its time including what it calls)."""
    leaf: Counter[str] = Counter()
    total = mine = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        leaf[_package(frames[-1])] += n
        if any(_package(frame) == "jianmu_like" for frame in frames):
            mine += n
    print(f"{total} samples; innermost frame by package:")
    for name, n in leaf.most_common(12):
        print(f"  {name:24s} {n / total:6.1%}")
    print(f"stacks through the project's code: {mine / total:.1%}")


def _package(frame: str) -> str:
    """`psycopg` of `Cursor.execute (psycopg/cursor.py:113)`; a module of the standard library
    by its name (`threading` of `threading.py:1002`)."""
    where = frame.rsplit("(", 1)[-1]
    return where.split("/", 1)[0].split(".py", 1)[0].split(":", 1)[0] or "?"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--database", help="a PostgreSQL server URL (default: a throwaway cluster)")
    parser.add_argument("--profile", type=int, default=0, help="only run the durable shape N times")
    parser.add_argument("--breakdown", type=Path, help="summarise py-spy raw output, then exit")
    parser.add_argument("--components", action="store_true", help="the project's parts alone")
    args = parser.parse_args()
    if args.breakdown:
        breakdown(args.breakdown)
        return
    cluster = None if args.database else TemporaryPostgres().start()
    try:
        url = cluster.new_database() if cluster is not None else str(args.database)
        bare = launch(url, args.iterations)
        print(f"# load average at start: {os.getloadavg()}, cpus: {os.cpu_count()}", flush=True)
        try:
            if args.components:
                components(url)
                return
            if args.profile:
                found = asyncio.run(shapes(args.iterations, bare))
                for _ in range(args.profile):
                    asyncio.run(found["durable"]())
                return
            result = asyncio.run(measure(args.iterations, args.repeats, bare))
        finally:
            from dbos import DBOS

            DBOS.destroy()
        steps = 2 * args.iterations
        for name, (wall, cpu) in result.items():
            print(f"{name:8s} median/run: wall {wall * 1e3:8.2f} ms  cpu {cpu * 1e3:8.2f} ms")
        for i, what in enumerate(("wall", "cpu")):
            bare_step = result["bare"][i] / steps * 1e6
            extra = (result["durable"][i] - result["memory"][i] - result["bare"][i]) / steps * 1e6
            print(f"{what}: bare DBOS step {bare_step:6.0f} us (workflow start included); ", end="")
            print(f"project adds {extra:6.0f} us per step")
        if "pydantic_ai" in result:
            wall, cpu = (a / b for a, b in zip(result["pydantic_ai"], result["durable"], strict=True))
            print(f"pydantic-ai DBOS agent / project: wall {wall:.2f}x  cpu {cpu:.2f}x")
        print(f"# load average at end: {os.getloadavg()}")
    finally:
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
