"""Research as a subtree: a researcher searches (at most N tool calls, enforced in code; `think`
is free), its transcript is compressed into a short summary citing its sources, and the parent
tree's writer reads only that summary.

    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 JIANMU_MODEL=my-model \
        python demos/research_agent.py "When were the Eiffel Tower and the Statue of Liberty built?"

The `search` tool looks in a small built-in corpus (no web access needed). `--scripted` runs the
same tree against the built-in scripted server: its canned researcher tries a fourth search,
which the cap refuses, and the research goes straight to the compress step.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from jianmu_like import Agent, ConfigError, ModelClient, create_research_node, human, tool
from jianmu_like.bt import _composites as composites
from jianmu_like.nodes import LLMCallNode
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import ScriptedOpenAIServer, call, calls, reply

CORPUS = {
    "https://example.org/eiffel": "The Eiffel Tower was built from 1887 to 1889 for the World's Fair.",
    "https://example.org/liberty": "The Statue of Liberty was completed in 1886 and dedicated on October 28.",
    "https://example.org/paris": "Paris is the capital of France, on the Seine.",
}


@tool
def search(query: str) -> str:
    """Search the corpus; returns matching passages with their URLs.

    Args:
        query: Words to look for.
    """
    words = {w.lower().strip("?,.") for w in query.split() if len(w) > 3}
    hits = [
        f"{url}: {text}" for url, text in CORPUS.items() if words & set(text.lower().replace(".", "").split())
    ]
    return "\n".join(hits) or "no results"


def show(event: Event) -> None:
    data = event.data
    if event.type == "tool.call.started":
        print(f"  -> {data['tool']}({data['arguments']})")
    elif event.type == "tool.call.completed":
        print(f"  <- {data['output']}")
    elif event.type == "tool.cap.reached":
        print(
            f"  !! tool-call cap ({data['max_tool_calls']}) reached: {len(data['refused'])} call(s) refused"
        )


async def main(question: str, client: ModelClient, max_tool_calls: int) -> int:
    research = create_research_node(
        "Researcher", "research", model_client=client, tools=[search], max_tool_calls=max_tool_calls
    )
    writer = LLMCallNode(
        "Writer",
        client,
        namespace="writer",
        system_prompt="Answer in one or two sentences, keeping the citations.",
        prompt="Question: {task}\n\nResearch summary:\n{research.final_answer}",
    )
    tree = composites.Sequence("ResearchThenWrite", memory=True, children=[research, writer])
    agent = Agent(tree, output_namespace="writer")
    agent.telemetry.subscribe(show)
    result = await agent.run({"task": question, "research.messages": [human(question)]})
    if result.status != "success":
        termination = result.termination or {}
        print(f"failed ({termination.get('reason', 'unknown')}): {termination.get('error') or result.error}")
        return 1
    print(f"summary handed to the writer:\n{result.agents['research'].final_answer}\n")
    print(f"answer: {result.final_answer}")
    print(f"[{result.usage.total_tokens} tokens in {result.usage.calls} model calls]")
    return 0


def scripted_server() -> ScriptedOpenAIServer:
    summary = "The Eiffel Tower was built 1887-1889 [1]; the Statue of Liberty was completed in 1886 [2]."
    return ScriptedOpenAIServer(
        [
            calls(call("search", query="Eiffel Tower built"), call("think", thought="Now the statue.")),
            calls(call("search", query="Statue of Liberty completed"), call("search", query="Paris")),
            call("search", query="Liberty dedicated"),  # a fourth search: over the cap, research ends
            reply(
                tool_calls=[
                    call(
                        "ResearchSummary",
                        summary=summary,
                        sources=["https://example.org/eiffel", "https://example.org/liberty"],
                    )
                ]
            ),
            "The Eiffel Tower was built 1887-1889 [1], the Statue of Liberty completed in 1886 [2].",
        ]
    )


def run() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "question", nargs="?", default="When were the Eiffel Tower and the Statue of Liberty built?"
    )
    parser.add_argument("--max-tool-calls", type=int, default=3)
    parser.add_argument("--scripted", action="store_true", help="use the canned test server, not a model")
    args = parser.parse_args()
    if args.scripted:
        with scripted_server() as server:
            return asyncio.run(main(args.question, server.client(), args.max_tool_calls))
    try:
        client = ModelClient.resolve()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return asyncio.run(main(args.question, client, args.max_tool_calls))


if __name__ == "__main__":
    sys.exit(run())
