"""The web console in a real browser (headless Chromium) shows the run's final answer, never a
reply that was not it: a draft that a synthesis phase rewrites, an answer the check re-asks.
The model is the scripted OpenAI server over real HTTP; each test holds the model's last call
to look at the page while the rejected text would still be on show."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from jianmu_like import AgentTemplate, ReActConfig, create_react_node
from jianmu_like.server import create_app
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, reply, wait_until
from tests.server.browser_page import ask, expect
from tests.server.sse_live import live_server

FINAL = "Paris is the capital of France."


@contextmanager
def held_run(
    tab: Any, responder: Any, held: threading.Event, release: threading.Event, **config: Any
) -> Iterator[Any]:
    """Ask in the console; yields the answer box while the model's last call is held, then
    releases it and sees the run end with the final answer."""
    with ScriptedOpenAIServer(responder) as srv:
        root = create_react_node(
            model_client=srv.client(timeout=PATIENCE * 2), tools=[], config=ReActConfig(stream=True, **config)
        )
        app = create_app(AgentTemplate.from_prototype(root, log_events=False).conversation)
        with live_server(app) as url:
            tab.goto(url + "/")
            run = ask(tab, "Capital of France?")
            answer = run.locator(".answer")
            wait_until(held.is_set, "the model's last call")
            yield answer
            release.set()
            expect(answer).to_have_text(FINAL)
            expect(tab.locator("#run-status")).to_have_attribute("data-status", "success")


def test_the_console_shows_the_synthesised_answer_and_never_the_draft(page: Any) -> None:
    held, release = threading.Event(), threading.Event()

    def responder(body: dict[str, Any]) -> Any:
        if not body["messages"][0]["content"].startswith("You write the final answer"):
            return reply("DRAFT answer: Paris")  # the loop's reply
        held.set()  # the synthesis call
        release.wait(PATIENCE)
        return reply(FINAL)

    try:
        with held_run(page, responder, held, release, synthesize=True) as answer:
            expect(page.locator(".note").filter(has_text="phase synthesizing started")).to_have_count(1)
            expect(answer).to_have_text("")  # the loop's draft is not the answer
    finally:
        release.set()


def test_the_console_withdraws_an_answer_the_check_re_asks(page: Any) -> None:
    held, release = threading.Event(), threading.Event()

    def responder(body: dict[str, Any]) -> Any:
        if body["messages"][-1]["content"] == "Capital of France?":
            return reply("No")
        held.set()
        release.wait(PATIENCE)
        return reply(FINAL)

    try:
        with held_run(page, responder, held, release, answer_check={"min_chars": 5}) as answer:
            expect(page.locator(".note.thinking").last).to_have_text("iteration 2: thinking…")
            expect(answer).to_have_text("")  # "No" streamed, then was withdrawn
    finally:
        release.set()
