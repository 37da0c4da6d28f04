"""The main job: a ReAct agent answering a question with the calculator tool.

    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 JIANMU_MODEL=my-model \
        python demos/calculator_agent.py "What is 25 * 4 + 10?"

Any OpenAI-compatible server works (OPENAI_API_KEY if it needs one). `--scripted` runs the same
agent against the built-in scripted test server instead (no model: the replies are canned, which
shows the loop and the events, not intelligence).
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from jianmu_like import Agent, ConfigError, ModelClient, ReActConfig, ReActState, create_react_node, human
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import ScriptedOpenAIServer, call, reply
from jianmu_like.tools.builtin import calculator, think


def show(event: Event) -> None:
    data = event.data
    if event.type == "text.delta":
        print(data["delta"], end="", flush=True)
    elif event.type == "tool.call.started":
        print(f"  -> {data['tool']}({data['arguments']})")
    elif event.type == "tool.call.completed":
        print(f"  <- {data['output']}")
    elif event.type == "tool.call.failed":
        print(f"  !! {data['error']}")
    elif event.type == "model.call.retry":
        print(f"  (retrying {data.get('model')}: {data.get('error')})")


async def main(question: str, client: ModelClient) -> int:
    root = create_react_node(
        "Calculator",
        model_client=client,
        tools=[calculator, think],
        config=ReActConfig(max_iterations=8, stream=True),
    )
    agent = Agent(root, state_schema=ReActState)
    result = None
    async for event in agent.stream({"messages": [human(question)]}):
        show(event)
        if event.type == "run.completed":
            result = event.data
    print()
    if result is None or result["status"] != "success":
        termination = (result or {}).get("termination") or {}
        detail = termination.get("error") or (result or {}).get("error") or ""
        print(f"failed ({termination.get('reason', 'unknown')}): {detail}", file=sys.stderr)
        return 1
    usage = result["usage"]
    iterations = (result.get("termination") or {}).get("iterations")
    print(f"answer: {result['final_answer']}")
    print(f"[{iterations} iteration(s), {usage['total_tokens']} tokens, {usage['calls']} model call(s)]")
    return 0


def run() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("question", nargs="?", default="What is 25 * 4 + 10?")
    parser.add_argument("--scripted", action="store_true", help="use the canned test server, not a model")
    args = parser.parse_args()
    if args.scripted:
        script = [call("calculator", expression="25 * 4 + 10"), reply("25 * 4 + 10 = 110.")]
        with ScriptedOpenAIServer(script) as server:
            return asyncio.run(main(args.question, server.client()))
    try:
        client = ModelClient.resolve()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return asyncio.run(main(args.question, client))


if __name__ == "__main__":
    sys.exit(run())
