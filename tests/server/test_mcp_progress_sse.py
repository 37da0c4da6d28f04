"""A long MCP tool call seen from a browser: its progress reports and its server's log lines
reach the run's SSE stream as `step` notes of the running call (`iteration` `progress` / `log`),
over real HTTP from the project's SDK test server over stdio."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from jianmu_like import Agent, ReActConfig, create_react_node
from jianmu_like.server import create_app
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, reply
from jianmu_like.tools import MCPToolProvider
from tests.mcp.mcp_helpers import server_config
from tests.server.sse_live import live_server, read_events

ANSWER = "It chatted twice, as asked."


@contextmanager
def served_chatty() -> Iterator[tuple[httpx.Client, str]]:
    """An agent whose model calls the test server's `chatty` tool (two progress reports, two log
    lines), then answers; served over HTTP."""
    with ScriptedOpenAIServer([call("chatty", count=2), reply(ANSWER)]) as srv:

        def factory() -> Agent:
            provider = MCPToolProvider(server_config(call_timeout=PATIENCE))
            config = ReActConfig(tool_selection=False)
            return Agent(
                create_react_node(model_client=srv.client(), tool_providers=[provider], config=config)
            )

        with live_server(create_app(factory)) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
            yield http, url


def test_progress_and_server_logs_are_notes_of_the_running_call() -> None:
    with served_chatty() as (http, _url):
        run_id = http.post("/api/runs", json={"input": "chat twice"}).json()["run_id"]
        events = read_events(http, run_id)
    steps = [d for _, channel, d in events if channel == "step" and d.get("type") == "iteration"]
    [started] = [d for d in steps if d["status"] == "start"]
    notes = [d for d in steps if d["status"] in ("progress", "log")]
    assert {d["call_id"] for d in notes} == {started["call_id"]}
    assert {d["tool_name"] for d in notes} == {"chatty"}
    progress = [(d["progress"], d["total"], d["message"]) for d in notes if d["status"] == "progress"]
    assert progress == [(1, 2, "step 1"), (2, 2, "step 2")]
    logs = [(d["server"], d["level"], d["data"]) for d in notes if d["status"] == "log"]
    assert logs == [("test", "info", "working on step 1"), ("test", "info", "working on step 2")]
    # Each note comes between the call's start and its end.
    order = [d["status"] for d in steps]
    assert order[0] == "start" and order[-1] == "done" and len(order) == 2 + len(notes)
    assert events[-1][1] == "done" and events[-1][2]["answer"] == ANSWER
