"""The served agent as the model of other frameworks, over real HTTP: openai-agents with its own
function tools and output type, LangChain's `ChatOpenAI` (`bind_tools`,
`with_structured_output`, streaming) and pydantic-ai's OpenAI model (tools, `output_type`).
Each asserts what a user of that framework expects: its own tools run (on its side, with the
arguments the agent's model chose), its typed output comes back typed.

The agent's own model is the scripted OpenAI-compatible server: it calls the agent's own `add`
and the framework's `lookup_city` in one batch, then answers with what it read: as JSON when the
system prompt asks for it (response_format), or through the framework's output tool."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import agents  # openai-agents (the dev extra, like every client here)
import langchain_openai
import pydantic_ai
import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool as lc_tool
from openai import AsyncOpenAI
from pydantic import BaseModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from jianmu_like import AgentTemplate, ReActConfig, create_react_node, tool
from jianmu_like.server import create_app
from jianmu_like.testing import PATIENCE, call, calls, reply, scripted_client
from tests.server.sse_live import live_server

TOKEN = "s3cret-token-for-tests"
seen: list[dict[str, Any]] = []
ran: list[str] = []
"""The framework-side tool calls, as they ran."""


class CityReport(BaseModel):
    city: str
    population: int


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def responder(body: dict[str, Any]) -> Any:
    seen.append(body)
    messages = body["messages"]
    last = messages[-1]
    offered = {t["function"]["name"] for t in body.get("tools") or ()}
    if last["role"] != "tool":
        if "lookup_city" in offered:
            return calls(call("add", a=1, b=2), call("lookup_city", name="Paris"))
        return reply("plain answer")
    found = next(m["content"] for m in reversed(messages) if m["role"] == "tool" and m["content"] != "3")
    population = int(json.loads(found)["population"]) if found.startswith("{") else int(found.split()[-1])
    report = {"city": "Paris", "population": population}
    output_tools = offered - {"add", "lookup_city"}
    if output_tools:  # pydantic-ai's output tool (`final_result`)
        return call(sorted(output_tools)[0], **report)
    if "JSON schema" in str(messages[0].get("content")):
        return reply(json.dumps(report))
    return reply(f"Paris has {population} people")


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    root = create_react_node(
        model_client=scripted_client(responder), tools=[add], config=ReActConfig(max_iterations=6)
    )
    template = AgentTemplate.from_prototype(root, log_events=False)
    with live_server(create_app(template.conversation, token=TOKEN, model_name="helper")) as url:
        yield f"{url}/v1"


def lookup_city(name: str) -> str:
    """Look a city up: its population."""
    ran.append(name)
    return f"population of {name}: 2100000"


def test_openai_agents_function_tool_and_output_type(base: str) -> None:
    agents.set_tracing_disabled(True)

    async def main() -> Any:
        async with AsyncOpenAI(base_url=base, api_key=TOKEN, timeout=PATIENCE) as api:
            model = agents.OpenAIChatCompletionsModel(model="helper", openai_client=api)
            agent = agents.Agent(
                name="asker",
                instructions="Answer about cities.",
                tools=[agents.function_tool(lookup_city)],
                output_type=CityReport,
                model=model,
            )
            return await agents.Runner.run(agent, "How many people live in Paris?")

    ran.clear()
    result = asyncio.run(main())
    assert ran == ["Paris"]
    assert result.final_output == CityReport(city="Paris", population=2100000)


def test_langchain_bind_tools_structured_output_and_streaming(base: str) -> None:
    chat = langchain_openai.ChatOpenAI(model="helper", base_url=base, api_key=TOKEN, timeout=PATIENCE)
    city_tool = lc_tool(lookup_city)
    bound = chat.bind_tools([city_tool])
    question = HumanMessage("How many people live in Paris?")
    asked = bound.invoke([question])
    assert [(c["name"], c["args"]) for c in asked.tool_calls] == [("lookup_city", {"name": "Paris"})]
    ran.clear()
    answers = [ToolMessage(city_tool.invoke(c["args"]), tool_call_id=c["id"]) for c in asked.tool_calls]
    final = bound.invoke([question, asked, *answers])
    assert ran == ["Paris"] and final.content == "Paris has 2100000 people"

    # Streaming: the tool call arrives as tool-call chunks, the answer as text chunks.
    streamed: Any = None
    for piece in bound.stream([question]):
        streamed = piece if streamed is None else streamed + piece
    assert streamed is not None
    assert [(c["name"], c["args"]) for c in streamed.tool_calls] == [("lookup_city", {"name": "Paris"})]
    answers = [ToolMessage("population of Paris: 7", tool_call_id=c["id"]) for c in streamed.tool_calls]
    text = "".join(str(p.content) for p in bound.stream([question, streamed, *answers]))
    assert text == "Paris has 7 people"

    # A typed answer after the tools: the raw message carries the tool calls, then the value.
    structured = chat.with_structured_output(CityReport, tools=[city_tool], include_raw=True, strict=True)
    first = structured.invoke([question])
    assert first["parsed"] is None and first["raw"].tool_calls
    answers = [ToolMessage("population of Paris: 9", tool_call_id=c["id"]) for c in first["raw"].tool_calls]
    report = structured.invoke([question, first["raw"], *answers])
    assert report["parsed"] == CityReport(city="Paris", population=9)


def test_pydantic_ai_tools_and_output_type(base: str) -> None:
    model = OpenAIChatModel("helper", provider=OpenAIProvider(base_url=base, api_key=TOKEN))
    agent = pydantic_ai.Agent(model, output_type=CityReport, tools=[lookup_city])
    ran.clear()
    result = agent.run_sync("How many people live in Paris?")
    assert ran == ["Paris"]
    assert result.output == CityReport(city="Paris", population=2100000)

    native = pydantic_ai.Agent(model, output_type=pydantic_ai.NativeOutput(CityReport), tools=[lookup_city])
    assert native.run_sync("How many people live in Paris?").output == CityReport(
        city="Paris", population=2100000
    )


def test_openai_agents_and_pydantic_ai_stream(base: str) -> None:
    """Their streaming runs go through the streamed endpoint: tool-call deltas, then the answer."""
    agents.set_tracing_disabled(True)

    async def main() -> tuple[Any, Any]:
        async with AsyncOpenAI(base_url=base, api_key=TOKEN, timeout=PATIENCE) as api:
            model = agents.OpenAIChatCompletionsModel(model="helper", openai_client=api)
            agent = agents.Agent(
                name="asker", tools=[agents.function_tool(lookup_city)], output_type=CityReport, model=model
            )
            streamed = agents.Runner.run_streamed(agent, "How many people live in Paris?")
            async for _ in streamed.stream_events():
                pass
        chat = OpenAIChatModel("helper", provider=OpenAIProvider(base_url=base, api_key=TOKEN))
        typed = pydantic_ai.Agent(chat, output_type=pydantic_ai.NativeOutput(CityReport), tools=[lookup_city])
        async with typed.run_stream("How many people live in Paris?") as run:
            output = await run.get_output()
        return streamed.final_output, output

    ran.clear()
    from_agents, from_pydantic_ai = asyncio.run(main())
    assert ran == ["Paris", "Paris"]
    assert from_agents == from_pydantic_ai == CityReport(city="Paris", population=2100000)


def test_openai_agents_default_responses_model_whole_and_streamed(base: str) -> None:
    """openai-agents' default model speaks the Responses API (`/v1/responses`): its function tool
    runs on its side, its typed output comes back typed, whole and streamed."""
    agents.set_tracing_disabled(True)

    async def main() -> tuple[Any, Any]:
        async with AsyncOpenAI(base_url=base, api_key=TOKEN, timeout=PATIENCE) as api:
            model = agents.OpenAIResponsesModel(model="helper", openai_client=api)
            agent = agents.Agent(
                name="asker",
                instructions="Answer about cities.",
                tools=[agents.function_tool(lookup_city)],
                output_type=CityReport,
                model=model,
            )
            whole = await agents.Runner.run(agent, "How many people live in Paris?")
            streamed = agents.Runner.run_streamed(agent, "How many people live in Paris?")
            async for _ in streamed.stream_events():
                pass
            return whole.final_output, streamed.final_output

    ran.clear()
    whole, streamed = asyncio.run(main())
    assert ran == ["Paris", "Paris"]
    assert whole == streamed == CityReport(city="Paris", population=2100000)
