"""CPU per model call in the calling process: the chat body sent as it is (`wire_body`, what
`OpenAIProvider` does) against the openai SDK's request transform (`chat.completions.create`).

    python bench/model_call.py [--calls 300] [--rounds 3]

One `OpenAIProvider` calls the scripted model server (`bench/serving.py`'s, its own process, so
its CPU is not counted) with a ReAct run's second request: system prompt, question, one tool call
and its result, the tool offered. Each round times `--calls` calls per path, the paths
alternating, with `time.process_time()` (this process's CPU, all threads) and the wall clock.
Run by hand only (never collected by pytest).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serving import model_server

from jianmu_like.models import ModelRequest, human
from jianmu_like.models import _openai_provider as provider_module
from jianmu_like.models._messages import Message, ToolCall

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    }
]
REQUEST = ModelRequest(
    messages=[
        Message(role="system", content="You are a helpful assistant. Use the tools when they help."),
        human("Add one to 41 with the tool, then answer. [k=2]"),
        Message(
            role="assistant",
            content=None,
            tool_calls=[ToolCall(id="call_1", name="add", arguments={"a": 41, "b": 1})],
        ),
        Message(role="tool", content="42", tool_call_id="call_1"),
    ],
    tools=TOOLS,
    tool_choice="auto",
)


async def timed(provider: Any, calls: int) -> tuple[float, float]:
    """(CPU ms, wall ms) per call over `calls` calls."""
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(calls):
        await provider.chat(REQUEST, model="scripted-model")
    return (time.process_time() - cpu) * 1000 / calls, (time.perf_counter() - wall) * 1000 / calls


async def bench(base_url: str, calls: int, rounds: int) -> dict[str, list[tuple[float, float]]]:
    provider = provider_module.OpenAIProvider(base_url, "bench-key", probe=False)
    direct = provider_module.wire_body
    results: dict[str, list[tuple[float, float]]] = {"transform (create)": [], "wire body (post)": []}
    try:
        await timed(provider, 20)  # warm: connection, imports, caches
        for _ in range(rounds):
            provider_module.wire_body = lambda kwargs: None  # type: ignore[assignment,misc]
            results["transform (create)"].append(await timed(provider, calls))
            provider_module.wire_body = direct
            results["wire body (post)"].append(await timed(provider, calls))
    finally:
        provider_module.wire_body = direct
        await provider.aclose()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with model_server() as base_url:
        results = asyncio.run(bench(base_url, args.calls, args.rounds))
    print("| path | CPU ms per call (median of rounds) | rounds | wall ms per call (median) |")
    print("|---|---|---|---|")
    for name, rows in results.items():
        cpu = statistics.median(r[0] for r in rows)
        wall = statistics.median(r[1] for r in rows)
        print(f"| {name} | {cpu:.2f} | {', '.join(f'{r[0]:.2f}' for r in rows)} | {wall:.2f} |")


if __name__ == "__main__":
    main()
