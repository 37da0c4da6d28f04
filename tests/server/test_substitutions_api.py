"""Substitution rules over HTTP: set for every run of the server, checked against its tree (a
rule naming a node or a tool the tree lacks is a 422 naming it, and nothing changes), listed with
the nodes they force (what the console badges), and applied to the next run."""

from __future__ import annotations

import httpx

from jianmu_like.testing import PATIENCE
from tests.server.console_agent import console_app
from tests.server.sse_live import live_server
from tests.server.test_breakpoints_api import finished


def test_rules_are_checked_listed_and_applied_to_the_next_run() -> None:
    with live_server(console_app()) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        for bad, message in (
            ({"node": "Nowhere", "status": "SUCCESS"}, "no node 'Nowhere'"),
            ({"tool": "mul", "output": "1"}, "no tool 'mul'"),
            ({"node": "0", "status": "RUNNING"}, "status"),
            ({"tool": "add"}, "needs output"),
        ):
            answer = http.post(
                "/api/substitutions", json={"substitutions": [{"tool": "add", "output": "1"}, bad]}
            )
            assert answer.status_code == 422, answer.text
            assert answer.json()["detail"][0]["field"].startswith("substitutions[1]")
            assert message in answer.text
        assert http.get("/api/substitutions").json() == {"substitutions": [], "forced": {}}  # unchanged

        rules = [
            {"tool": "add", "arguments": {"a": 5}, "output": "500"},
            {"node": "ReActAgent.Done", "status": "failure"},
        ]
        answer = http.post("/api/substitutions", json={"substitutions": rules})
        assert answer.status_code == 200, answer.text
        assert answer.json()["forced"] == {"0.0.2": "FAILURE"}
        rules = [{"tool": "add", "arguments": {"a": 5}, "output": "500"}]
        listed = http.post("/api/substitutions", json={"substitutions": rules}).json()
        assert listed == {"substitutions": rules, "forced": {}}

        run = http.post("/api/runs", json={"input": "add 5"}).json()
        assert finished(http, run["run_id"])["answer"] == "result 500"
        run = http.post("/api/runs", json={"input": "add 6"}).json()  # arguments that do not match
        assert finished(http, run["run_id"])["answer"] == "result 7"

        # A model node's reply scripted: the run answers without asking the model.
        rules = [{"node": "ReActAgent.LLM", "reply": "scripted"}]
        assert http.post("/api/substitutions", json={"substitutions": rules}).status_code == 200
        run = http.post("/api/runs", json={"input": "add 6"}).json()
        assert finished(http, run["run_id"])["answer"] == "scripted"
