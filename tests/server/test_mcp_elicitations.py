"""An MCP server's question to a person, answered over the human channel of a served agent: the
API (`/api/elicitations`, `/api/runs/{id}/elicitations[/{eid}]`), the command line
(`jianmu-like elicitations list|respond`, a real subprocess talking to the server) and the run's
event stream; and `sampling: ask`, the same channel deciding whether a server may use the
agent's model. Against `@modelcontextprotocol/server-everything` over stdio, the real `openai`
client against the strict scripted model server, uvicorn on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from jianmu_like import Agent, create_react_node
from jianmu_like.models._types import Usage
from jianmu_like.server import create_app
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, reply, wait_until
from jianmu_like.tools import MCPToolProvider
from tests.mcp.everything import everything_command, needs_everything
from tests.server.sse_live import live_server, read_events

CLI = [sys.executable, "-m", "jianmu_like"]
skip_without_everything = needs_everything
pytestmark = skip_without_everything


def everything(**options: Any) -> MCPToolProvider:
    node, *args = everything_command("stdio")
    return MCPToolProvider(name="ev", command=node, args=args, **options)


@contextmanager
def served(model: Any, **options: Any) -> Iterator[tuple[httpx.Client, ScriptedOpenAIServer, str]]:
    """An agent whose one MCP server is server-everything (`options`), served over HTTP."""
    with ScriptedOpenAIServer(model) as srv:

        def factory() -> Agent:
            return Agent(create_react_node(model_client=srv.client(), tool_providers=[everything(**options)]))

        with live_server(create_app(factory)) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
            yield http, srv, url


def jianmu(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JIANMU", "OPENAI_", "FORCE_COLOR"))}
    env.update(PYTHONIOENCODING="utf-8", NO_COLOR="1")
    return subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=PATIENCE)


def open_questions(http: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    response = http.get(f"/api/runs/{run_id}/elicitations")
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["elicitations"]
    return items


def test_a_question_is_answered_over_the_api_and_the_command_line() -> None:
    script = [call("trigger-elicitation-request"), reply("thanks")]
    with served(script, elicitation="ask", allow=["trigger-elicitation-request"]) as (http, srv, url):
        run_id = http.post("/api/runs", json={"input": "ask them"}).json()["run_id"]
        found = wait_until(lambda: open_questions(http, run_id), "the server's question")
        [question] = found
        assert question["kind"] == "elicitation" and question["run_id"] == run_id
        assert question["requested_schema"]["required"] == ["name"]
        assert http.get("/api/elicitations").json()["elicitations"] == [question]
        answer = f"/api/runs/{run_id}/elicitations/{question['id']}"

        # Content the schema refuses: 422 naming the field, and the question stays open.
        refused = http.post(answer, json={"action": "accept", "content": {"check": True}})
        assert refused.status_code == 422
        assert "name: required key is missing" in refused.json()["error"]
        # Content with a decline, an unknown action, an unknown id: refused, nothing answered.
        assert http.post(answer, json={"action": "decline", "content": {"name": "x"}}).status_code == 422
        assert http.post(answer, json={"action": "maybe"}).status_code == 422
        unknown = http.post(f"/api/runs/{run_id}/elicitations/ev-99", json={"action": "decline"})
        assert unknown.status_code == 404 and question["id"] in unknown.json()["error"]
        assert http.post("/api/runs/nope/elicitations/x", json={"action": "decline"}).status_code == 404
        assert open_questions(http, run_id) == [question]

        # The command line sees it and answers it (through the server's API).
        listed = jianmu("elicitations", "list", "--url", url, "--json")
        assert listed.returncode == 0, listed.stderr
        assert [json.loads(line)["id"] for line in listed.stdout.splitlines()] == [question["id"]]
        bad = jianmu(
            "elicitations", "respond", run_id, question["id"], "accept", "--url", url, "--content", "[1]"
        )
        assert bad.returncode == 2 and "--content must be a JSON object" in bad.stderr
        content = json.dumps({"name": "Ada Lovelace", "check": True})
        sent = jianmu(
            "elicitations", "respond", run_id, question["id"], "accept", "--url", url, "--content", content
        )
        assert sent.returncode == 0, sent.stderr
        assert f"accept sent for {question['id']}" in sent.stdout

        events = read_events(http, run_id)
        assert events[-1][2]["status"] == "success"
        human = [data for _, channel, data in events if channel == "approval"]
        assert [d["status"] for d in human] == ["elicitation", "elicitation_resolved"]
        assert human[0]["elicitation"]["id"] == question["id"] and human[1]["action"] == "accept"
        observation = next(m["content"] for m in srv.requests[-1]["messages"] if m["role"] == "tool")
        assert "- Name: Ada Lovelace" in observation
        # Answered: nothing is open; the finished run takes no answer (409).
        assert open_questions(http, run_id) == []
        late = http.post(answer, json={"action": "decline"})
        assert late.status_code == 409 and "has finished" in late.json()["error"]
    gone = jianmu("elicitations", "list", "--url", url)
    assert gone.returncode == 2 and "cannot reach the server" in gone.stderr


def repeat_the_tool(tool: str, seen: list[dict[str, Any]] | None = None, **arguments: Any) -> Any:
    """A model that calls `tool`, then answers with what it returned; a request without tools is
    a server's sampling request (kept in `seen`), answered "sampled words"."""

    def model(request: dict[str, Any]) -> Any:
        if "tools" not in request:
            if seen is not None:
                seen.append(request)
            return reply("sampled words", usage=Usage(prompt_tokens=30, completion_tokens=7))
        results = [m for m in request["messages"] if m["role"] == "tool"]
        return reply(f"tool said: {results[-1]['content']}") if results else call(tool, **arguments)

    return model


@pytest.mark.parametrize("action", ["accept", "decline"])
def test_sampling_ask_puts_each_request_to_a_person(action: str) -> None:
    seen: list[dict[str, Any]] = []
    options = {"sampling": "ask", "allow": ["trigger-sampling-request"]}
    model = repeat_the_tool("trigger-sampling-request", seen, prompt="a haiku", maxTokens=40)
    with served(model, **options) as (http, _srv, _url):
        run_id = http.post("/api/runs", json={"input": "sample"}).json()["run_id"]
        [question] = wait_until(lambda: open_questions(http, run_id), "the sampling request")
        assert question["kind"] == "sampling"
        assert question["details"]["max_tokens"] == 40 and "a haiku" in json.dumps(question["details"])
        assert seen == []  # nothing reached the model before the person's answer
        answered = http.post(f"/api/runs/{run_id}/elicitations/{question['id']}", json={"action": action})
        assert answered.status_code == 200 and answered.json()["kind"] == "sampling"
        events = read_events(http, run_id)
    answer = events[-1][2]["answer"] or ""
    if action == "accept":
        assert len(seen) == 1 and "sampled words" in answer
    else:
        assert seen == [] and "a person declined it" in answer
