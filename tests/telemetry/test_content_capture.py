"""Input content capture (issue 24.7): with `capture_content`, each chat span carries what the
model was asked in the OpenTelemetry GenAI conventions' attributes and JSON shapes —
`gen_ai.system_instructions`, `gen_ai.input.messages`, `gen_ai.tool.definitions` — redacted;
off by default, and then nothing is built at all. Real runs over HTTP, the SDK's in-memory
exporter."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from jianmu_like import Agent, ReActConfig, create_react_node, human, tool
from jianmu_like._base.config import TelemetryConfig
from jianmu_like.telemetry import events as ev
from jianmu_like.telemetry.events import Event
from jianmu_like.telemetry.otel_setup import enable_otel
from jianmu_like.testing import ScriptedOpenAIServer, call, calls, reply

SECRET = "sk-live-abcdefghijklmnop1234"
SYSTEM = "You answer questions about cities."


@tool
def lookup(city: str, api_key: str = "") -> str:
    """Population of a city.

    Args:
        city: The city's English name.
        api_key: A key for the population service.
    """
    return {"Paris": "2.1 million"}.get(city, "unknown")


async def _run(capture: bool) -> tuple[list[dict[str, Any]], list[Event]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    script = [
        calls(call("lookup", city="Paris", api_key=SECRET), reasoning_content="ask the tool"),
        reply("Paris has 2.1 million people."),
    ]
    async with ScriptedOpenAIServer(script) as srv:
        config = ReActConfig(max_iterations=4, system_prompt=SYSTEM)
        agent = Agent(create_react_node(model_client=srv.client(), tools=[lookup], config=config))
        events: list[Event] = []
        agent.telemetry.subscribe(events.append)
        enable_otel(agent, tracer_provider=provider, config=TelemetryConfig(capture_content=capture))
        result = await agent.run({"messages": [human(f"How many people live in Paris? My key is {SECRET}")]})
    assert result.status == "success"
    chats = [dict(s.attributes or {}) for s in exporter.get_finished_spans() if s.name.startswith("chat ")]
    assert len(chats) == 2
    return chats, events


async def test_chat_spans_carry_the_input_in_the_conventions_shapes() -> None:
    chats, _ = await _run(capture=True)
    first, second = chats
    instructions = json.loads(first["gen_ai.system_instructions"])
    assert instructions[0]["type"] == "text" and instructions[0]["content"].startswith(SYSTEM)
    assert json.loads(first["gen_ai.input.messages"]) == [
        {
            "role": "user",
            "parts": [{"type": "text", "content": "How many people live in Paris? My key is ***"}],
        }
    ]
    [definition] = json.loads(first["gen_ai.tool.definitions"])
    assert definition["type"] == "function" and definition["name"] == "lookup"
    assert definition["description"].startswith("Population of a city.")
    assert set(definition["parameters"]["properties"]) == {"city", "api_key"}

    messages = json.loads(second["gen_ai.input.messages"])
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    [request] = messages[1]["parts"]
    assert request["type"] == "tool_call" and request["name"] == "lookup"
    assert request["arguments"] == {"city": "Paris", "api_key": "***"}  # a secret-named key, masked
    [response] = messages[2]["parts"]
    assert response == {"type": "tool_call_response", "id": request["id"], "response": "2.1 million"}
    for chat in chats:
        assert SECRET not in json.dumps(chat)
        assert not [k for k in chat if k.startswith("jianmu.") and "message" in k]  # no custom copies


async def test_off_by_default_nothing_is_captured_nor_built() -> None:
    chats, events = await _run(capture=False)
    content = {"gen_ai.input.messages", "gen_ai.system_instructions", "gen_ai.tool.definitions"}
    for chat in chats:
        assert not content & set(chat)
    started = [e.data for e in events if e.type == ev.MODEL_CALL_STARTED]
    assert started and all(
        not {"input_messages", "system_instructions", "tool_definitions"} & set(data) for data in started
    )


async def test_the_reasoning_is_not_part_of_the_input() -> None:
    chats, _ = await _run(capture=True)
    assert "ask the tool" not in chats[1]["gen_ai.input.messages"]  # the first reply's, never re-sent
