"""A model stream cut off mid-answer and retried, seen through the server's SSE `answer`
channel: over real HTTP end to end (the scripted OpenAI server drops the connection
mid-body, the real `openai` client retries, uvicorn serves the run's events)."""

from __future__ import annotations

import httpx

from jianmu_like import AgentTemplate, ReActConfig, create_react_node
from jianmu_like.server import create_app
from jianmu_like.testing import ScriptedOpenAIServer, fault_reply
from tests.server.sse_live import live_server, read_events

ANSWER = "The capital of France is Paris."


def test_a_retried_stream_restarts_the_answer_channel() -> None:
    script = [fault_reply("dropped_stream", "The capital of"), ANSWER]
    with ScriptedOpenAIServer(script) as srv:
        root = create_react_node(model_client=srv.client(), tools=[], config=ReActConfig(stream=True))
        template = AgentTemplate.from_prototype(root, log_events=False)
        with (
            live_server(create_app(template.conversation)) as url,
            httpx.Client(base_url=url, timeout=30) as http,
        ):
            response = http.post("/api/runs", json={"input": "Capital of France?"})
            assert response.status_code == 201, response.text
            events = read_events(http, response.json()["run_id"])
        assert len(srv.requests) == 2  # the cut attempt, then the retry
    answer = [(d["status"], d["content"]) for _, channel, d in events if channel == "answer"]
    done = events[-1][2]
    assert done["status"] == "success" and done["answer"] == ANSWER
    assert answer[-1] == ("done", ANSWER)
    # the cut attempt's words were streamed live, then withdrawn before the retry's
    statuses = [status for status, _ in answer]
    reset = statuses.index("reset")
    assert "".join(c for s, c in answer[:reset] if s == "delta") == "The capital of"
    assert "".join(c for s, c in answer[reset:] if s == "delta") == ANSWER
