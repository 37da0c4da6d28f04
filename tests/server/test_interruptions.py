"""One `Interruption` over HTTP: a run waiting for an approval and a run whose MCP server asks a
question, listed side by side by `GET /api/interruptions`, answered through the same route
(`POST /api/interruptions/{id}`), their events on one SSE channel (`approval`, each message
with the `interruptions` it concerns). Against `@modelcontextprotocol/server-everything` over
stdio, the real `openai` client against the strict scripted model server, uvicorn on 127.0.0.1."""

from __future__ import annotations

import json
from typing import Any

import httpx

from jianmu_like import Agent, create_react_node
from jianmu_like.guard import GuardEnforcer
from jianmu_like.server import create_app
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, wait_until
from tests.mcp.test_interruptions import delete_file, model, needs_approval
from tests.server.sse_live import live_server, read_events
from tests.server.test_mcp_elicitations import everything, jianmu, skip_without_everything

pytestmark = skip_without_everything


def listing(http: httpx.Client) -> list[dict[str, Any]] | None:
    response = http.get("/api/interruptions")
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["interruptions"]
    return found if sorted(i["kind"] for i in found) == ["approval", "question"] else None


def test_an_approval_and_a_question_share_the_listing_the_route_and_the_channel() -> None:
    with ScriptedOpenAIServer(model) as srv:

        def factory() -> Agent:
            provider = everything(elicitation="ask", allow=["trigger-elicitation-request"])
            root = create_react_node(
                model_client=srv.client(),
                tools=[delete_file],
                tool_providers=[provider],
                constraints=GuardEnforcer([needs_approval]),
            )
            return Agent(root)

        with live_server(create_app(factory)) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
            deleting = http.post("/api/runs", json={"input": "delete /tmp/x"}).json()["run_id"]
            asking = http.post("/api/runs", json={"input": "ask my name"}).json()["run_id"]
            listed = wait_until(lambda: listing(http), "an approval and a question")
            approval, question = sorted(listed, key=lambda item: item["kind"])
            assert (approval["run_id"], approval["payload"]["tool"]) == (deleting, "delete_file")
            assert approval["payload"]["arguments"] == {"path": "/tmp/x"}
            assert (question["run_id"], question["payload"]["server"]) == (asking, "ev")
            assert question["payload"]["requested_schema"]["required"] == ["name"]
            # Each run's own listing, and the older views, show the same waits.
            for item in (approval, question):
                one = http.get(f"/api/runs/{item['run_id']}/interruptions").json()["interruptions"]
                assert one == [item]
            assert [a["id"] for a in http.get("/api/approvals").json()["approvals"]] == [approval["id"]]
            assert [q["id"] for q in http.get("/api/elicitations").json()["elicitations"]] == [question["id"]]

            # An answer in the other kind's form, bad content, an unknown id: refused, nothing taken.
            route = "/api/interruptions/{}"
            wrong = http.post(route.format(question["id"]), json={"decision": "approve"})
            assert wrong.status_code == 422 and "is a question" in wrong.json()["error"]
            wrong = http.post(route.format(approval["id"]), json={"action": "accept"})
            assert wrong.status_code == 422 and "waiting for a decision" in wrong.json()["error"]
            bad = http.post(route.format(question["id"]), json={"action": "accept", "content": {}})
            assert bad.status_code == 422 and "name: required key is missing" in bad.json()["error"]
            both = http.post(route.format(question["id"]), json={"action": "decline", "decision": "deny"})
            assert both.status_code == 422
            unknown = http.post(route.format("nope"), json={"decision": "approve"})
            assert unknown.status_code == 404
            assert listing(http) == listed

            # The command line lists them and sends its answers to the same route.
            shown = jianmu("interruptions", "list", "--url", url, "--json")
            assert shown.returncode == 0, shown.stderr
            assert sorted(json.loads(line)["id"] for line in shown.stdout.splitlines()) == sorted(
                [approval["id"], question["id"]]
            )
            refused = jianmu("interruptions", "answer", approval["id"], "decline", "--url", url)
            assert refused.returncode == 2 and "waiting for a decision" in refused.stderr

            # The same route answers both.
            answered = http.post(
                route.format(question["id"]), json={"action": "accept", "content": {"name": "Ada"}}
            )
            assert answered.status_code == 200, answered.text
            assert answered.json()["kind"] == "question" and answered.json()["run_id"] == asking
            decided = http.post(route.format(approval["id"]), json={"decision": "approve"})
            assert decided.status_code == 200, decided.text
            assert decided.json()["kind"] == "approval" and decided.json()["run_id"] == deleting
            late = jianmu("interruptions", "answer", approval["id"], "deny", "--url", url)
            assert late.returncode == 2 and "already decided (approved)" in late.stderr

            streams = {run_id: read_events(http, run_id) for run_id in (deleting, asking)}
            assert http.get("/api/interruptions").json()["interruptions"] == []

    answers: list[dict[str, Any]] = []
    for run_id, item in ((deleting, approval), (asking, question)):
        events = streams[run_id]
        assert events[-1][2]["status"] == "success"
        human = [data["interruptions"] for _, channel, data in events if channel == "approval"]
        # a waiting call is announced as it starts to wait, then listed when the run suspends
        opened = ["pending", "pending"] if item["kind"] == "approval" else ["pending"]
        assert [(i["id"], i["kind"], i["state"]) for [i] in human] == [
            *((item["id"], item["kind"], state) for state in opened),
            (item["id"], item["kind"], "decided"),
        ]
        assert human[-2][0]["payload"] == item["payload"]
        answers.append(human[-1][0]["answer"])
    assert answers[0]["decision"] == "approve" and answers[1] == {"action": "accept"}
