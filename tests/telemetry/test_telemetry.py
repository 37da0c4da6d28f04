"""Telemetry: event shape, redaction in events and in structlog output, broken subscribers."""

from __future__ import annotations

import io
import json

import structlog

from jianmu_like import Agent, ReActConfig, create_react_node, human
from jianmu_like._base.redact import redact, redact_text
from jianmu_like.telemetry import TelemetryHub
from jianmu_like.telemetry._hub import structlog_sink
from jianmu_like.telemetry.logging import configure_logging
from jianmu_like.testing import ScriptedOpenAIServer, call, reply
from jianmu_like.tools.builtin import calculator

SECRET = "sk-live-abcdefghijklmnop123456"


def test_redact_masks_secret_keys_and_values_but_not_token_counts() -> None:
    data = {
        "api_key": SECRET,
        "headers": {"Authorization": f"Bearer {SECRET}"},
        "note": f"using {SECRET} now",
        "usage": {"total_tokens": 30, "prompt_tokens": 20},
    }
    out = redact(data)
    assert out["api_key"] == "***" and out["headers"]["Authorization"] == "***"
    assert SECRET not in out["note"]
    assert out["usage"] == {"total_tokens": 30, "prompt_tokens": 20}
    assert redact_text("Bearer abcdefghijkl") == "***"
    # a key can be data (the state's call counts are keyed by the call's arguments)
    assert redact({f"explode:{{'label': '{SECRET}'}}": 1}) == {"explode:{'label': '***'}": 1}


async def test_events_carry_node_paths_and_no_secrets() -> None:
    script = [call("calculator", expression="2*3", note=SECRET), reply(f"6 (and your key is {SECRET})")]
    with ScriptedOpenAIServer(script) as srv:
        client = srv.client()
        root = create_react_node("Calc", namespace="calc", model_client=client, tools=[calculator])
        hub = TelemetryHub()
        events = []
        hub.subscribe(events.append)
        agent = Agent(root, telemetry=hub, log_events=False)
        # A tool argument that looks like a key must not leak into events.
        result = await agent.run({"messages": [human(f"my key is {SECRET}")]})
        assert result.status == "success" and result.final_answer == f"6 (and your key is {SECRET})"
    types = {e.type for e in events}
    assert {"reply.completed", "tool.call.failed", "run.completed"} <= types
    assert all(SECRET not in json.dumps(e.model_dump(), default=str) for e in events)
    llm_events = [e for e in events if e.type == "reply.started"]
    assert llm_events and llm_events[0].node == "Calc/Calc.Loop/Calc.LLM"
    assert llm_events[0].namespace == "calc"
    assert len({e.run_id for e in events}) == 1


async def test_a_broken_subscriber_does_not_break_the_run() -> None:
    def broken(_event: object) -> None:
        raise RuntimeError("listener bug")

    with ScriptedOpenAIServer([reply("fine")]) as srv:
        hub = TelemetryHub()
        hub.subscribe(broken)
        agent = Agent(create_react_node(model_client=srv.client()), telemetry=hub, log_events=False)
        result = await agent.run({"messages": [human("hi")]})
    assert result.status == "success" and result.final_answer == "fine"


async def test_structlog_output_is_redacted() -> None:
    buffer = io.StringIO()
    configure_logging("INFO", json=True, stream=buffer)
    try:
        structlog.get_logger("test").info("calling", api_key=SECRET, url="http://x", detail=f"key {SECRET}")
        with ScriptedOpenAIServer([reply(f"the key is {SECRET}")]) as srv:
            hub = TelemetryHub()
            hub.subscribe(structlog_sink())
            agent = Agent(create_react_node(model_client=srv.client(), config=ReActConfig()), telemetry=hub)
            await agent.run({"messages": [human("leak it")]})
    finally:
        structlog.reset_defaults()
    lines = [json.loads(line) for line in buffer.getvalue().splitlines()]
    assert lines[0]["api_key"] == "***" and SECRET not in lines[0]["detail"]
    assert any(line["event"] == "reply.completed" for line in lines)
    assert SECRET not in buffer.getvalue()
