"""Framework-overhead benchmark: jianmu_like vs a hand-written asyncio loop (and LangGraph).

    python bench/overhead.py [--quick] [--json out.json] [--no-langgraph] [--no-isolate]
                                   [--record-requests]

Every model call is answered by an in-process scripted model (zero latency or a fixed
`asyncio.sleep`) and the only tool is a trivial async `add`, so what is measured is the cost of
the agent machinery itself. See bench/README.md for the scenarios and conventions.

Run by hand only (never collected by pytest).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from importlib import metadata
from typing import Any, Protocol, cast

import jianmu_like
from jianmu_like import Agent, AgentTemplate, ReActConfig, create_react_node, human, tool_message
from jianmu_like.bt._clone import clone_tree
from jianmu_like.models._client import ModelClient
from jianmu_like.models._messages import Message
from jianmu_like.models._provider import DeltaCallback
from jianmu_like.models._types import ModelRequest, ModelResponse
from jianmu_like.testing import ScriptedReply, ScriptedToolCall, scripted_client
from jianmu_like.testing._scripted import ScriptedProvider, fast_resilience

PROMPT = "Add the numbers, one call at a time."
FINAL_ANSWER = "done"
SEQ_KS = (1, 10, 50, 200)
CONC_NS = (200, 1000)
CONC_ITERATIONS = 5
CONC_LATENCY = 0.010
IDLE_AGENTS = 1000
IDLE_BATCHES = 10

TARGET_US_PER_ITER = 60.0
TARGET_FLAT_RATIO = 1.25
TARGET_CONC_N = 1000
TARGET_CONC_S = 0.35
TARGET_KB_PER_RUN = 30.0
TARGET_CONV_US = 50.0
TARGET_CONV_KB = 5.0


@jianmu_like.tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def check_transcript(who: str, iterations: int, count: int, observation: Any, final: Any) -> None:
    """A run of `iterations` leaves 2 * iterations messages (human, (ai, tool) * (k-1), ai); the
    last tool result is add(k-2, 1) and the last message the final answer."""
    expected = str(iterations - 1) if iterations > 1 else None
    if count != 2 * iterations or final != FINAL_ANSWER or (expected is not None and observation != expected):
        raise AssertionError(
            f"{who} run went wrong: {count} messages (want {2 * iterations}), last observation "
            f"{observation!r} (want {expected!r}), final {final!r}"
        )


# --------------------------------------------------------------------------- implementations
@dataclass(frozen=True, slots=True)
class Prepared:
    """One built agent ready to run once: `run()` is timed, `verify(result)` is not."""

    run: Callable[[], Awaitable[Any]]
    verify: Callable[[Any], None]


class Impl(Protocol):
    """An agent implementation under test."""

    name: str
    version: str

    def build(self, iterations: int, latency: float) -> Prepared:
        """A fresh agent whose run makes `iterations` model calls (the last one answers)."""
        ...

    def build_idle(self) -> object:
        """A built agent as an application would keep it between runs (for memory per agent)."""
        ...


def concurrent_builder(
    impl: Impl, iterations: int, latency: float, concurrency: int = 0
) -> Callable[[], Prepared]:
    """What scenario (b) calls N times inside its timed window to create the N runs.

    Whatever an application builds once per service (a compiled graph, an agent template, a
    shared model client) is built here, outside the window; an implementation without a
    `concurrent_builder` builds a whole agent per run."""
    builder = getattr(impl, "concurrent_builder", None)
    if builder is not None:
        if impl.name == "jianmu_like":
            return cast(Callable[[], Prepared], builder(iterations, latency, concurrency))
        return cast(Callable[[], Prepared], builder(iterations, latency))
    return partial(impl.build, iterations, latency)


_TOOL_REPLIES: list[ScriptedReply] = []
_FINAL_REPLY = ScriptedReply(content=FINAL_ANSWER)


def script_client(iterations: int, latency: float, *, record: bool) -> ModelClient:
    """The scripted client of one run. `record=True` keeps the provider's log of every
    `ModelRequest` (each holds its prompt list: O(k^2) pointers over a k-iteration run), a
    test-double feature that is off by default here since it is not framework overhead."""
    return scripted_client(script_for(iterations), latency=latency, record=record)


def script_for(iterations: int) -> list[ScriptedReply]:
    """`iterations - 1` replies calling `add(a=i, b=1)` then the final answer.

    Reply objects are shared between runs (their derived message is computed once, as the
    scripted provider intends) and carry explicit call ids, so the test double does no per-call
    work beyond handing out the next reply; arguments differ per round so the executor's
    repeated-call hint never fires.
    """
    while len(_TOOL_REPLIES) < iterations - 1:
        i = len(_TOOL_REPLIES)
        _TOOL_REPLIES.append(
            ScriptedReply(
                tool_calls=[ScriptedToolCall(name="add", arguments={"a": i, "b": 1}, id=f"call_{i}")]
            )
        )
    return [*_TOOL_REPLIES[: iterations - 1], _FINAL_REPLY]


class RoundsProvider(ScriptedProvider):
    """A stateless scripted model for many concurrent runs over one shared client: it answers
    round r (the assistant messages already in the request) with `replies[r]`, as LangGraph's
    `ScriptedChatModel` does. A list script would interleave the runs' replies."""

    def __init__(self, replies: Sequence[ScriptedReply], latency: float) -> None:
        super().__init__([], latency, record=False)
        self.replies = list(replies)

    async def chat(
        self, request: ModelRequest, *, model: str, on_delta: DeltaCallback | None = None
    ) -> ModelResponse:
        if self.latency:
            await asyncio.sleep(self.latency)
        rounds = 0
        for message in request.messages:
            if message.role == "assistant":
                rounds += 1
        reply = self.replies[rounds]
        return ModelResponse(
            message=self._message(reply),
            usage=reply.effective_usage,
            model=model,
            finish_reason=reply.effective_finish_reason,
        )


def shared_client(iterations: int, latency: float) -> ModelClient:
    """One client for every run of a concurrency scenario (see RoundsProvider)."""
    return ModelClient(
        RoundsProvider(script_for(iterations), latency), model="scripted-model", resilience=fast_resilience()
    )


class JianmuImpl:
    """`create_react_node` + `Agent`, one agent (and one scripted client) per run."""

    name = "jianmu_like"

    def __init__(self, *, record: bool = False) -> None:
        self.version = _version("jianmu_like")
        self.record = record
        self._idle_client = scripted_client([])

    def build(self, iterations: int, latency: float) -> Prepared:
        client = script_client(iterations, latency, record=self.record)
        root = create_react_node(
            model_client=client, tools=[add], config=ReActConfig(max_iterations=iterations + 1)
        )
        agent = Agent(root, log_events=False)
        return Prepared(
            partial(agent.run, {"messages": [human(PROMPT)]}), partial(_verify_jianmu, iterations)
        )

    def build_idle(self) -> object:
        root = create_react_node(
            model_client=self._idle_client, tools=[add], config=ReActConfig(max_iterations=10)
        )
        return Agent(root, log_events=False)

    def template(self, client: ModelClient, iterations: int) -> AgentTemplate:
        """Built once per service: trees are clones of this prototype, conversations are cheap."""
        root = create_react_node(
            model_client=client, tools=[add], config=ReActConfig(max_iterations=iterations + 1)
        )
        return AgentTemplate.from_prototype(root, log_events=False)

    def concurrent_builder(
        self, iterations: int, latency: float, concurrency: int = 0
    ) -> Callable[[], Prepared]:
        """One template (and client) per scenario, its pool filled for `concurrency` runs at
        start-up (`reserve`); each run is a new conversation of it."""
        template = self.template(shared_client(iterations, latency), iterations)
        template.reserve(concurrency)
        verify = partial(_verify_jianmu, iterations)

        def build() -> Prepared:
            conversation = template.conversation()
            return Prepared(partial(conversation.run, {"messages": [human(PROMPT)]}), verify)

        return build


class TreeCloneImpl:
    """Scenario (c) for trees: what one more tree of a template's pool costs (a clone)."""

    name = "jianmu_like tree (clone)"

    def __init__(self) -> None:
        self.version = _version("jianmu_like")
        self._root = create_react_node(
            model_client=scripted_client([]), tools=[add], config=ReActConfig(max_iterations=10)
        )

    def build(self, iterations: int, latency: float) -> Prepared:  # pragma: no cover - (c) only
        raise NotImplementedError

    def build_idle(self) -> object:
        return clone_tree(self._root)


class ConversationImpl:
    """Scenario (c) for conversations: what one more conversation of a built template costs."""

    name = "jianmu_like conversation"

    def __init__(self) -> None:
        self.version = _version("jianmu_like")
        self._template = JianmuImpl().template(scripted_client([]), 9)

    def build(self, iterations: int, latency: float) -> Prepared:  # pragma: no cover - (c) only
        raise NotImplementedError

    def build_idle(self) -> object:
        return self._template.conversation()


def _verify_jianmu(iterations: int, result: Any) -> None:
    if result.status != "success" or (result.termination or {}).get("iterations") != iterations:
        raise AssertionError(
            f"jianmu_like run went wrong: {result.status} {result.termination} {result.error}"
        )
    messages = result.state.messages
    check_transcript("jianmu_like", iterations, len(messages), messages[-2].content, result.final_answer)


class MinimalAgent:
    """The floor: a plain asyncio ReAct loop over the same client and tool, no framework."""

    __slots__ = ("client", "messages", "request_fields", "schemas", "tools")

    def __init__(self, client: ModelClient, tools: Sequence[jianmu_like.Tool]) -> None:
        self.client = client
        self.tools = {t.name: t for t in tools}
        self.schemas = [t.schema() for t in tools]
        self.messages: list[Message] = []
        # Every field given: for each omitted field with a default_factory, pydantic 2.14's
        # model_construct inspects the factory's signature on every call (ModelRequest: ~12 us
        # with only messages and tools given, ~3.5 us with all fields).
        self.request_fields: dict[str, Any] = {
            "model": None,
            "tools": self.schemas,
            "tool_choice": None,
            "temperature": None,
            "max_tokens": None,
            "top_p": None,
            "top_k": None,
            "timeout": None,
            "stream": False,
            "extra_params": {},
        }

    async def run(self, prompt: str, max_iterations: int) -> str | None:
        messages = self.messages
        messages.append(human(prompt))
        for _ in range(max_iterations):
            request = ModelRequest.model_construct(**self.request_fields, messages=list(messages))
            message = (await self.client.complete(request)).message
            messages.append(message)
            if not message.tool_calls:
                return message.content
            for call in message.tool_calls:
                output = await self.tools[call.name](**call.arguments)
                messages.append(tool_message(str(output), call.id, call.name))
        return None


class FloorImpl:
    """`MinimalAgent`: what any ReAct implementation over this client must at least spend."""

    name = "floor"
    version = "hand-written asyncio loop"

    def __init__(self, *, record: bool = False) -> None:
        self.record = record
        self._idle_client = scripted_client([])

    def build(self, iterations: int, latency: float) -> Prepared:
        agent = MinimalAgent(script_client(iterations, latency, record=self.record), [add])
        return Prepared(partial(agent.run, PROMPT, iterations + 1), partial(_verify_floor, agent, iterations))

    def build_idle(self) -> object:
        return MinimalAgent(self._idle_client, [add])

    def concurrent_builder(self, iterations: int, latency: float) -> Callable[[], Prepared]:
        client = shared_client(iterations, latency)

        def build() -> Prepared:
            agent = MinimalAgent(client, [add])
            return Prepared(
                partial(agent.run, PROMPT, iterations + 1), partial(_verify_floor, agent, iterations)
            )

        return build


def _verify_floor(agent: MinimalAgent, iterations: int, result: Any) -> None:
    messages = agent.messages
    check_transcript("floor", iterations, len(messages), messages[-2].content, result)


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "?"


def make_impl(name: str, *, record: bool = False) -> Impl:
    if name == "floor":
        return FloorImpl(record=record)
    if name == "jianmu_like":
        return JianmuImpl(record=record)
    if name == "langgraph":
        from langgraph_compare import LangGraphImpl  # a sibling module: needs langgraph installed

        return LangGraphImpl(Prepared, check_transcript, add.fn)
    raise ValueError(f"unknown implementation {name!r}")


def langgraph_status() -> str | None:
    """None when LangGraph can be benchmarked, else why not."""
    try:
        import langchain_core  # noqa: F401
        import langgraph.prebuilt  # noqa: F401
    except ImportError as exc:
        return f"LangGraph skipped: {exc.name or exc} is not installed (pip install -e '.[bench]')"
    return None


# --------------------------------------------------------------------------- measurement
@dataclass(slots=True)
class Settings:
    """Repeat budgets; `--quick` shrinks them."""

    quick: bool
    record: bool = False
    seq_budget: float = 1.5
    seq_min: int = 5
    seq_max: int = 200
    conc_budget: float = 3.0
    conc_min: int = 1
    conc_max: int = 5
    idle_agents: int = IDLE_AGENTS
    langgraph_ns: tuple[int, ...] = CONC_NS
    mem_runs_cap: int | None = None
    """Concurrent runs in the tracemalloc pass of (b) (None: all N)."""

    @classmethod
    def for_mode(cls, quick: bool, *, record: bool = False) -> Settings:
        if not quick:
            return cls(quick=False, record=record)
        return cls(
            quick=True,
            record=record,
            seq_budget=0.25,
            seq_min=3,
            seq_max=40,
            conc_budget=0.5,
            conc_max=3,
            idle_agents=200,
            langgraph_ns=(200,),
            mem_runs_cap=100,
        )


def _stats(values: Sequence[float], scale: float = 1.0) -> dict[str, float]:
    return {"median": statistics.median(values) * scale, "min": min(values) * scale}


def _maxrss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


async def measure_sequential(impl: Impl, k: int, settings: Settings) -> dict[str, Any]:
    """(a) One agent run at a time, zero latency: wall and CPU time per iteration."""
    for _ in range(2):  # warm-up: imports, caches, first-call paths
        prepared = impl.build(k, 0.0)
        prepared.verify(await prepared.run())
    gc.collect()
    walls: list[float] = []
    cpus: list[float] = []
    started = time.perf_counter()
    while len(walls) < settings.seq_max and (
        len(walls) < settings.seq_min or time.perf_counter() - started < settings.seq_budget
    ):
        prepared = impl.build(k, 0.0)
        c0 = time.process_time()
        w0 = time.perf_counter()
        result = await prepared.run()
        w1 = time.perf_counter()
        c1 = time.process_time()
        prepared.verify(result)
        walls.append(w1 - w0)
        cpus.append(c1 - c0)
    return {
        "impl": impl.name,
        "k": k,
        "runs": len(walls),
        "wall_us_per_iter": _stats(walls, 1e6 / k),
        "cpu_us_per_iter": _stats(cpus, 1e6 / k),
        "wall_ms_per_run": _stats(walls, 1e3),
    }


async def _gather(prepared: Sequence[Prepared]) -> list[Any]:
    return await asyncio.gather(*(p.run() for p in prepared))


async def measure_concurrent(impl: Impl, n: int, settings: Settings) -> dict[str, Any]:
    """(b) `n` runs of CONC_ITERATIONS iterations under `asyncio.gather`, CONC_LATENCY per call.
    The runs (agents, conversations) are created inside the timed window."""
    builder = concurrent_builder(impl, CONC_ITERATIONS, CONC_LATENCY, n)
    warm = [builder() for _ in range(20)]
    for p, r in zip(warm, await _gather(warm), strict=True):
        p.verify(r)
    del warm
    gc.collect()
    rss_before = _maxrss_kib()
    rss_after = rss_before
    walls: list[float] = []
    builds: list[float] = []
    cpus: list[float] = []
    started = time.perf_counter()
    while len(walls) < settings.conc_max and (
        len(walls) < settings.conc_min or time.perf_counter() - started < settings.conc_budget
    ):
        c0 = time.process_time()
        w0 = time.perf_counter()
        prepared = [builder() for _ in range(n)]
        wb = time.perf_counter()
        results = await _gather(prepared)
        w1 = time.perf_counter()
        c1 = time.process_time()
        if not walls:
            rss_after = _maxrss_kib()
        for p, r in zip(prepared, results, strict=True):
            p.verify(r)
        walls.append(w1 - w0)
        builds.append(wb - w0)
        cpus.append(c1 - c0)
        del prepared, results
        gc.collect()

    # Memory pass (tracemalloc slows everything down 3-4x, so it is not timed). A fresh builder:
    # whatever the runs need beyond it (jianmu_like: one tree per concurrent run) is counted.
    mem_n = min(n, settings.mem_runs_cap or n)
    builder = concurrent_builder(impl, CONC_ITERATIONS, CONC_LATENCY)
    tracemalloc.start()
    prepared = [builder() for _ in range(mem_n)]
    built = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    results = await _gather(prepared)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del prepared, results
    gc.collect()

    ideal = CONC_ITERATIONS * CONC_LATENCY
    return {
        "impl": impl.name,
        "n": n,
        "iterations": CONC_ITERATIONS,
        "latency_s": CONC_LATENCY,
        "ideal_s": ideal,
        "repeats": len(walls),
        "wall_s": _stats(walls),
        "wall_first_s": walls[0],
        "build_s": _stats(builds),
        "cpu_s": _stats(cpus),
        "cpu_us_per_iter": statistics.median(cpus) / (n * CONC_ITERATIONS) * 1e6,
        "mem_runs": mem_n,
        "peak_kb_per_run": (peak - built) / mem_n / 1024,
        "peak_kb_per_run_incl_agent": peak / mem_n / 1024,
        "rss_growth_kb_per_run": (rss_after - rss_before) / n,
        "rss_growth_mb": (rss_after - rss_before) / 1024,
        "isolated": False,
    }


def measure_idle(impl: Impl, count: int) -> dict[str, Any]:
    """(c) Memory (tracemalloc) and build time per built, idle agent."""
    impl.build_idle()
    gc.collect()
    # Timed in batches, median batch: a collection of the whole heap (this process also holds
    # every other implementation's objects) lands in one batch, not in every agent's figure.
    batch = max(count // IDLE_BATCHES, 1)
    timed: list[object] = []
    per_agent: list[float] = []
    for _ in range(max(count // batch, 1)):
        t0 = time.perf_counter()
        timed.extend(impl.build_idle() for _ in range(batch))
        per_agent.append((time.perf_counter() - t0) / batch)
    build_s = statistics.median(per_agent) * count
    del timed
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    agents = [impl.build_idle() for _ in range(count)]
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del agents
    gc.collect()
    return {
        "impl": impl.name,
        "agents": count,
        "kb_per_agent": (after - before) / count / 1024,
        "build_us_per_agent": build_s / count * 1e6,
    }


def concurrent_isolated(name: str, n: int, settings: Settings) -> dict[str, Any]:
    """Run one concurrency measurement in a fresh interpreter, so the RSS high-water mark
    (`ru_maxrss`) and the heap it starts from belong to this scenario alone."""
    spec = json.dumps({"impl": name, "n": n, "quick": settings.quick, "record": settings.record})
    command = [sys.executable, os.path.abspath(__file__), "--child", spec]
    if os.path.exists("/bin/sh"):
        # Linux carries ru_maxrss across exec: a child exec'd straight from this (large) process
        # starts with our high-water mark and would show no growth. A shell that forks first
        # hands the child its own small one ("; exit" stops the shell from exec'ing in place).
        command = ["/bin/sh", "-c", '"$0" "$@"; exit $?', *command]
    proc = subprocess.run(
        command,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"child benchmark {name} n={n} failed:\n{proc.stderr}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    result["isolated"] = True
    return result


def _child(spec_text: str) -> None:
    spec = json.loads(spec_text)
    settings = Settings.for_mode(spec["quick"], record=spec["record"])
    impl = make_impl(spec["impl"], record=settings.record)
    result = asyncio.run(measure_concurrent(impl, spec["n"], settings))
    print(json.dumps(result))


# --------------------------------------------------------------------------- report
_STARTED = time.perf_counter()


def _log(text: str) -> None:
    print(f"[{time.perf_counter() - _STARTED:6.1f} s] {text}", file=sys.stderr, flush=True)


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += [
        "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in rows
    ]
    return "\n".join(out)


IMPL_NAMES = ("jianmu_like", "floor", "langgraph")


def _ratio_row(label: str, trio: Sequence[dict[str, Any] | None], *path: str) -> list[str]:
    """[label, jianmu/floor, jianmu/langgraph] for the value at `path` of each result."""
    values: list[float | None] = []
    for item in trio:
        value: Any = item
        for key in path:
            value = None if value is None else value[key]
        values.append(value)
    jianmu = values[0]
    return [
        label,
        *("n/a" if jianmu is None or not other else f"{jianmu / other:.3g}" for other in values[1:]),
    ]


def _pick(items: Sequence[dict[str, Any]], impl: str, **where: Any) -> dict[str, Any] | None:
    for item in items:
        if item["impl"] == impl and all(item.get(k) == v for k, v in where.items()):
            return item
    return None


def targets(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The project's targets for jianmu_like, each with its measured value."""
    seq = [r for r in report["sequential"] if r["impl"] == "jianmu_like"]
    out: list[dict[str, Any]] = []
    if seq:
        worst = max(seq, key=lambda r: r["wall_us_per_iter"]["median"])
        value = worst["wall_us_per_iter"]["median"]
        out.append(
            {
                "target": f"wall per iteration <= {TARGET_US_PER_ITER:g} us at every k (median)",
                "value": f"worst {value:.1f} us at k={worst['k']}",
                "met": value <= TARGET_US_PER_ITER,
            }
        )
        by_k = {r["k"]: r["wall_us_per_iter"]["median"] for r in seq}
        lo, hi = min(k for k in by_k if k > 1), max(by_k)
        if lo != hi:
            flat = by_k[hi] / by_k[lo]
            out.append(
                {
                    "target": f"flat in k: per-iteration wall at k={hi} / k={lo} <= {TARGET_FLAT_RATIO:g}",
                    "value": f"{flat:.2f} ({by_k[lo]:.1f} -> {by_k[hi]:.1f} us)",
                    "met": flat <= TARGET_FLAT_RATIO,
                }
            )
    conc = _pick(report["concurrent"], "jianmu_like", n=TARGET_CONC_N)
    if conc is not None:
        wall = conc["wall_s"]["median"]
        out.append(
            {
                "target": f"{TARGET_CONC_N} concurrent runs <= {TARGET_CONC_S:g} s incl. creating them "
                "(median)",
                "value": f"{wall:.3f} s (ideal {conc['ideal_s']:.3f} s)",
                "met": wall <= TARGET_CONC_S,
            }
        )
        build = conc["build_s"]["median"]
        out[-1]["value"] += f", of which creating the {TARGET_CONC_N} conversations {build * 1e3:.1f} ms"
        kb = max(c["peak_kb_per_run"] for c in report["concurrent"] if c["impl"] == "jianmu_like")
        out.append(
            {
                "target": f"peak memory per concurrent run < {TARGET_KB_PER_RUN:g} KB (tracemalloc, worst N)",
                "value": f"{kb:.1f} KB",
                "met": kb < TARGET_KB_PER_RUN,
            }
        )
    conv = _pick(report["idle"], ConversationImpl.name)
    if conv is not None:
        us, kb = conv["build_us_per_agent"], conv["kb_per_agent"]
        out.append(
            {
                "target": f"a conversation of a built template <= {TARGET_CONV_US:g} us and "
                f"<= {TARGET_CONV_KB:g} KB",
                "value": f"{us:.1f} us, {kb:.2f} KB",
                "met": us <= TARGET_CONV_US and kb <= TARGET_CONV_KB,
            }
        )
    http = report.get("http")
    if http:
        from http_e2e import http_targets

        out.extend(http_targets(http))
    return out


def render(report: dict[str, Any]) -> str:
    parts: list[str] = []
    meta = report["meta"]
    parts.append(
        f"Framework overhead benchmark ({'quick' if meta['quick'] else 'full'} mode) - "
        f"Python {meta['python']} on {meta['machine']}, {meta['cpus']} CPU(s)"
    )
    parts.append("versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()))
    if meta.get("langgraph_skipped"):
        parts.append(meta["langgraph_skipped"])
    if meta["record_requests"]:
        parts.append("--record-requests: the scripted provider keeps every request (floor and jianmu_like)")

    parts.append(
        "\n(a) Sequential runs, zero model latency. k iterations = k model calls (k-1 call `add`, "
        "the last answers).\n    Per iteration = run time / k; median and min over `runs` fresh agents."
    )
    rows = [
        [
            r["impl"],
            str(r["k"]),
            str(r["runs"]),
            f"{r['wall_us_per_iter']['median']:.1f}",
            f"{r['wall_us_per_iter']['min']:.1f}",
            f"{r['cpu_us_per_iter']['median']:.1f}",
            f"{r['cpu_us_per_iter']['min']:.1f}",
            f"{r['wall_ms_per_run']['median']:.3f}",
        ]
        for r in report["sequential"]
    ]
    headers = ["impl", "k", "runs", "wall us/it med", "min", "cpu us/it med", "min", "ms/run med"]
    parts.append(_table(headers, rows))

    conc = report["concurrent"]
    mem_note = ""
    if any(c["mem_runs"] != c["n"] for c in conc):
        mem_note = f" (quick: over {min(c['mem_runs'] for c in conc)} concurrent runs)"
    isolated = (
        " (fresh process per row)"
        if conc and conc[0]["isolated"]
        else " (--no-isolate: this process's high-water mark, 0 when an earlier scenario peaked higher)"
    )
    parts.append(
        f"\n(b) Concurrent runs (asyncio.gather), {CONC_ITERATIONS} iterations each = "
        f"{CONC_ITERATIONS} model calls x {CONC_LATENCY * 1e3:g} ms "
        f"-> ideal wall {CONC_ITERATIONS * CONC_LATENCY * 1e3:g} ms.\n"
        "    wall: creating the N runs (agents / conversations, `build ms`) + the gather; 1st: the first\n"
        "    repeat; one shared client per scenario (jianmu_like: one template, reserve(N) trees);\n"
        f"    peak KB/run: tracemalloc peak during the gather / N{mem_note}, agents built before; "
        "+agent: including the built agents;\n"
        f"    RSS KB/run: ru_maxrss growth over building the agents + the first gather / N{isolated}."
    )
    rows = [
        [
            c["impl"],
            str(c["n"]),
            str(c["repeats"]),
            f"{c['wall_s']['median']:.3f}",
            f"{c['wall_s']['min']:.3f}",
            f"{c['wall_first_s']:.3f}",
            f"{c['build_s']['median'] * 1e3:.1f}",
            f"{c['wall_s']['median'] / c['ideal_s']:.2f}x",
            f"{c['cpu_s']['median']:.3f}",
            f"{c['cpu_us_per_iter']:.1f}",
            f"{c['peak_kb_per_run']:.1f}",
            f"{c['peak_kb_per_run_incl_agent']:.1f}",
            f"{c['rss_growth_kb_per_run']:.1f}",
        ]
        for c in report["concurrent"]
    ]
    headers = [
        "impl",
        "N",
        "reps",
        "wall s med",
        "min",
        "1st",
        "build ms",
        "/ideal",
        "cpu s",
        "cpu us/it",
        "peak KB/run",
        "+agent",
        "RSS KB/run",
    ]
    parts.append(_table(headers, rows))

    parts.append(
        "\n(c) Built, idle agents: tracemalloc growth / count; build time per agent (no tracemalloc;\n"
        "    median of 10 batches, so a collection of this process's whole heap lands in one batch).\n"
        "    `jianmu_like conversation`: one more conversation of a built AgentTemplate (its state only;\n"
        "    a run borrows a pooled tree); `jianmu_like tree (clone)`: one more tree for the pool."
    )
    rows = [
        [i["impl"], str(i["agents"]), f"{i['kb_per_agent']:.2f}", f"{i['build_us_per_agent']:.1f}"]
        for i in report["idle"]
    ]
    parts.append(_table(["impl", "agents", "KB/agent", "build us/agent"], rows))

    if report.get("http"):
        from http_e2e import render_http

        parts.append(render_http(report["http"]))

    parts.append(
        "\nRatios (medians): jianmu_like / floor and jianmu_like / LangGraph (< 1: jianmu_like is leaner)"
    )
    rows = []
    for k in sorted({r["k"] for r in report["sequential"]}):
        trio = [_pick(report["sequential"], name, k=k) for name in IMPL_NAMES]
        rows.append(_ratio_row(f"(a) k={k} wall/iter", trio, "wall_us_per_iter", "median"))
        rows.append(_ratio_row(f"(a) k={k} cpu/iter", trio, "cpu_us_per_iter", "median"))
    for n in sorted({c["n"] for c in report["concurrent"]}):
        trio = [_pick(report["concurrent"], name, n=n) for name in IMPL_NAMES]
        rows.append(_ratio_row(f"(b) N={n} wall", trio, "wall_s", "median"))
        rows.append(_ratio_row(f"(b) N={n} cpu", trio, "cpu_s", "median"))
        rows.append(_ratio_row(f"(b) N={n} peak KB/run", trio, "peak_kb_per_run"))
    trio = [_pick(report["idle"], name) for name in IMPL_NAMES]
    rows.append(_ratio_row("(c) KB per idle agent", trio, "kb_per_agent"))
    parts.append(_table(["metric", "jianmu/floor", "jianmu/LangGraph"], rows))

    parts.append("\nTargets (jianmu_like):")
    for t in report["targets"]:
        parts.append(f"  [{'MET' if t['met'] else 'NOT MET'}] {t['target']}: {t['value']}")
    parts.append(f"\ntotal benchmark time: {report['meta']['elapsed_s']:.1f} s")
    return "\n".join(parts)


# --------------------------------------------------------------------------- main
async def run_sequential(impls: Sequence[Impl], settings: Settings) -> list[dict[str, Any]]:
    sequential: list[dict[str, Any]] = []
    for impl in impls:
        for k in SEQ_KS:
            _log(f"(a) {impl.name} k={k} ...")
            sequential.append(await measure_sequential(impl, k, settings))
    return sequential


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small repeat budgets (< 30 s)")
    parser.add_argument("--json", metavar="PATH", help="write machine-readable results here")
    parser.add_argument("--no-langgraph", action="store_true", help="skip the LangGraph comparison")
    parser.add_argument("--require-langgraph", action="store_true", help="fail if LangGraph is missing")
    parser.add_argument(
        "--no-isolate", action="store_true", help="run the concurrency scenarios in this process"
    )
    parser.add_argument(
        "--record-requests",
        action="store_true",
        help="let the scripted provider keep every request, as in tests (floor and jianmu_like)",
    )
    parser.add_argument("--no-http", action="store_true", help="skip scenario (d), real HTTP end to end")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child)
        return 0

    started = time.perf_counter()
    settings = Settings.for_mode(args.quick, record=args.record_requests)
    names = ["floor", "jianmu_like"]
    skipped = "LangGraph skipped: --no-langgraph" if args.no_langgraph else langgraph_status()
    if skipped is None:
        names.append("langgraph")
    elif args.require_langgraph:
        print(skipped, file=sys.stderr)
        return 2
    else:
        _log(skipped)
    impls = [make_impl(name, record=settings.record) for name in names]

    sequential = asyncio.run(run_sequential(impls, settings))
    idle = []
    for impl in [*impls, ConversationImpl(), TreeCloneImpl()]:
        count = settings.idle_agents
        _log(f"(c) {impl.name} {count} idle agents ...")
        idle.append(measure_idle(impl, count))
    concurrent = []
    for n in CONC_NS:
        for impl in impls:
            if impl.name == "langgraph" and n not in settings.langgraph_ns:
                continue
            _log(f"(b) {impl.name} N={n} ...")
            if args.no_isolate:
                concurrent.append(asyncio.run(measure_concurrent(impl, n, settings)))
            else:
                concurrent.append(concurrent_isolated(impl.name, n, settings))

    http: list[dict[str, Any]] = []
    if not args.no_http:
        from http_e2e import measure_http

        _log("(d) real HTTP end to end ...")
        http = measure_http(names, quick=settings.quick, log=_log)

    versions = {impl.name: impl.version for impl in impls if impl.name != "floor"}
    for dist in ("langchain-core", "py_trees", "pydantic"):
        if dist != "langchain-core" or "langgraph" in names:
            versions[dist] = _version(dist)
    report: dict[str, Any] = {
        "meta": {
            "quick": settings.quick,
            "record_requests": settings.record,
            "python": platform.python_version(),
            "machine": f"{platform.system()} {platform.machine()}",
            "cpus": os.cpu_count(),
            "versions": versions,
            "langgraph_skipped": skipped,
            "conventions": {
                "iteration": "one model call; k iterations = k-1 tool rounds + 1 final answer",
                "concurrent_ideal_s": CONC_ITERATIONS * CONC_LATENCY,
            },
        },
        "sequential": sequential,
        "concurrent": concurrent,
        "idle": idle,
        "http": http,
    }
    report["targets"] = targets(report)
    report["meta"]["elapsed_s"] = time.perf_counter() - started
    print(render(report))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2)
        _log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
