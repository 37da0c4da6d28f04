"""A supervisor that decides its fan-out at run time, with a critic reviewing each sub-agent.

    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 JIANMU_MODEL=my-model \
        python demos/supervisor_team.py "Which is bigger, 12 * 7 or 9 * 9, and what is their sum?"

The supervisor splits the question into sub-questions (its model decides how many, up to 4); one
ReAct sub-agent per sub-question runs in parallel in a namespace of its own (`supervisor.q1`,
...); the critic rejects a wrong answer, which is re-run with the critique; the supervisor then
answers from the results. `--scripted` plays canned replies from the built-in scripted server
(no model: it shows the flow, not intelligence — the second sub-agent's first answer is wrong on
purpose so the critic has something to reject).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from jianmu_like import (
    Agent,
    ConfigError,
    ModelClient,
    ReActConfig,
    SupervisorConfig,
    create_supervisor_node,
    human,
)
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import ScriptedOpenAIServer, call, reply
from jianmu_like.tools.builtin import calculator


def show(event: Event) -> None:
    data, where = event.data, f"[{event.namespace}]"
    if event.type == "supervisor.planned":
        print(f"{where} plan: {len(data['sub_questions'])} sub-question(s)")
        for index, question in enumerate(data["sub_questions"], 1):
            print(f"    q{index}: {question}")
    elif event.type == "tool.call.started":
        print(f"{where} -> {data['tool']}({data['arguments']})")
    elif event.type == "tool.call.completed":
        print(f"{where} <- {data['output']}")
    elif event.type == "critic.verdict":
        verdict = "accepted" if data["accept"] else f"rejected: {data['critique']}"
        print(f"{where} critic {verdict}" + (" (re-run)" if data["rerun"] else ""))
    elif event.type == "supervisor.follow_ups":
        print(f"{where} follow-ups: {data['follow_ups']}")


async def main(question: str, client: ModelClient) -> int:
    root = create_supervisor_node(
        model_client=client,
        tools=[calculator],
        supervisor=SupervisorConfig(max_agents=4, max_follow_ups=1, critic=True, max_critic_retries=1),
        worker_config=ReActConfig(max_iterations=6, max_budget_tokens=20_000),
    )
    agent = Agent(root)
    unsubscribe = agent.telemetry.subscribe(show)
    try:
        result = await agent.run({"messages": [human(question)]})
    finally:
        unsubscribe()
        await agent.aclose()
    print()
    for namespace, outcome in result.agents.items():
        answer = outcome.final_answer or "-"
        reason = (outcome.termination or {}).get("reason", outcome.status)
        print(f"  {namespace:<16} {reason:<10} {outcome.usage.total_tokens:>5} tokens  {answer}")
    if result.status != "success":
        print(f"failed: {result.error or result.termination}", file=sys.stderr)
        return 1
    print(f"answer: {result.final_answer}")
    usage = result.usage
    print(
        f"[{len(result.agents) - 1} sub-agent(s), {usage.total_tokens} tokens, {usage.calls} model call(s)]"
    )
    return 0


def scripted(body: dict[str, Any]) -> Any:
    """The canned model: supervisor, sub-agents and critic, chosen by what each request asks."""
    tools = {t["function"]["name"] for t in body.get("tools") or []}
    users = [str(m.get("content")) for m in body["messages"] if m["role"] == "user"]
    if "SupervisorPlan" in tools:
        return call("SupervisorPlan", sub_questions=["What is 12 * 7?", "What is 9 * 9?"])
    if "CriticVerdict" in tools:
        wrong = "= 18" in users[-1]
        return call(
            "CriticVerdict", accept=not wrong, critique="9 * 9 is a product, not a sum" if wrong else ""
        )
    if "SupervisorDecision" in tools:
        return call("SupervisorDecision", answer="12 * 7 = 84 is bigger than 9 * 9 = 81; their sum is 165.")
    expression = "12 * 7" if "12 * 7" in users[0] else "9 * 9"
    last = body["messages"][-1]
    if last["role"] == "tool":
        return reply(f"{expression} = {last['content']}.")
    if expression == "9 * 9" and not any("rejected" in u for u in users):
        return reply("9 * 9 = 18.")  # wrong on purpose: the critic rejects it
    return call("calculator", expression=expression)


def run() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "question", nargs="?", default="Which is bigger, 12 * 7 or 9 * 9, and what is their sum?"
    )
    parser.add_argument("--scripted", action="store_true", help="use the canned test server, not a model")
    args = parser.parse_args()
    if args.scripted:
        with ScriptedOpenAIServer(scripted) as server:
            return asyncio.run(main(args.question, server.client()))
    try:
        client = ModelClient.resolve()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return asyncio.run(main(args.question, client))


if __name__ == "__main__":
    sys.exit(run())
