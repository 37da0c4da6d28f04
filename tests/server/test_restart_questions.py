"""A tool's question outlives its listing, not its process. A run whose MCP server asks a person
a question saves it with its thread (SQLite): a server on the same store lists it at once, with
`run_id` null, while the asking process still runs (an answer there is a 409 naming that
process: the question is a live request of it); once that process is killed (SIGKILL) the
question is listed `expired`, and an answer is a 409 saying so and what to do, over HTTP and in
Python (`Agent.pending_interruptions(thread_id=)`, `Agent.decide`); nothing is recorded as
answered. Resuming the thread goes on: the asking call's outcome is unknown (its tool is not
idempotent), the model reads so and answers, and nothing is listed any more. Against
server-everything over stdio, the real `openai` client against the strict scripted model server,
uvicorn on 127.0.0.1, a real second process."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from jianmu_like.server import create_app
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, reply, wait_until
from tests.mcp.everything import everything_command, needs_everything
from tests.server.question_asker import THREAD, build
from tests.server.sse_live import live_server

pytestmark = needs_everything
ASKER = Path(__file__).with_name("question_asker.py")


def kill_with_its_servers(process: subprocess.Popen[str]) -> None:
    """SIGKILL `process` and its children: the MCP SDK starts a stdio server in a session of its
    own, and server-everything does not end when its stdin closes, so it would outlive the test."""
    listed = Path(f"/proc/{process.pid}/task/{process.pid}/children")
    children = [int(pid) for pid in listed.read_text().split()] if listed.exists() else []
    process.kill()
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def model(body: dict[str, Any]) -> Any:
    results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    return reply(f"done: {results[-1]}") if results else call("trigger-elicitation-request")


def questions(http: httpx.Client) -> list[dict[str, Any]]:
    response = http.get("/api/interruptions")
    assert response.status_code == 200, response.text
    return [item for item in response.json()["interruptions"] if item["kind"] == "question"]


async def resumed(agent: Any) -> tuple[Any, list[Any]]:
    """The thread resumed to its end, and what it waits for then."""
    try:
        result = await agent.resume(thread_id=THREAD)
        return result, agent.pending_interruptions(thread_id=THREAD)
    finally:
        await agent.aclose()


def test_a_stored_question_is_listed_then_expires_with_its_process(tmp_path: Path) -> None:
    from jianmu_like._run.review import QuestionExpired

    node, entry, _ = everything_command("stdio")
    store = str(tmp_path / "runs.db")
    with ScriptedOpenAIServer(model) as srv:
        asker = subprocess.Popen(
            [sys.executable, str(ASKER), store, srv.base_url, node, entry],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            app = create_app(lambda: build(store, srv.base_url, node, entry))
            with live_server(app) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
                [item] = wait_until(
                    lambda: questions(http),
                    "the other process's question, listed from the store",
                    abort=lambda: None if asker.poll() is None else f"the asker ended: {asker.stderr}",
                )
                assert (item["run_id"], item["thread_id"], item["expired"]) == (None, THREAD, None)
                assert item["payload"]["server"] == "ev"
                assert item["payload"]["requested_schema"]["required"] == ["name"]
                answer = f"/api/interruptions/{item['id']}"
                elsewhere = http.post(answer, json={"action": "decline"})
                assert elsewhere.status_code == 409, elsewhere.text
                assert f"waits in process {asker.pid}" in elsewhere.json()["error"]

                kill_with_its_servers(asker)  # SIGKILL: the live request dies with its process
                asker.wait(timeout=PATIENCE)
                [gone] = questions(http)
                assert gone["id"] == item["id"] and gone["expired"] is not None
                assert gone["expired"].startswith(f"expired: the process that asked it (process {asker.pid}")
                refused = http.post(answer, json={"action": "accept", "content": {"name": "Ada"}})
                assert refused.status_code == 409, refused.text
                body = refused.json()
                assert "has expired" in body["error"] and "Resume the thread" in body["error"]
                assert (body["thread_id"], body["expired"]) == (THREAD, True)
                wrong_form = http.post(answer, json={"decision": "approve"})
                assert wrong_form.status_code == 422 and "is a question" in wrong_form.json()["error"]
                assert [q["id"] for q in questions(http)] == [item["id"]]  # nothing recorded

            agent = build(store, srv.base_url, node, entry)
            [listed] = agent.pending_interruptions(thread_id=THREAD)
            assert (listed.id, listed.kind) == (item["id"], "question") and listed.expired
            with pytest.raises(QuestionExpired, match="has expired"):
                agent.decide(listed.id, "decline")

            result, after = asyncio.run(resumed(agent))
            assert result.status == "success", result.error
            assert result.final_answer is not None and "outcome unknown" in result.final_answer
            assert after == []
        finally:
            if asker.poll() is None:
                kill_with_its_servers(asker)
            asker.wait(timeout=PATIENCE)
            if asker.stderr is not None:
                asker.stderr.close()
