"""Plan and execute: a planner writes numbered steps, each step runs as its own ReAct agent (own
namespace, tools and model), a failed step makes the planner re-plan once, a writer answers.

    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 JIANMU_MODEL=my-model \
        python demos/plan_execute_agent.py "How many seconds are there in a leap year?"

`--strong MODEL` lets the planner send hard steps to another model (the per-step model
override). `--scripted` runs against the built-in scripted server: its canned planner sends step
2 to the "strong" model, which is down (HTTP 400), so the run shows one re-plan.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from jianmu_like import Agent, ConfigError, ModelClient, ReActConfig, create_plan_execute_node, human
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import Script, ScriptedOpenAIServer, call, reply
from jianmu_like.tools.builtin import calculator, think


def show(event: Event) -> None:
    data = event.data
    if event.type == "plan.created":
        print("re-plan:" if data["replan"] else "plan:")
        for step in data["steps"]:
            model = f"  [model: {step['model']}]" if step.get("model") else ""
            print(f"  {step['number']}. {step['task']}{model}")
    elif event.type == "plan.step.started":
        print(f"step {data['step']} ({data.get('model') or 'default model'}): {data['task']}")
    elif event.type == "plan.step.completed":
        outcome = data["answer"] if data["status"] == "success" else f"FAILED: {data['error']}"
        print(f"  step {data['number']} -> {outcome}")
    elif event.type == "tool.call.started":
        print(f"  -> {data['tool']}({data['arguments']})")
    elif event.type == "tool.call.completed":
        print(f"  <- {data['output']}")


async def main(question: str, client: ModelClient, strong: str | None) -> int:
    root = create_plan_execute_node(
        "Solve",
        model_client=client,
        tools=[calculator, think],
        models={"strong": strong} if strong else None,
        config=ReActConfig(max_iterations=6),
    )
    agent = Agent(root)
    agent.telemetry.subscribe(show)
    result = await agent.run({"messages": [human(question)]})
    if result.status != "success":
        termination = result.termination or {}
        print(f"failed ({termination.get('reason', 'unknown')}): {termination.get('error') or result.error}")
        return 1
    print(f"answer: {result.final_answer}")
    for namespace, outcome in result.agents.items():
        print(f"  {namespace}: {outcome.status}, {outcome.usage.total_tokens} tokens")
    print(f"[{result.usage.total_tokens} tokens in {result.usage.calls} model calls]")
    return 0


def scripted_server() -> ScriptedOpenAIServer:
    plan = [
        {"task": "Count the days of a leap year", "tools": ["think"]},
        {"task": "Multiply the days by 86400 seconds", "tools": ["calculator"], "model": "strong"},
    ]
    replan = [{"task": "Multiply 366 days by 86400 seconds", "tools": ["calculator"]}]
    script = Script(
        [
            reply(tool_calls=[call("Plan", steps=plan)]),
            "A leap year has 366 days.",
            reply(tool_calls=[call("Plan", steps=replan)]),
            call("calculator", expression="366 * 86400"),
            "366 * 86400 = 31622400 seconds.",
            "A leap year has 31,622,400 seconds (366 days of 86,400 seconds).",
        ],
        fail_models={"strong-model": 400},
    )
    return ScriptedOpenAIServer(script)


def run() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("question", nargs="?", default="How many seconds are there in a leap year?")
    parser.add_argument("--strong", help="model for the steps the planner marks as hard")
    parser.add_argument("--scripted", action="store_true", help="use the canned test server, not a model")
    args = parser.parse_args()
    if args.scripted:
        with scripted_server() as server:
            return asyncio.run(main(args.question, server.client(), "strong-model"))
    try:
        client = ModelClient.resolve()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return asyncio.run(main(args.question, client, args.strong))


if __name__ == "__main__":
    sys.exit(run())
