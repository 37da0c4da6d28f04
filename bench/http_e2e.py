"""Scenario (d): real HTTP end to end — the same calls, the same client, three implementations.

    python bench/http_e2e.py [--quick] [--no-langgraph]

The scripted OpenAI-compatible server (`jianmu_like.testing.ScriptedOpenAIServer`) runs in its
own process, so its CPU time is not charged to the agents; the agents call it through the real
`openai` SDK inside one shared `ModelClient` (httpx, keep-alive). Every run is 5 iterations (4
`add` calls, then the answer). Implementations, interleaved repeat by repeat so they see the same
machine load:

* floor: overhead.py's `MinimalAgent` (a hand-written asyncio loop) over the client, sending
  jianmu_like's system message first (the same requests);
* jianmu_like: a conversation of an `AgentTemplate` (built once, like LangGraph's graph);
* langgraph: `create_react_agent` over `ClientChatModel`, a LangChain chat model that converts
  messages and calls the same `ModelClient`.

Two shapes: sequential runs (median wall per run) and N concurrent runs under `asyncio.gather`
(median wall of the whole batch). Run by hand only (never collected by pytest).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jianmu_like import ModelClient, ToolCall, ai, human, tool_message
from jianmu_like.testing import ScriptedOpenAIServer, call, reply
from jianmu_like.testing._scripted import fast_resilience

ITERATIONS = 5
PROMPT = f"Add the numbers, one call at a time. [k={ITERATIONS}]"
FINAL_ANSWER = "done"
TARGET_RATIO = 1.3


# --------------------------------------------------------------------------- server side
def responder(body: dict[str, Any]) -> Any:
    """Round r (assistant messages so far) calls add(a=r, b=1) until the k-th call answers."""
    messages = body["messages"]
    question = next(m["content"] for m in messages if m["role"] == "user")
    k = int(question.rsplit("[k=", 1)[1].rstrip("]"))
    rounds = sum(1 for m in messages if m["role"] == "assistant")
    if rounds < k - 1:
        return call("add", a=rounds, b=1)
    return reply(FINAL_ANSWER)


def serve() -> None:
    """`--serve`: print the base URL, serve until stdin closes."""
    with ScriptedOpenAIServer(responder) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()


class ServerProcess:
    """The scripted server in a child process."""

    def __enter__(self) -> str:
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("http"):
            self.proc.kill()
            raise RuntimeError(f"scripted server did not start (said {line!r})")
        return line

    def __exit__(self, *exc: object) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


# --------------------------------------------------------------------------- implementations
Run = Callable[[], Awaitable[None]]


def _check(who: str, count: int, observation: Any, final: Any) -> None:
    if count != 2 * ITERATIONS or final != FINAL_ANSWER or observation != str(ITERATIONS - 1):
        raise AssertionError(f"{who} over HTTP went wrong: {count} messages, {observation!r}, {final!r}")


def floor_runner(client: ModelClient) -> Run:
    """The hand-written loop, sending what jianmu_like sends: its system message (persona,
    ReAct protocol, tool descriptions) first, so both make the same calls byte for byte."""
    from overhead import MinimalAgent, add

    from jianmu_like import ToolSet
    from jianmu_like.nodes._context import ContextBuilder

    system_message = ContextBuilder().system_message(ToolSet().with_tools([add]))

    async def run() -> None:
        agent = MinimalAgent(client, [add])
        agent.messages.append(system_message)
        final = await agent.run(PROMPT, ITERATIONS + 1)
        _check("floor", len(agent.messages) - 1, agent.messages[-2].content, final)

    return run


def jianmu_runner(client: ModelClient) -> Run:
    from overhead import add

    from jianmu_like import AgentTemplate, ReActConfig, create_react_node

    root = create_react_node(
        model_client=client, tools=[add], config=ReActConfig(max_iterations=ITERATIONS + 1)
    )
    template = AgentTemplate.from_prototype(root, log_events=False)

    async def run() -> None:
        result = await template.conversation().run({"messages": [human(PROMPT)]})
        messages = result.state.messages
        _check("jianmu_like", len(messages), messages[-2].content, result.final_answer)

    return run


def langgraph_runner(client: ModelClient) -> Run:
    import warnings

    from langchain_core.language_models import BaseChatModel, LanguageModelInput
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.runnables import Runnable
    from langchain_core.tools import tool as lc_tool
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from overhead import add
    from pydantic import ConfigDict

    from jianmu_like.models._types import ModelRequest

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

    def ours(message: BaseMessage) -> Any:
        if isinstance(message, HumanMessage):
            return human(str(message.content))
        if isinstance(message, ToolMessage):
            return tool_message(str(message.content), message.tool_call_id, message.name)
        if isinstance(message, AIMessage):
            calls = [
                ToolCall(id=c["id"] or "", name=c["name"], arguments=c["args"]) for c in message.tool_calls
            ]
            return ai(str(message.content) or None, calls or None)
        raise TypeError(f"unexpected message {type(message).__name__}")

    class ClientChatModel(BaseChatModel):
        """A LangChain chat model over a jianmu_like ModelClient (the same HTTP client)."""

        model_config = ConfigDict(arbitrary_types_allowed=True)
        client: Any

        @property
        def _llm_type(self) -> str:
            return "jianmu-model-client"

        def _generate(
            self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> ChatResult:
            raise NotImplementedError("async only")

        async def _agenerate(
            self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> ChatResult:
            request = ModelRequest(messages=[ours(m) for m in messages], tools=kw.get("tools"))
            answer = (await self.client.complete(request)).message
            tool_calls = [
                {"name": c.name, "args": c.arguments, "id": c.id, "type": "tool_call"}
                for c in answer.tool_calls or ()
            ]
            message = AIMessage(content=answer.content or "", tool_calls=tool_calls)
            return ChatResult(generations=[ChatGeneration(message=message)])

        def bind_tools(self, tools: Sequence[Any], **kw: Any) -> Runnable[LanguageModelInput, AIMessage]:
            return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kw)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = create_react_agent(ClientChatModel(client=client), [lc_tool(add.fn)])

    async def run() -> None:
        result = await graph.ainvoke({"messages": [HumanMessage(PROMPT)]}, config={"recursion_limit": 30})
        messages = result["messages"]
        _check("langgraph", len(messages), messages[-2].content, messages[-1].content)

    return run


RUNNERS: dict[str, Callable[[ModelClient], Run]] = {
    "floor": floor_runner,
    "jianmu_like": jianmu_runner,
    "langgraph": langgraph_runner,
}


# --------------------------------------------------------------------------- measurement
@dataclass(slots=True)
class Budget:
    seq_runs: int = 30
    conc_n: int = 50
    conc_repeats: int = 7


async def _measure(
    names: Sequence[str], budget: Budget, base_url: str, log: Callable[[str], None]
) -> list[dict[str, Any]]:
    client = ModelClient.resolve(
        base_url=base_url, api_key="bench-key", model="scripted-model", resilience=fast_resilience()
    )
    runners = {name: RUNNERS[name](client) for name in names}
    for run in runners.values():  # warm-up: connections, imports, first-call paths
        for _ in range(3):
            await run()
    seq: dict[str, list[float]] = {name: [] for name in names}
    log(f"(d) sequential: {budget.seq_runs} runs each, interleaved")
    for _ in range(budget.seq_runs):
        for name, run in runners.items():
            t0 = time.perf_counter()
            await run()
            seq[name].append(time.perf_counter() - t0)
    conc: dict[str, list[float]] = {name: [] for name in names}
    log(f"(d) concurrent: N={budget.conc_n} x {budget.conc_repeats} repeats, interleaved")
    for _ in range(budget.conc_repeats):
        for name, run in runners.items():
            t0 = time.perf_counter()
            await asyncio.gather(*(run() for _ in range(budget.conc_n)))
            conc[name].append(time.perf_counter() - t0)
    await client.aclose()
    rows: list[dict[str, Any]] = []
    for name in names:
        rows.append(
            {"impl": name, "shape": "sequential", "n": 1, "runs": len(seq[name]), "wall_s": _stats(seq[name])}
        )
        rows.append(
            {
                "impl": name,
                "shape": "concurrent",
                "n": budget.conc_n,
                "runs": len(conc[name]),
                "wall_s": _stats(conc[name]),
            }
        )
    return rows


def _stats(values: Sequence[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values)}


def measure_http(names: Sequence[str], *, quick: bool, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Scenario (d) for `names` (of floor, jianmu_like, langgraph), one server for all."""
    budget = Budget(seq_runs=8, conc_n=20, conc_repeats=3) if quick else Budget()
    with ServerProcess() as base_url:
        return asyncio.run(_measure(names, budget, base_url, log))


def _pick(rows: Sequence[dict[str, Any]], impl: str, shape: str) -> dict[str, Any] | None:
    return next((r for r in rows if r["impl"] == impl and r["shape"] == shape), None)


def render_http(rows: Sequence[dict[str, Any]]) -> str:
    out = [
        "\n(d) Real HTTP end to end: scripted OpenAI-compatible server in a child process, the `openai`\n"
        f"    SDK through one shared ModelClient, {ITERATIONS} iterations per run. sequential: wall per\n"
        "    run; concurrent: wall of N runs under asyncio.gather. Implementations interleaved repeat by\n"
        "    repeat."
    ]
    header = f"{'impl':<12} {'shape':<11} {'N':>4} {'runs':>5} {'wall ms med':>12} {'min':>9} {'/floor':>7}"
    out += [header, "-" * len(header)]
    for row in rows:
        floor = _pick(rows, "floor", row["shape"])
        ratio = row["wall_s"]["median"] / floor["wall_s"]["median"] if floor else float("nan")
        out.append(
            f"{row['impl']:<12} {row['shape']:<11} {row['n']:>4} {row['runs']:>5} "
            f"{row['wall_s']['median'] * 1e3:>12.2f} {row['wall_s']['min'] * 1e3:>9.2f} {ratio:>7.2f}"
        )
    for shape in ("sequential", "concurrent"):
        ours, lang = _pick(rows, "jianmu_like", shape), _pick(rows, "langgraph", shape)
        if ours and lang:
            ratio = ours["wall_s"]["median"] / lang["wall_s"]["median"]
            out.append(f"jianmu_like / LangGraph ({shape}): {ratio:.3f}")
    return "\n".join(out)


def http_targets(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for shape in ("sequential", "concurrent"):
        ours, floor = _pick(rows, "jianmu_like", shape), _pick(rows, "floor", shape)
        if ours and floor:
            ratio = ours["wall_s"]["median"] / floor["wall_s"]["median"]
            out.append(
                {
                    "target": f"real HTTP ({shape}): jianmu_like wall <= {TARGET_RATIO:g}x the hand-written "
                    "loop",
                    "value": f"{ratio:.2f}x",
                    "met": ratio <= TARGET_RATIO,
                }
            )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-langgraph", action="store_true")
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve()
        return 0
    from overhead import langgraph_status

    names = ["floor", "jianmu_like"]
    if not args.no_langgraph and langgraph_status() is None:
        names.append("langgraph")

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    rows = measure_http(names, quick=args.quick, log=log)
    print(render_http(rows))
    for target in http_targets(rows):
        print(f"  [{'MET' if target['met'] else 'NOT MET'}] {target['target']}: {target['value']}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
