"""Start a run and read its events in one request (`POST /api/runs` with `?stream=true` or
`Accept: text/event-stream`), over real HTTP: the stream is the run's event stream with
`run.created` first, a lost stream resumes on `GET .../events`, and the run never depends on
the request."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from jianmu_like.testing import PATIENCE, wait_until
from tests.server.sse_live import live_server, read_events, sse_events
from tests.server.test_server_api import gate, make_app

Event = tuple[int, str, dict[str, Any]]


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    gate.clear()
    with live_server(make_app()) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        yield http
    gate.set()


def stream_run(
    client: httpx.Client, question: str, *, params: dict[str, str] | None = None, accept: str | None = None
) -> list[Event]:
    """POST /api/runs answering a stream; every event until `done`."""
    headers = {"Accept": accept} if accept is not None else {}
    found: list[Event] = []
    with client.stream(
        "POST", "/api/runs", json={"input": question}, params=params, headers=headers
    ) as answer:
        assert answer.status_code == 200, answer.read()
        assert answer.headers["content-type"].startswith("text/event-stream")
        for event in sse_events(answer.iter_lines()):
            found.append(event)
            if event[1] == "done":
                break
    return found


@pytest.mark.parametrize(
    ("params", "accept"), [({"stream": "true"}, None), (None, "text/event-stream"), ({"stream": "1"}, "*/*")]
)
def test_one_request_starts_the_run_and_streams_its_events(
    client: httpx.Client, params: dict[str, str] | None, accept: str | None
) -> None:
    events = stream_run(client, "add 41", params=params, accept=accept)
    first_id, first, created = events[0]
    assert (first_id, first) == (0, "run.created")
    run_id = created["run_id"]
    assert created["thread_id"] and set(created) == {"run_id", "thread_id"}
    # Then exactly the run's event stream, ids and all, ending with its answer.
    assert events[1:] == read_events(client, run_id)
    assert events[-1][2]["status"] == "success" and events[-1][2]["answer"] == "result 42"


def test_a_lost_stream_resumes_from_its_last_event_id_and_the_run_goes_on(client: httpx.Client) -> None:
    gate.clear()
    seen: list[Event] = []
    with client.stream("POST", "/api/runs", json={"input": "wait w1"}, params={"stream": "true"}) as answer:
        for event in sse_events(answer.iter_lines()):
            seen.append(event)
            if event[1] == "step" and event[2].get("status") == "start" and event[2].get("tool_name"):
                break  # the run is inside its tool: drop the stream here
    run_id = seen[0][2]["run_id"]
    assert client.get(f"/api/runs/{run_id}").json()["status"] == "running"
    gate.set()  # the run finishes without any reader
    wait_until(lambda: client.get(f"/api/runs/{run_id}").json()["status"] == "success", "the run to finish")
    rest = read_events(client, run_id, last_event_id=seen[-1][0])
    assert seen[1:] + rest == read_events(client, run_id)
    assert rest[-1][2]["answer"] == "result w1 released"


def test_json_stays_the_answer_unless_a_stream_is_asked_for(client: httpx.Client) -> None:
    for headers in ({}, {"Accept": "application/json, text/event-stream"}, {"Accept": "*/*"}):
        answer = client.post("/api/runs", json={"input": "add 1"}, headers=headers)
        assert answer.status_code == 201 and answer.headers["content-type"] == "application/json"
        read_events(client, answer.json()["run_id"])
    answer = client.post(
        "/api/runs",
        json={"input": "add 1"},
        params={"stream": "false"},
        headers={"Accept": "text/event-stream"},
    )
    assert answer.status_code == 201, answer.text
    read_events(client, answer.json()["run_id"])


def test_a_bad_stream_value_is_refused_before_anything_runs(client: httpx.Client) -> None:
    before = len(client.get("/api/runs").json()["runs"])
    answer = client.post("/api/runs", json={"input": "add 1"}, params={"stream": "yes please"})
    assert answer.status_code == 422, answer.text
    assert answer.json()["detail"] == [{"field": "stream", "message": "not a boolean"}]
    assert len(client.get("/api/runs").json()["runs"]) == before
    # A refusal of the run itself is JSON too, never an empty stream.
    bad = client.post("/api/runs", json={"input": "add 1", "thread_id": 5}, params={"stream": "true"})
    assert bad.status_code == 422 and bad.headers["content-type"] == "application/json"


def test_the_document_describes_both_answers(client: httpx.Client) -> None:
    operation = client.get("/openapi.json").json()["paths"]["/api/runs"]["post"]
    assert set(operation["responses"]["201"]["content"]) == {"application/json"}
    assert set(operation["responses"]["200"]["content"]) == {"text/event-stream"}
    assert "run.created" in operation["responses"]["200"]["description"]
    (stream,) = [p for p in operation["parameters"] if p["name"] == "stream"]
    assert stream["in"] == "query" and stream["schema"]["enum"] == ["true", "1", "false", "0"]
