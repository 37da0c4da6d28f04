"""The model's reasoning on the SSE stream (docs/guides/server.md#reasoning), over real HTTP end
to end: the scripted OpenAI server streams reasoning deltas to the real `openai` client, uvicorn
serves the run's events; and the mapping's choice of `reasoning` for the `thinking` step."""

from __future__ import annotations

from typing import Any

import httpx

from jianmu_like import AgentTemplate, ReActConfig, create_react_node
from jianmu_like.server import CHANNELS, ChannelMapper, create_app
from jianmu_like.telemetry import events as ev
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, calls, reply
from jianmu_like.tools.builtin import calculator
from tests.server.sse_live import live_server, read_events

THINK_1 = "Six times seven: I should use the calculator."
THINK_2 = "The tool said 42."


def test_reasoning_streams_on_its_channel_and_the_thinking_step_carries_it_whole() -> None:
    script = [
        calls(call("calculator", expression="6 * 7"), reasoning_content=THINK_1),
        reply("It is 42.", reasoning_content=THINK_2),
    ]
    with ScriptedOpenAIServer(script) as srv:
        config = ReActConfig(stream=True, max_iterations=4)
        root = create_react_node(model_client=srv.client(), tools=[calculator], config=config)
        template = AgentTemplate.from_prototype(root, log_events=False)
        with (
            live_server(create_app(template.conversation)) as url,
            httpx.Client(base_url=url, timeout=PATIENCE) as http,
        ):
            run_id = http.post("/api/runs", json={"input": "What is 6 * 7?"}).json()["run_id"]
            events = read_events(http, run_id)
    assert "reasoning" in CHANNELS
    streamed: dict[int, str] = {}
    for _, channel, data in events:
        if channel == "reasoning":
            assert data["status"] == "delta" and set(data) == {"status", "iteration", "content"}
            streamed[data["iteration"]] = streamed.get(data["iteration"], "") + data["content"]
    assert streamed == {1: THINK_1, 2: THINK_2}
    done = [d for _, c, d in events if c == "step" and d["type"] == "thinking" and d["status"] == "done"]
    assert [(d["reasoning"], d["reasoning_content"]) for d in done] == [
        (THINK_1, THINK_1),
        (THINK_2, THINK_2),
    ]
    # each iteration's reasoning deltas come before its thinking step is done
    order = [(c, d.get("iteration"), d.get("status")) for _, c, d in events if c in ("reasoning", "step")]
    last_delta = max(i for i, (c, it, _) in enumerate(order) if c == "reasoning" and it == 1)
    assert order.index(("step", 1, "done")) > last_delta
    answer = [d for _, c, d in events if c == "answer" and d["status"] == "done"]
    assert answer[0]["content"] == "It is 42."  # the reasoning never reaches the answer channel


def _thinking_done(data: dict[str, Any]) -> dict[str, Any]:
    mapper = ChannelMapper()
    mapper.map(Event(type=ev.REPLY_STARTED, data={"round": 1}))
    full = {"round": 1, "tool_calls": [] if data["final"] else ["add"], "usage": {}, **data}
    [step, *_] = mapper.map(Event(type=ev.REPLY_COMPLETED, data=full))
    return step[1]


def test_the_thinking_reasoning_is_fim_ones_thought_then_the_models_reasoning() -> None:
    # text beside the tool calls: that is FIM One's `reasoning`; the model's own stays apart
    both = _thinking_done({"final": False, "content": "Let me check.", "reasoning": "deep thought"})
    assert both["reasoning"] == "Let me check." and both["reasoning_content"] == "deep thought"
    # no text beside the calls: the model's reasoning
    calls_only = _thinking_done({"final": False, "content": None, "reasoning": "deep thought"})
    assert calls_only["reasoning"] == "deep thought"
    # a final reply: its content is the answer, never the reasoning
    final = _thinking_done({"final": True, "content": "42", "reasoning": "deep thought"})
    assert final["reasoning"] == "deep thought" and final["reasoning_content"] == "deep thought"
    # nothing at all: null, as before
    plain = _thinking_done({"final": True, "content": "42"})
    assert plain["reasoning"] is None and plain["reasoning_content"] is None
