"""One answer everywhere: whatever the loop's first final reply was, the SSE `answer` channel
ends with the run's final answer, `done.answer` is `result.final_answer`, and a reply that is
not the answer (a draft rewritten by synthesis, a re-asked one, one held back by a follow-up) is
never the channel's `done`. Over real HTTP end to end: the scripted OpenAI server streams the
replies to the real `openai` client, uvicorn serves the run's events."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from pydantic import BaseModel

from jianmu_like import AgentTemplate, ReActConfig, create_react_node, tool
from jianmu_like.server import create_app
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, calls, fault_reply, reply, wait_until
from tests.server.sse_live import answer_shown, live_server, read_events

Events = list[tuple[int, str, dict[str, Any]]]


@tool
def lookup(city: str) -> str:
    """Population of a city.

    Args:
        city: The city's English name.
    """
    return {"Paris": "2.1 million"}.get(city, "unknown")


class City(BaseModel):
    city: str
    population: float


@contextmanager
def serve(script: Any, **config: Any) -> Iterator[tuple[ScriptedOpenAIServer, httpx.Client]]:
    output_type = config.pop("output_type", None)
    with ScriptedOpenAIServer(script) as srv:
        root = create_react_node(
            model_client=srv.client(),
            tools=[lookup],
            config=ReActConfig(stream=True, max_iterations=5, **config),
            output_type=output_type,
        )
        template = AgentTemplate.from_prototype(root, log_events=False)
        with (
            live_server(create_app(template.conversation)) as url,
            httpx.Client(base_url=url, timeout=PATIENCE) as http,
        ):
            yield srv, http


def start(http: httpx.Client, question: str) -> str:
    response = http.post("/api/runs", json={"input": question})
    assert response.status_code == 201, response.text
    run_id: str = response.json()["run_id"]
    return run_id


def shown(events: Events) -> str:
    """What a client rendering the answer channel shows at the end (start/reset empty it)."""
    return answer_shown((channel, data) for _, channel, data in events)


def assert_one_answer(http: httpx.Client, run_id: str, events: Events, expected: str) -> None:
    """The channel's one `done` is the final answer, and so is everything else that says so."""
    done = events[-1]
    assert done[1] == "done" and done[2]["status"] == "success", done
    assert done[2]["answer"] == expected
    assert http.get(f"/api/runs/{run_id}").json()["answer"] == expected
    answer_done = [d["content"] for _, c, d in events if c == "answer" and d["status"] == "done"]
    assert answer_done == [expected]
    assert shown(events) == expected


def answer_text(events: Events) -> str:
    """Every character ever sent on the answer channel."""
    return "".join(d["content"] for _, c, d in events if c == "answer")


def test_synthesis_streams_only_the_synthesised_answer() -> None:
    final = "Paris has about 2.1 million inhabitants."
    script = [calls(call("lookup", city="Paris")), reply("DRAFT: 2.1 million"), reply(final)]
    with serve(script, synthesize=True) as (srv, http):
        run_id = start(http, "How many people live in Paris?")
        events = read_events(http, run_id)
        assert [r.get("stream", False) for r in srv.requests] == [False, False, True]
        assert_one_answer(http, run_id, events, final)
    assert "DRAFT" not in answer_text(events)  # the loop's draft never reached the channel
    deltas = [d["content"] for _, c, d in events if c == "answer" and d["status"] == "delta"]
    assert "".join(deltas) == final and len(deltas) > 1  # the synthesis' own tokens, live


def test_an_answer_the_check_re_asks_is_withdrawn() -> None:
    with serve([reply("No"), reply("It is 42, after checking.")], answer_check={"min_chars": 5}) as (
        srv,
        http,
    ):
        run_id = start(http, "What is 6 * 7?")
        events = read_events(http, run_id)
        assert srv.requests[1]["messages"][-1]["content"].startswith("Your final answer is too short")
        assert_one_answer(http, run_id, events, "It is 42, after checking.")
    statuses = [d["status"] for _, c, d in events if c == "answer"]
    assert statuses.index("reset") < statuses.index("done")  # "No" streamed live, then withdrawn


def test_an_answer_the_output_type_re_asks_is_withdrawn() -> None:
    valid = '{"city": "Paris", "population": 2.1}'
    with serve([reply("Paris, 2.1 million."), reply(valid)], output_type=City) as (srv, http):
        run_id = start(http, "Population of Paris as JSON")
        events = read_events(http, run_id)
        assert len(srv.requests) == 2
        assert_one_answer(http, run_id, events, valid)
    assert "reset" in [d["status"] for _, c, d in events if c == "answer"]


def test_an_answer_held_back_by_a_follow_up_is_withdrawn() -> None:
    thinking, release = threading.Event(), threading.Event()

    def responder(body: dict[str, Any]) -> Any:
        last = body["messages"][-1]["content"]
        if last == "what is X?":
            thinking.set()
            release.wait(PATIENCE)  # the test sends its follow-up meanwhile
            return reply("X is 1, as far as I know.")
        return reply(f"Y is 2 (after: {last})")

    with serve(responder) as (_srv, http):
        run_id = start(http, "what is X?")
        wait_until(thinking.is_set, "the model to be asked")
        assert http.post(f"/api/runs/{run_id}/inject", json={"content": "and Y?"}).status_code == 202
        release.set()
        events = read_events(http, run_id)
        assert_one_answer(http, run_id, events, "Y is 2 (after: [USER INTERRUPT] and Y?)")
    applied = [d for _, c, d in events if c == "inject" and d["status"] == "applied"]
    assert len(applied) == 1
    statuses = [d["status"] for _, c, d in events if c == "answer"]
    assert statuses.count("reset") == 1 and statuses[-1] == "done"


def test_a_run_without_an_answer_withdraws_what_was_streamed() -> None:
    script = [fault_reply("dropped_stream", "The capital of")]
    with ScriptedOpenAIServer(script) as srv:
        root = create_react_node(
            model_client=srv.client(max_retries=0), tools=[], config=ReActConfig(stream=True)
        )
        template = AgentTemplate.from_prototype(root, log_events=False)
        with (
            live_server(create_app(template.conversation)) as url,
            httpx.Client(base_url=url, timeout=PATIENCE) as http,
        ):
            events = read_events(http, start(http, "Capital of France?"))
    done = events[-1][2]
    assert done["status"] == "failure" and done["answer"] is None
    assert "done" not in [d["status"] for _, c, d in events if c == "answer"]
    assert shown(events) == ""
