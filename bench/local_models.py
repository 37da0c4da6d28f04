"""Embedded local models on a fixed task set: success rate and seconds per answer.

    python bench/local_models.py [--models smollm2-135m gemma3-270m] [--temperatures 0 0.2]
                                 [--seeds 1 2 3] [--tool-choice auto|required] [--dev]
                                 [--json out.json] [--verbose]

Ten questions (five arithmetic for the calculator, five lookups of made-up facts the models
cannot know) go through the real ReAct agent (`create_react_node` + `Agent`) with
`LlamaCppProvider`, both tools offered every time, one shared system prompt for every model.
A task succeeds when the expected tool was called and the final answer contains the expected
value within `max_iterations`. Seconds per answer are wall-clock per question, model load
excluded. `--dev` runs the separate development questions the prompt was tuned on instead.
Needs `pip install -e '.[local]'` and `python -m jianmu_like.models.weights pull NAME`.
Run by hand only (never collected by pytest).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from jianmu_like import Agent, ModelClient, ReActConfig, ReActState, create_react_node, human, tool
from jianmu_like.models import weights
from jianmu_like.models._local_provider import LlamaCppProvider
from jianmu_like.models._text_protocol import CALCULATOR_EXAMPLE, WorkedExample
from jianmu_like.models.local_backends import BACKENDS, DEFAULT_BACKEND
from jianmu_like.testing._scripted import fast_resilience
from jianmu_like.tools.builtin import calculator

SYSTEM_PROMPT = (
    "You are a careful assistant. Use the calculator for arithmetic and the lookup tool for facts, "
    "then answer with the result in one short sentence."
)
MAX_ITERATIONS = 6

FACTS = {
    # the fixed task set
    "zandia": "The capital of Zandia is Mirelle.",
    "mount korvath": "Mount Korvath is 4312 metres high.",
    "quillon bridge": "The Quillon Bridge was built in 1887.",
    "brightwater labs": "Brightwater Labs was founded by Dana Okafor.",
    "port elsin": "Port Elsin has 48200 inhabitants.",
    # the development set and the lookup worked example
    "velora": "The capital of Velora is Ostrand.",
    "norland": "The capital of Norland is Petrova.",
    "tamsin foods": "Tamsin Foods was founded by Rui Mendes.",
}


def _normal(text: str) -> str:
    return re.sub(r"[^a-z0-9 ]", "", text.lower()).removeprefix("the ").strip()


@tool(run_inline=True)
def lookup(key: str) -> str:
    """Look up a fact about a place, a building or a company in the knowledge base.

    Args:
        key: The name to look up, e.g. "Paris" or "Acme Corp".
    """
    wanted = _normal(key)
    for name, fact in FACTS.items():
        if wanted and (name in wanted or wanted in name):
            return fact
    return f"No entry for {key!r}."


@dataclass(frozen=True)
class Task:
    question: str
    tool: str
    expected: str


TASKS = (
    Task("What is 25 * 4 + 10?", "calculator", "110"),
    Task("What is 17 * 23?", "calculator", "391"),
    Task("What is 1234 + 5678?", "calculator", "6912"),
    Task("What is 2 ** 10?", "calculator", "1024"),
    Task("What is (15 + 27) * 3?", "calculator", "126"),
    Task("What is the capital of Zandia?", "lookup", "Mirelle"),
    Task("How high is Mount Korvath?", "lookup", "4312"),
    Task("When was the Quillon Bridge built?", "lookup", "1887"),
    Task("Who founded Brightwater Labs?", "lookup", "Dana Okafor"),
    Task("How many inhabitants does Port Elsin have?", "lookup", "48200"),
)
DEV_TASKS = (
    Task("What is 9 * 8?", "calculator", "72"),
    Task("What is 300 - 45?", "calculator", "255"),
    Task("What is 7 + 6 * 2?", "calculator", "19"),
    Task("What is the capital of Velora?", "lookup", "Ostrand"),
    Task("Who founded Tamsin Foods?", "lookup", "Rui Mendes"),
)


LOOKUP_EXAMPLE = WorkedExample(
    question="What is the capital of Norland?",
    tool="lookup",
    arguments={"key": "Norland"},
    observation=FACTS["norland"],
    answer="The capital of Norland is Petrova.",
)
PROMPTS: dict[str, tuple[WorkedExample, ...] | None] = {
    "builtin": None,  # the default: the built-in calculator example only
    "per-tool": (CALCULATOR_EXAMPLE, LOOKUP_EXAMPLE),  # one worked example for each tool
}


@dataclass
class Outcome:
    question: str
    ok: bool
    tool_ok: bool
    answer_ok: bool
    seconds: float
    iterations: int
    reason: str
    calls: list[str] = field(default_factory=list)
    answer: str = ""
    tokens: int = 0


def _answer_has(answer: str, expected: str) -> bool:
    """Numbers must appear as a whole number ("72.75" does not contain 72); names as words."""
    flat = answer.lower().replace(",", "")
    if expected.isdigit():
        return any(float(n) == float(expected) for n in re.findall(r"\d+(?:\.\d+)?", flat))
    return re.search(rf"\b{re.escape(expected.lower())}\b", flat) is not None


async def run_task(client: ModelClient, task: Task, temperature: float, tool_choice: str | None) -> Outcome:
    root = create_react_node(
        "Bench",
        model_client=client,
        tools=[calculator, lookup],
        config=ReActConfig(
            system_prompt=SYSTEM_PROMPT,
            max_iterations=MAX_ITERATIONS,
            temperature=temperature,
            tool_choice=tool_choice,
        ),
    )
    agent = Agent(root, state_schema=ReActState)
    start = time.perf_counter()
    result = await agent.run(input_data={"messages": [human(task.question)]})
    seconds = time.perf_counter() - start
    calls = [
        f"{c.name}({json.dumps(c.arguments)})" for m in result.state.messages for c in (m.tool_calls or ())
    ]
    tool_ok = any(c.startswith(f"{task.tool}(") for c in calls)
    answer = result.final_answer or ""
    answer_ok = result.status == "success" and _answer_has(answer, task.expected)
    termination = result.termination or {}
    return Outcome(
        question=task.question,
        ok=tool_ok and answer_ok,
        tool_ok=tool_ok,
        answer_ok=answer_ok,
        seconds=seconds,
        iterations=int(termination.get("iterations", 0)),
        reason=str(termination.get("reason", result.status)),
        calls=calls,
        answer=answer,
        tokens=result.usage.total_tokens,
    )


@dataclass(frozen=True)
class Setting:
    model: str
    prompt: str = "builtin"
    temperature: float = 0.0
    seed: int = 0
    tool_choice: str | None = None
    backend: str = DEFAULT_BACKEND


async def run_model(setting: Setting, tasks: tuple[Task, ...], verbose: bool = False) -> dict[str, Any]:
    spec = weights.spec_of(setting.model)
    path = weights.local_model_path(setting.model)
    if path is None:
        raise SystemExit(
            f"{setting.model} is not pulled: python -m jianmu_like.models.weights pull {spec.name}"
        )
    provider = LlamaCppProvider(
        path,
        seed=setting.seed,
        chat_format=spec.chat_format,
        system_role=spec.system_role,
        examples=PROMPTS[setting.prompt],
        backend=setting.backend,
    )
    client = ModelClient(provider, model=f"local/{spec.name}", resilience=fast_resilience(max_retries=0))
    start = time.perf_counter()
    await provider.load()
    load_seconds = time.perf_counter() - start
    outcomes = []
    for task in tasks:
        outcome = await run_task(client, task, setting.temperature, setting.tool_choice)
        outcomes.append(outcome)
        if verbose:
            mark = "ok  " if outcome.ok else "FAIL"
            print(f"  {mark} {outcome.seconds:5.1f}s {task.question!r} {outcome.calls} -> {outcome.answer!r}")
    await client.aclose()
    seconds = [o.seconds for o in outcomes]
    return {
        **asdict(setting),
        "tool_choice": setting.tool_choice or "auto",
        "load_seconds": round(load_seconds, 2),
        "success": sum(o.ok for o in outcomes),
        "tool_called": sum(o.tool_ok for o in outcomes),
        "answer_right": sum(o.answer_ok for o in outcomes),
        "tasks": len(outcomes),
        "seconds_per_answer": round(statistics.mean(seconds), 2),
        "seconds_max": round(max(seconds), 2),
        "outcomes": [asdict(o) for o in outcomes],
    }


def _row(r: dict[str, Any]) -> str:
    n = r["tasks"]
    return (
        f"| {r['model']} | {r['prompt']} | {r['tool_choice']} | {r['temperature']:g} | {r['seed']} "
        f"| **{r['success']}/{n}** | {r['tool_called']}/{n} | {r['answer_right']}/{n} "
        f"| {r['seconds_per_answer']} | {r['seconds_max']} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", nargs="+", default=list(weights.MODELS))
    parser.add_argument("--prompts", nargs="+", choices=list(PROMPTS), default=list(PROMPTS))
    parser.add_argument("--tool-choices", nargs="+", choices=["auto", "required"], default=["auto"])
    parser.add_argument("--temperatures", nargs="+", type=float, default=[0.0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0], help="used when temperature > 0")
    parser.add_argument("--dev", action="store_true", help="run the development questions instead")
    parser.add_argument("--json", help="write every outcome to this file")
    parser.add_argument("--backend", choices=BACKENDS, default=DEFAULT_BACKEND)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    tasks = DEV_TASKS if args.dev else TASKS
    rows = []
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, python {platform.python_version()}"
    print(f"{machine}, backend {args.backend}, n_threads=1")
    print("| model | examples | first call | temp | seed | success | tool called | answer right ", end="")
    print("| s/answer | max s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for model in args.models:
        for prompt in args.prompts:
            for choice in args.tool_choices:
                for temperature in args.temperatures:
                    for seed in args.seeds if temperature > 0 else [0]:
                        setting = Setting(
                            model,
                            prompt,
                            temperature,
                            seed,
                            None if choice == "auto" else choice,
                            args.backend,
                        )
                        row = asyncio.run(run_model(setting, tasks, args.verbose))
                        rows.append(row)
                        print(_row(row), flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
