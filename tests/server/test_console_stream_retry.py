"""The web console in a real browser (headless Chromium) when the model's stream is cut off
mid-answer and retried: the cut-off words are withdrawn, then the retried answer shows alone.
The model is the scripted OpenAI server over real HTTP, which drops the first connection."""

from __future__ import annotations

import threading
from typing import Any

from jianmu_like import AgentTemplate, ReActConfig, create_react_node
from jianmu_like.server import create_app
from jianmu_like.testing import ScriptedOpenAIServer, fault_reply, reply
from tests.server.browser_page import ask, expect
from tests.server.sse_live import live_server

CUT = "The capital of"
ANSWER = "The capital of France is Paris."


def test_the_console_withdraws_the_words_of_a_cut_off_stream(page: Any) -> None:
    retried = threading.Event()
    release = threading.Event()

    def responder(body: dict[str, Any]) -> Any:
        if not retried.is_set() and not release.is_set():
            retried.set()
            return fault_reply("dropped_stream", CUT)  # streams three words, then drops
        release.wait(60)  # the retry waits here: the page shows what it made of the cut
        return reply(ANSWER)

    try:
        with ScriptedOpenAIServer(responder) as srv:
            client = srv.client(timeout=120)
            root = create_react_node(model_client=client, tools=[], config=ReActConfig(stream=True))
            app = create_app(AgentTemplate.from_prototype(root, log_events=False).conversation)
            with live_server(app) as url:
                page.goto(url + "/")
                run = ask(page, "Capital of France?")
                answer = run.locator(".answer")
                expect(answer).to_have_attribute("data-deltas", "3")  # the cut attempt's words arrived...
                expect(answer).to_have_text("")  # ...and were withdrawn while the retry waits
                release.set()
                expect(answer).to_have_text(ANSWER)
                expect(page.locator("#run-status")).to_have_attribute("data-status", "success")
    finally:
        release.set()
