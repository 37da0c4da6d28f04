"""`/openapi.json` is generated from the route table: every route of the app is in it, and every
JSON answer of every route (successes and refusals alike) validates against the schema the
document declares for it — checked on a live server over real HTTP, route by route."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator
from starlette.routing import Route

from jianmu_like.server._console import CONTENT_SECURITY_POLICY
from jianmu_like.testing import PATIENCE, call, reply, wait_until
from tests.server.console_agent import console_app, gate
from tests.server.sse_live import live_server, sse_events
from tests.server.test_mcp_elicitations import open_questions, skip_without_everything
from tests.server.test_mcp_elicitations import served as served_everything


class Checker:
    """Sends requests and validates each JSON answer against the document's schema for it."""

    def __init__(self, http: httpx.Client, document: dict[str, Any]) -> None:
        self.http = http
        self.document = document
        self.checked: set[tuple[str, str, int]] = set()

    def schema(self, template: str, method: str, status: int) -> dict[str, Any]:
        responses = self.document["paths"][template][method.lower()]["responses"]
        assert str(status) in responses, f"{method} {template} answered {status}, undocumented"
        return dict(responses[str(status)]["content"]["application/json"]["schema"])

    def __call__(
        self,
        method: str,
        template: str,
        expect: int,
        *,
        json: Any = None,
        query: dict[str, str] | None = None,
        **params: str,
    ) -> dict[str, Any]:
        path = template.format(**params)
        answer = self.http.request(method, path, json=json, params=query)
        assert answer.status_code == expect, (method, path, answer.status_code, answer.text)
        assert answer.headers["content-type"].startswith("application/json"), answer.headers
        body = answer.json()
        validator = Draft202012Validator({**self.schema(template, method, expect), **self.document})
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(body)]
        assert errors == [], (method, path, errors, body)
        self.checked.add((method, template, expect))
        return dict(body)

    def done(self, run_id: str) -> dict[str, Any]:
        with self.http.stream("GET", f"/api/runs/{run_id}/events") as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            events = list(sse_events(response.iter_lines()))
        return next(data for _, channel, data in events if channel == "done")


@pytest.fixture
def served(tmp_path: Path) -> Any:
    app = console_app(checkpoint=str(tmp_path / "runs.db"))
    with live_server(app) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        document = http.get("/openapi.json").json()
        yield app, http, Checker(http, document)


def test_every_route_of_the_app_is_in_the_document(served: Any) -> None:
    app, _http, check = served
    document = check.document
    assert document["openapi"] == "3.1.0" and document["info"]["title"] == "jianmu-like"
    routes = [route for route in app.routes if isinstance(route, Route)]
    assert len(routes) >= 20
    for route in routes:
        for method in sorted((route.methods or set()) - {"HEAD"}):
            operation = document["paths"][route.path][method.lower()]
            assert operation["summary"] and operation["responses"], (method, route.path)
            for name in route.param_convertors:
                assert {
                    "name": name,
                    "in": "path",
                    "required": True,
                    "schema": {"type": "string"},
                } in operation["parameters"]
    documented = {(m.upper(), p) for p, ops in document["paths"].items() for m in ops}
    served_routes = {(m, r.path) for r in routes for m in (r.methods or set()) - {"HEAD"}}
    assert documented == served_routes
    # every request and response is a model of components/schemas, and every $ref resolves
    Draft202012Validator.check_schema({"$defs": document["components"]["schemas"]})
    for ops in document["paths"].values():
        for operation in ops.values():
            body = operation.get("requestBody")
            if body is not None:
                ref = body["content"]["application/json"]["schema"]["$ref"]
                assert ref.split("/")[-1] in document["components"]["schemas"]
    run_request = document["components"]["schemas"]["RunRequest"]
    assert set(run_request["properties"]) == {"input", "thread_id", "from_checkpoint"}
    assert run_request["additionalProperties"] is False


def test_every_json_answer_validates_against_its_schema(served: Any) -> None:
    _app, _http, check = served
    check("GET", "/openapi.json", 200)
    check("GET", "/healthz", 200)
    tree = check("GET", "/api/agent", 200)
    assert tree["checkpoints"] is True
    run = check("POST", "/api/runs", 201, json={"input": "add 41", "thread_id": "t1"})
    assert check.done(run["run_id"])["answer"] == "result 42"
    check("GET", "/api/runs", 200)
    check("GET", "/api/runs/{run_id}", 200, run_id=run["run_id"])
    check("GET", "/api/runs/{run_id}/messages", 200, run_id=run["run_id"])
    check("GET", "/api/threads", 200)
    check("GET", "/api/threads/{thread_id}", 200, thread_id="t1")
    versions = check("GET", "/api/threads/{thread_id}/history", 200, thread_id="t1")["versions"]
    first = min(v["seq"] for v in versions)
    check("GET", "/api/threads/{thread_id}/checkpoints/{seq}", 200, thread_id="t1", seq=str(first))
    check("GET", "/api/threads/{thread_id}/recordings", 200, thread_id="t1")  # [] unless kept
    fork = check(
        "POST", "/api/runs", 201, json={"input": "add 1", "thread_id": "t1", "from_checkpoint": first}
    )
    check.done(fork["run_id"])

    waiting = check("POST", "/api/runs", 201, json={"input": "delete notes.txt", "thread_id": "t2"})
    approvals = _wait_for_approvals(check)
    check("POST", "/api/runs/{run_id}/cancel", 409, json={}, run_id=waiting["run_id"])
    check(
        "POST",
        "/api/approvals/{approval_id}",
        200,
        json={"decision": "approve"},
        approval_id=approvals[0]["id"],
    )
    check.done(waiting["run_id"])
    check(
        "POST", "/api/approvals/{approval_id}", 409, json={"decision": "deny"}, approval_id=approvals[0]["id"]
    )
    again = check("POST", "/api/runs", 201, json={"input": "delete notes.txt", "thread_id": "t4"})
    [waits] = _wait_for_approvals(check)
    listed = check("GET", "/api/interruptions", 200)["interruptions"]
    assert [(i["id"], i["kind"]) for i in listed] == [(waits["id"], "approval")]
    assert (
        check("GET", "/api/runs/{run_id}/interruptions", 200, run_id=again["run_id"])["interruptions"]
        == listed
    )
    answered = check(
        "POST",
        "/api/interruptions/{interruption_id}",
        200,
        json={"decision": "deny"},
        interruption_id=waits["id"],
    )
    assert answered["kind"] == "approval" and answered["run_id"] == again["run_id"]
    check.done(again["run_id"])
    check(
        "POST",
        "/api/interruptions/{interruption_id}",
        409,
        json={"decision": "deny"},
        interruption_id=waits["id"],
    )

    # A breakpoint before the tool: the paused run's state, read, then the run continues.
    check("POST", "/api/breakpoints", 200, json={"breakpoints": [{"tool": "add"}]})
    check("GET", "/api/breakpoints", 200)
    paused = check("POST", "/api/runs", 201, json={"input": "add 5", "thread_id": "t4"})
    [pause] = _wait_for_approvals(check)
    assert pause["kind"] == "breakpoint"
    check("GET", "/api/runs/{run_id}/state", 200, run_id=paused["run_id"])
    check("GET", "/api/runs/{run_id}/requests", 200, run_id=paused["run_id"])
    check("POST", "/api/breakpoints", 200, json={"breakpoints": []})
    check("POST", "/api/approvals/{approval_id}", 200, json={"decision": "approve"}, approval_id=pause["id"])
    assert check.done(paused["run_id"])["answer"] == "result 6"

    # Substitution rules: a tool's output scripted for the next run, then cleared.
    rules = [{"tool": "add", "output": "60"}, {"node": "ReActAgent.Done", "status": "SUCCESS"}]
    check("POST", "/api/substitutions", 200, json={"substitutions": rules})
    assert check("GET", "/api/substitutions", 200)["forced"] == {"0.0.2": "SUCCESS"}
    check("POST", "/api/substitutions", 200, json={"substitutions": []})

    gate.clear()  # a run held in its tool: a follow-up, then cancelled
    try:
        held = check("POST", "/api/runs", 201, json={"input": "wait A", "thread_id": "t3"})
        wait_until(  # the run is in progress (in its tool): a follow-up has a run to join
            lambda: check.http.get(f"/api/runs/{held['run_id']}").json()["iterations"] >= 1,
            "the held run to start",
        )
        check("POST", "/api/runs/{run_id}/inject", 202, json={"content": "more"}, run_id=held["run_id"])
        check("POST", "/api/runs/{run_id}/cancel", 202, json={}, run_id=held["run_id"])
        assert check.done(held["run_id"])["status"] == "cancelled"
    finally:
        gate.set()
    check("POST", "/api/runs/{run_id}/inject", 409, json={"content": "more"}, run_id=run["run_id"])
    check("POST", "/api/runs/{run_id}/cancel", 409, json={}, run_id=run["run_id"])
    check("GET", "/api/runs/{run_id}", 404, run_id="nope")
    check("POST", "/api/runs", 422, json={"input": ""})
    check("GET", "/api/runs", 422, query={"status": "bogus"})
    models = check("GET", "/v1/models", 200)
    check("GET", "/v1/models/{model_id}", 200, model_id=models["data"][0]["id"])
    completion = check(
        "POST",
        "/v1/chat/completions",
        200,
        json={"model": models["data"][0]["id"], "messages": [{"role": "user", "content": "add 2"}]},
    )
    assert completion["choices"][0]["message"]["content"] == "result 3"
    response = check("POST", "/v1/responses", 200, json={"model": models["data"][0]["id"], "input": "add 4"})
    assert response["output"][-1]["content"][0]["text"] == "result 5"
    check("GET", "/v1/responses/{response_id}", 200, response_id=response["id"])
    card = check("GET", "/.well-known/agent-card.json", 200)
    assert card["supportedInterfaces"][0]["url"].endswith("/a2a/")
    unknown = check(
        "POST", "/a2a/", 200, json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "nope"}}
    )
    # without `A2A-Version: 1.0` the SDK takes the request for protocol 0.3, which it refuses
    assert unknown["error"]["code"] == -32009  # VersionNotSupportedError

    # Every route answering JSON was checked with its success status.
    json_routes = {
        (method.upper(), path)
        for path, ops in check.document["paths"].items()
        for method, operation in ops.items()
        for status, answer in operation["responses"].items()
        if int(status) < 400 and "application/json" in answer["content"]
    }
    succeeded = {(method, template) for method, template, status in check.checked if status < 400}
    # those: the next tests' servers ask (an MCP server's questions; a folder of recordings)
    assert json_routes - succeeded == ELICITATION_ROUTES | RECORDING_ROUTES


ELICITATION_ROUTES = {
    ("GET", "/api/elicitations"),
    ("GET", "/api/runs/{run_id}/elicitations"),
    ("POST", "/api/runs/{run_id}/elicitations/{elicitation_id}"),
}


RECORDING_ROUTES = {
    ("GET", "/api/recordings"),
    ("POST", "/api/recordings/{name}/replay"),
    ("POST", "/api/threads/{thread_id}/recordings/{run_id}/replay"),
}


def test_the_recording_routes_answer_as_documented(tmp_path: Path) -> None:
    """The routes of a folder of recordings (`--recordings DIR`) and of a conversation's kept
    runs (`keep_recordings`): listed, opened, refused."""
    from jianmu_like import Agent
    from jianmu_like.server import create_app
    from tests.server.console_agent import build_root, record

    record(tmp_path / "add.jsonl", "add 41")
    (tmp_path / "notes.jsonl").write_text('{"kind": "note"}\n')

    def build() -> Agent:
        return Agent(
            build_root(),
            checkpointer=str(tmp_path / "runs.db"),
            keep_recordings=True,
            source="tests.server.console_agent:replayable",
            log_events=False,
        )

    app = create_app(build, recordings=tmp_path, allow_modules=["tests.server"])
    with live_server(app) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        check = Checker(http, http.get("/openapi.json").json())
        assert len(check("GET", "/api/recordings", 200)["recordings"]) == 2
        opened = check("POST", "/api/recordings/{name}/replay", 201, json={}, name="add.jsonl")
        assert check.done(opened["run_id"])["answer"] == "result 42"
        check("POST", "/api/recordings/{name}/replay", 404, json={}, name="gone.jsonl")
        check("POST", "/api/recordings/{name}/replay", 422, json={}, name="notes.jsonl")
        run = check("POST", "/api/runs", 201, json={"input": "add 1", "thread_id": "kept"})
        check.done(run["run_id"])
        [kept] = check("GET", "/api/threads/{thread_id}/recordings", 200, thread_id="kept")["recordings"]
        thread_replay = "/api/threads/{thread_id}/recordings/{run_id}/replay"
        opened = check("POST", thread_replay, 201, json={}, thread_id="kept", run_id=kept["run_id"])
        assert check.done(opened["run_id"])["answer"] == "result 2"
        check("POST", thread_replay, 404, json={}, thread_id="kept", run_id="nope")
    assert {(m, t) for m, t, status in check.checked if status < 400} >= RECORDING_ROUTES


@skip_without_everything
def test_the_elicitation_routes_answer_as_documented() -> None:
    """The routes of an MCP server's questions need a server that asks (server-everything)."""
    script = [call("trigger-elicitation-request"), reply("thanks")]
    with served_everything(script, elicitation="ask", allow=["trigger-elicitation-request"]) as (http, _, _):
        check = Checker(http, http.get("/openapi.json").json())
        run_id = check("POST", "/api/runs", 201, json={"input": "ask them"})["run_id"]
        wait_until(lambda: open_questions(http, run_id), "the server's question")
        [question] = check("GET", "/api/runs/{run_id}/elicitations", 200, run_id=run_id)["elicitations"]
        assert check("GET", "/api/elicitations", 200)["elicitations"] == [question]
        answer = "/api/runs/{run_id}/elicitations/{elicitation_id}"
        check("POST", answer, 422, json={"action": "accept", "content": {"check": True}}, run_id=run_id,
              elicitation_id=question["id"])  # fmt: skip
        check("POST", answer, 404, json={"action": "decline"}, run_id=run_id, elicitation_id="ev-99")
        answered = check("POST", answer, 200, json={"action": "decline"}, run_id=run_id,
                         elicitation_id=question["id"])  # fmt: skip
        assert answered == {
            "run_id": run_id,
            "id": question["id"],
            "kind": "elicitation",
            "action": "decline",
        }
        assert check.done(run_id)["status"] == "success"
        check("POST", answer, 409, json={"action": "decline"}, run_id=run_id, elicitation_id=question["id"])
    assert {(m, t) for m, t, status in check.checked if status < 400} >= ELICITATION_ROUTES


def _wait_for_approvals(check: Checker) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def listed() -> bool:
        found[:] = check("GET", "/api/approvals", 200)["approvals"]
        return bool(found)

    wait_until(listed, "the run to wait for an approval")
    return found


def test_the_docs_page_lists_the_routes_with_the_consoles_csp(served: Any) -> None:
    _app, http, _check = served
    page = http.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert '<script src="/docs.js" defer></script>' in page.text and "http" not in page.text.split("<body")[0]
    script = http.get("/docs.js")
    assert script.status_code == 200 and "/openapi.json" in script.text
