"""Serving: jianmu_like's HTTP server beside LangGraph's own API server, the same model server.

    python bench/serving.py [--concurrency 16 64] [--rounds 3] [--runs-per-slot 2]
                            [--langgraph /work/venv-lgapi/bin/langgraph] [--markdown]

Three processes serve, one process drives them:

* the scripted OpenAI-compatible server (`jianmu_like.testing.ScriptedOpenAIServer`, its own
  process): every run is one `add(41, 1)` call, then the answer "done" (two model calls);
* jianmu_like: `create_app` over a ReAct `AgentTemplate` (what `jianmu-like serve` builds
  without a store) under uvicorn, its own process;
* LangGraph: `langgraph dev --no-reload` (langgraph-api's in-memory server, installed in a
  separate virtualenv: `python3 -m venv /work/venv-lgapi && /work/venv-lgapi/bin/pip install
  'langgraph-cli[inmem]' langgraph langchain-openai`) serving `create_react_agent` over
  `ChatOpenAI` pointed at the same model server, with as many jobs per worker as the highest
  concurrency (its default, 10, would queue the rest).

The client (httpx, this process) keeps C runs in flight until C x `--runs-per-slot` runs are
done, for each shape in turn, rounds interleaved so every shape sees the same machine load:

* `jianmu 1 req`: `POST /api/runs?stream=true`, the run's events in the answer;
* `jianmu 2 req`: `POST /api/runs`, then `GET /api/runs/{id}/events`;
* `langgraph`: `POST /runs/stream` (a stateless run, `stream_mode: updates`).

Measured: runs/s (runs / wall of the batch), time to first event (from sending the request
that starts the run to the first SSE event: `run.created` / LangGraph's `metadata`) and to the
end of the stream, and each server's CPU per run (its process tree, from /proc). Each run's
answer is checked. Run by hand only (never collected by pytest).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

PROMPT = "Add one to 41 with the tool, then answer. [k=2]"
FINAL_ANSWER = "done"
LANGGRAPH = "/work/venv-lgapi/bin/langgraph"
TARGET = 1.8
GRAPH = '''
import os
import sys

if os.environ.get("BENCH_SKIP_SDK_TRANSFORM"):
    sys.path.insert(0, os.environ["BENCH_DIR"])
    from serving import skip_sdk_transform

    skip_sdk_transform()

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


model = ChatOpenAI(
    model="scripted-model", base_url=os.environ["BENCH_MODEL_URL"], api_key="bench-key", max_retries=0
)
graph = create_react_agent(model, [add])
'''


def skip_sdk_transform() -> None:
    """`--skip-sdk-transform` (an experiment, in both servers): the openai SDK's request
    transform (a walk of the body against its TypedDicts, ~1.5 ms CPU per chat call here) made
    an identity that only drops the SDK's omitted-parameter sentinels. jianmu_like's provider
    no longer calls it (`models._openai_provider.wire_body`), so this now changes LangGraph's
    side only."""
    import openai._types
    import openai.resources.chat.completions.completions as completions

    async def same(data: Any, _expected: Any) -> Any:
        sentinels = (openai._types.Omit, openai._types.NotGiven)
        return {key: value for key, value in data.items() if not isinstance(value, sentinels)}

    completions.async_maybe_transform = same  # type: ignore[assignment]


# --------------------------------------------------------------------------- the servers
def responder(body: dict[str, Any]) -> Any:
    """Round r (assistant messages so far): add(41, 1) until the k-th call, which answers."""
    from jianmu_like.testing import call, reply

    messages = body["messages"]
    question = next(m["content"] for m in messages if m["role"] == "user")
    k = int(question.rsplit("[k=", 1)[1].rstrip("]"))
    rounds = sum(1 for m in messages if m["role"] == "assistant")
    return call("add", a=41, b=1) if rounds < k - 1 else reply(FINAL_ANSWER)


def serve_model() -> None:
    """`--model-server`: print the base URL, serve until stdin closes."""
    from jianmu_like.testing import ScriptedOpenAIServer

    with ScriptedOpenAIServer(responder) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()


def serve_jianmu(port: int, base_url: str) -> None:
    """`--jianmu-server PORT URL`: the ReAct agent over the model server, behind create_app."""
    import uvicorn

    from jianmu_like import AgentTemplate, ModelClient, ReActConfig, create_react_node, tool
    from jianmu_like.server import create_app

    @tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    if os.environ.get("BENCH_SKIP_SDK_TRANSFORM"):
        skip_sdk_transform()
    client = ModelClient.resolve(base_url=base_url, api_key="bench-key", model="scripted-model")
    root = create_react_node(model_client=client, tools=[add], config=ReActConfig(max_iterations=4))
    template = AgentTemplate.from_prototype(root, log_events=False)
    app = create_app(template.conversation, run_ttl=60.0)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def model_server() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--model-server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    line = proc.stdout.readline().strip()
    try:
        if not line.startswith("http"):
            raise RuntimeError(f"the scripted model server did not start (said {line!r})")
        yield line
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


@contextmanager
def http_server(command: list[str], url: str, ready: str, **popen: Any) -> Iterator[int]:
    """Start `command`, wait until GET `url + ready` answers 200; yields the process id."""
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, **popen)
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{command[0]} ended ({proc.returncode}) before answering")
            try:
                if httpx.get(url + ready, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{command[0]} did not answer {ready} within 180 s")
            time.sleep(0.2)
        yield proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


@contextmanager
def langgraph_server(
    binary: str, base_url: str, jobs: int, log: Callable[[str], None]
) -> Iterator[tuple[str, int]]:
    folder = Path(tempfile.mkdtemp(prefix="bench-lgapi-"))
    (folder / "graph.py").write_text(GRAPH, encoding="utf-8")
    config = {"dependencies": ["."], "graphs": {"agent": "./graph.py:graph"}}
    (folder / "langgraph.json").write_text(json.dumps(config), encoding="utf-8")
    port = free_port()
    env = {
        **os.environ,
        "BENCH_MODEL_URL": base_url,
        "BENCH_DIR": str(Path(__file__).resolve().parent),
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LOG_LEVEL": "WARNING",  # as quiet as ours: no log line per run
    }
    for name in ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "PYTHONPATH"):
        env.pop(name, None)
    command = [
        binary, "dev", "--no-browser", "--no-reload", "--port", str(port),
        "--n-jobs-per-worker", str(jobs), "--server-log-level", "WARNING",
        "--allow-blocking",  # no BlockBuster: the dev server's blocking-call detector costs CPU
    ]  # fmt: skip
    out = open(folder / "server.log", "w", encoding="utf-8")  # noqa: SIM115 - closed below
    try:
        url = f"http://127.0.0.1:{port}"
        with http_server(command, url, "/ok", cwd=folder, env=env, stdout=out, stderr=out) as pid:
            log(f"langgraph dev on port {port} (log: {folder / 'server.log'})")
            yield url, pid
    finally:
        out.close()


def cpu_seconds(pid: int) -> float:
    """User + system CPU of `pid` and every descendant (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(entry.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    total, family = 0.0, {pid}
    changed = True
    while changed:
        changed = False
        for child, (parent, _) in stats.items():
            if parent in family and child not in family:
                family.add(child)
                changed = True
    for member in family:
        total += stats.get(member, (0, 0.0))[1]
    return total


# --------------------------------------------------------------------------- the client
@dataclass
class Timing:
    first: float
    """Seconds from sending the request that starts the run to its first SSE event."""
    end: float


async def read_stream(response: httpx.Response, t0: float) -> tuple[float, list[tuple[str, str]]]:
    """(seconds to the first event, [(event, data)]) of an SSE answer, read to its end."""
    first = 0.0
    events: list[tuple[str, str]] = []
    name, data = "message", ""
    async for line in response.aiter_lines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data = line[5:].strip()
        elif line == "" and data:
            if not events:
                first = time.perf_counter() - t0
            events.append((name, data))
            if name == "done":
                break
            name, data = "message", ""
    return first, events


def jianmu_done(events: list[tuple[str, str]]) -> None:
    done = json.loads(events[-1][1])
    if events[-1][0] != "done" or done.get("status") != "success" or done.get("answer") != FINAL_ANSWER:
        raise AssertionError(f"jianmu_like's run went wrong: {events[-1]}")


async def jianmu_one(http: httpx.AsyncClient) -> Timing:
    t0 = time.perf_counter()
    body = {"input": PROMPT}
    async with http.stream("POST", "/api/runs", params={"stream": "true"}, json=body) as response:
        response.raise_for_status()
        first, events = await read_stream(response, t0)
    if events[0][0] != "run.created":
        raise AssertionError(f"the stream began with {events[0]}")
    jianmu_done(events)
    return Timing(first, time.perf_counter() - t0)


async def jianmu_two(http: httpx.AsyncClient) -> Timing:
    t0 = time.perf_counter()
    created = await http.post("/api/runs", json={"input": PROMPT})
    created.raise_for_status()
    run_id = created.json()["run_id"]
    async with http.stream("GET", f"/api/runs/{run_id}/events") as response:
        response.raise_for_status()
        first, events = await read_stream(response, t0)
    jianmu_done(events)
    return Timing(first, time.perf_counter() - t0)


async def langgraph_run(http: httpx.AsyncClient) -> Timing:
    t0 = time.perf_counter()
    body = {
        "assistant_id": "agent",
        "input": {"messages": [{"role": "user", "content": PROMPT}]},
        "stream_mode": ["updates"],
    }
    async with http.stream("POST", "/runs/stream", json=body) as response:
        response.raise_for_status()
        first, events = await read_stream(response, t0)
    last = json.loads(events[-1][1])
    messages = last.get("agent", {}).get("messages", []) if isinstance(last, dict) else []
    if events[0][0] != "metadata" or not messages or messages[-1].get("content") != FINAL_ANSWER:
        raise AssertionError(f"LangGraph's run went wrong: {events[:1]} ... {events[-1]}")
    return Timing(first, time.perf_counter() - t0)


Runner = Callable[[httpx.AsyncClient], Awaitable[Timing]]


@dataclass
class Shape:
    name: str
    url: str
    pid: int
    run: Runner
    rates: dict[int, list[float]] = field(default_factory=dict)
    firsts: dict[int, list[float]] = field(default_factory=dict)
    ends: dict[int, list[float]] = field(default_factory=dict)
    cpu: dict[int, list[float]] = field(default_factory=dict)


async def batch(shape: Shape, concurrency: int, runs: int) -> None:
    """`runs` runs, `concurrency` in flight, into the shape's figures."""
    # Idle connections closed after 2 s, before a server's keep-alive timeout (uvicorn's 5 s)
    # can close one under a request just sent on it.
    limits = httpx.Limits(
        max_connections=concurrency * 2, max_keepalive_connections=concurrency * 2, keepalive_expiry=2.0
    )
    async with httpx.AsyncClient(base_url=shape.url, timeout=300, limits=limits) as http:
        left = runs
        timings: list[Timing] = []

        async def slot() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                timings.append(await shape.run(http))

        cpu0, t0 = cpu_seconds(shape.pid), time.perf_counter()
        await asyncio.gather(*(slot() for _ in range(concurrency)))
        wall, cpu = time.perf_counter() - t0, cpu_seconds(shape.pid) - cpu0
    shape.rates.setdefault(concurrency, []).append(runs / wall)
    shape.firsts.setdefault(concurrency, []).extend(t.first for t in timings)
    shape.ends.setdefault(concurrency, []).extend(t.end for t in timings)
    shape.cpu.setdefault(concurrency, []).append(cpu / runs)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def table(shapes: list[Shape], levels: list[int]) -> list[str]:
    lines = [
        "| concurrent runs | server | runs/s | x LangGraph | first event p50 / p90 (ms) | x LangGraph (p50) "
        "| stream end p50 (ms) | server CPU ms/run |",
        "|---|---|---|---|---|---|---|---|",
    ]
    peer = next(s for s in shapes if s.name == "langgraph")
    for level in levels:
        peer_rate = statistics.median(peer.rates[level])
        peer_first = statistics.median(peer.firsts[level])
        for shape in shapes:
            rate = statistics.median(shape.rates[level])
            first = statistics.median(shape.firsts[level])
            ratio_rate = f"{rate / peer_rate:.2f}x" if shape is not peer else "1x"
            ratio_first = f"{peer_first / first:.2f}x" if shape is not peer else "1x"
            lines.append(
                f"| {level} | {shape.name} | {rate:.1f} | {ratio_rate} | {first * 1000:.0f} / "
                f"{quantile(shape.firsts[level], 0.9) * 1000:.0f} | {ratio_first} | "
                f"{statistics.median(shape.ends[level]) * 1000:.0f} | "
                f"{statistics.median(shape.cpu[level]) * 1000:.1f} |"
            )
    return lines


async def measure(
    shapes: list[Shape], levels: list[int], rounds: int, per_slot: int, log: Callable[[str], None]
) -> None:
    for shape in shapes:  # warm-up: imports, connections, first-call paths
        await batch(shape, 4, 8)
        shape.rates, shape.firsts, shape.ends, shape.cpu = {}, {}, {}, {}
    for level in levels:
        for r in range(rounds):
            order = shapes[r % len(shapes) :] + shapes[: r % len(shapes)]
            for shape in order:
                await batch(shape, level, level * per_slot)
                log(f"  C={level} round {r + 1}: {shape.name} {shape.rates[level][-1]:.1f} runs/s")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs-per-slot", type=int, default=2, help="runs per concurrent slot, per batch")
    parser.add_argument("--langgraph", default=LANGGRAPH, help="the `langgraph` CLI of its own virtualenv")
    parser.add_argument(
        "--baseline",
        metavar="CHECKOUT",
        help="also serve (one and two requests) from this checkout, e.g. /work/main",
    )
    parser.add_argument(
        "--skip-sdk-transform", action="store_true", help="an experiment: see skip_sdk_transform()"
    )
    parser.add_argument("--markdown", action="store_true", help="only the table")
    parser.add_argument("--model-server", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--jianmu-server", nargs=2, metavar=("PORT", "URL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.model_server:
        return serve_model()
    if args.jianmu_server:
        return serve_jianmu(int(args.jianmu_server[0]), args.jianmu_server[1])

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    levels: list[int] = args.concurrency
    if args.skip_sdk_transform:
        os.environ["BENCH_SKIP_SDK_TRANSFORM"] = "1"  # inherited by both servers
    with model_server() as base_url, ExitStack() as servers:
        port = free_port()
        ours = [sys.executable, str(Path(__file__).resolve()), "--jianmu-server", str(port), base_url]
        pid = servers.enter_context(http_server(ours, f"http://127.0.0.1:{port}", "/healthz"))
        url = f"http://127.0.0.1:{port}"
        shapes = [Shape("jianmu 1 req", url, pid, jianmu_one), Shape("jianmu 2 req", url, pid, jianmu_two)]
        if args.baseline:
            port = free_port()
            command = [*ours[:3], str(port), base_url]
            env = {**os.environ, "PYTHONPATH": str(Path(args.baseline).resolve())}
            url = f"http://127.0.0.1:{port}"
            before = servers.enter_context(http_server(command, url, "/healthz", env=env))
            shapes.append(Shape("baseline 1 req", url, before, jianmu_one))
            shapes.append(Shape("baseline 2 req", url, before, jianmu_two))
        lg_url, lg_pid = servers.enter_context(langgraph_server(args.langgraph, base_url, max(levels), log))
        shapes.append(Shape("langgraph", lg_url, lg_pid, langgraph_run))
        load = os.getloadavg()[0]
        asyncio.run(measure(shapes, levels, args.rounds, args.runs_per_slot, log))
        load_end = os.getloadavg()[0]
    if not args.markdown:
        print(f"load average {load:.1f} at the start, {load_end:.1f} at the end; {os.cpu_count()} CPUs")
    print("\n".join(table(shapes, levels)))


if __name__ == "__main__":
    main()
