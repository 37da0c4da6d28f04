"""LangGraph's prebuilt ReAct agent on the overhead benchmark's scenarios.

    python bench/langgraph_compare.py [--quick] [--json out.json]

is `bench/overhead.py --require-langgraph`: the same scenarios for the hand-written floor,
jianmu_like and LangGraph in one run, with the jianmu_like / LangGraph ratios. `overhead.py`
imports `LangGraphImpl` from here when LangGraph is installed (`pip install -e '.[bench]'`).

The agent is `langgraph.prebuilt.create_react_agent` (deprecated since LangGraph 1.0 in favour
of `langchain.agents.create_agent`, which lives in the separate `langchain` package; the
prebuilt one is what `langgraph` itself still ships, so that is what is measured). The model is
`ScriptedChatModel`, a `BaseChatModel` that answers like the jianmu_like scripted client: k-1
`add` tool calls, then a final text answer, after an optional `asyncio.sleep`.
"""

from __future__ import annotations

import asyncio
import sys
import warnings
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from importlib import metadata
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.tools import tool as lc_tool
from langchain_core.utils.function_calling import convert_to_openai_tool

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # LangGraphDeprecatedSinceV10 on import in some versions
    from langgraph.prebuilt import create_react_agent

PROMPT = "Add the numbers, one call at a time."
FINAL_ANSWER = "done"


class ScriptedChatModel(BaseChatModel):
    """Answers round r (the number of earlier AI turns) with `add(a=r, b=1)` until the last of
    `iterations` calls, which answers FINAL_ANSWER. Stateless, so one instance (and one compiled
    graph) serves any number of concurrent runs."""

    iterations: int = 1
    latency: float = 0.0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _reply(self, messages: list[BaseMessage]) -> ChatResult:
        rounds = (len(messages) - 1) // 2  # [human, (ai, tool) * rounds]
        if rounds < self.iterations - 1:
            message = AIMessage(
                content="",
                tool_calls=[
                    {
                        "name": "add",
                        "args": {"a": rounds, "b": 1},
                        "id": f"call_{rounds}",
                        "type": "tool_call",
                    }
                ],
            )
        else:
            message = AIMessage(content=FINAL_ANSWER)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._reply(messages)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.latency:
            await asyncio.sleep(self.latency)
        return self._reply(messages)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        """What a real chat model does: bind the OpenAI tool schemas as call kwargs."""
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)


def _verify(check: Callable[..., None], iterations: int, result: Any) -> None:
    messages = result["messages"]
    check("langgraph", iterations, len(messages), messages[-2].content, messages[-1].content)


class LangGraphImpl:
    """One compiled graph per (iterations, latency), shared by all runs; state per invocation.

    `prepared` and `check` are overhead.py's `Prepared` and `check_transcript`; `add` is the
    benchmark's async tool function, made a LangChain tool here once with langchain's `@tool`
    (as jianmu_like's `@tool` does once on its side).
    """

    name = "langgraph"

    def __init__(
        self, prepared: Callable[..., Any], check: Callable[..., None], add: Callable[..., Awaitable[int]]
    ) -> None:
        self.version = metadata.version("langgraph")
        self.prepared = prepared
        self.check = check
        self.tool: BaseTool = lc_tool(add)
        self._graphs: dict[tuple[int, float], Any] = {}
        self._idle_model = ScriptedChatModel(iterations=10)

    def _graph(self, iterations: int, latency: float) -> Any:
        key = (iterations, latency)
        graph = self._graphs.get(key)
        if graph is None:
            graph = self._graphs[key] = self._create(
                ScriptedChatModel(iterations=iterations, latency=latency)
            )
        return graph

    def _create(self, model: ScriptedChatModel) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # create_react_agent is deprecated since LangGraph 1.0
            return create_react_agent(model, [self.tool])

    def build(self, iterations: int, latency: float) -> Any:
        graph = self._graph(iterations, latency)
        # Each iteration is two supersteps (agent, tools); leave room for the default limit.
        config = {"recursion_limit": 2 * iterations + 10}
        run = partial(graph.ainvoke, {"messages": [HumanMessage(PROMPT)]}, config=config)
        return self.prepared(run, partial(_verify, self.check, iterations))

    def build_idle(self) -> object:
        return self._create(self._idle_model)


if __name__ == "__main__":
    import overhead

    sys.exit(overhead.main(["--require-langgraph", *sys.argv[1:]]))
