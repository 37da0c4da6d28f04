"""What users notice, in a real browser (headless Chromium): answers as markdown rendered safely
(hostile markdown and HTML execute nothing), the thinking label only with a thought, model and
tool failures as errors that stop every spinner, the tree's statuses reset per run, and one
wording of a run's status in the header and the footer. Screenshots go to the test's tmp dir."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from jianmu_like.server import CHANNELS
from tests.server.browser_page import ask, expect
from tests.server.console_agent import console_app
from tests.server.sse_live import live_server


def test_hostile_markdown_is_rendered_and_nothing_in_it_runs(page: Any, tmp_path: Path) -> None:
    with live_server(console_app()) as url:
        page.goto(url + "/")
        title = page.title()
        answer = ask(page, "md hostile").locator(".answer")
        expect(answer.locator("strong")).to_have_text("110")
        expect(answer.locator("table td").first).to_have_text("Paris")
        expect(answer).to_contain_text("<script>document.title = 'pwned by script'</script>")  # as text
        expect(answer).to_contain_text("[a javascript link](javascript:")  # not a link
        expect(answer.locator("script, img, iframe, object, embed, style")).to_have_count(0)
        link = answer.locator("a")
        expect(link).to_have_count(1)
        expect(link).to_have_attribute("href", "https://example.org/docs")
        expect(link).to_have_attribute("rel", "noopener noreferrer")
        handlers = page.evaluate(
            """() => [...document.querySelectorAll('.answer *')].flatMap(
                e => [...e.attributes].map(a => a.name)).filter(n => n.startsWith('on'))"""
        )
        assert handlers == []
        assert page.title() == title  # no script, handler or link of the answer ran
        page.screenshot(path=str(tmp_path / "markdown.png"), full_page=True)
    assert (tmp_path / "markdown.png").stat().st_size > 0


def test_thinking_failures_statuses_and_one_wording(page: Any, tmp_path: Path) -> None:
    with live_server(console_app()) as url:
        page.goto(url + "/")
        run = ask(page, "add 41")
        expect(run.locator(".answer")).to_have_text("result 42")
        expect(run.locator(".note.thinking")).to_have_count(0)  # a bare tool call: no "thought"

        run = ask(page, "think 2")
        expect(run.locator(".answer")).to_have_text("result 3")
        expect(run.locator(".note.thinking")).to_have_text(["iteration 1: thought"])
        expect(run.locator("details.thought pre")).to_have_text("I should add 1 to 2.")
        page.screenshot(path=str(tmp_path / "thought.png"), full_page=True)

        run = ask(page, "boom fuse")  # a tool that fails: an error card, the run goes on
        card = run.locator('.tool-card[data-tool="explode"]')
        expect(card).to_have_attribute("data-state", "error")
        expect(card.locator(".error-text")).to_contain_text("the fuse blew up")
        expect(page.locator("#run-status")).to_have_attribute("data-status", "success")

        run = ask(page, "fail now")  # the model call fails: an error, and nothing spins
        expect(run.locator(".run-error")).to_contain_text("the model refuses now")
        expect(run.locator(".run-error")).to_be_visible()
        expect(run.locator(".thinking.spinning")).to_have_count(0)
        expect(run.locator(".answer")).to_be_hidden()
        expect(page.locator("#run-status")).to_have_text("failed")
        expect(page.locator("#usage .badge")).to_have_text("failed")
        expect(page.locator("#ask")).to_be_enabled()
        page.screenshot(path=str(tmp_path / "model-failure.png"), full_page=True)

        ask(page, "delete notes.txt")  # one wording: the header's badge and the footer's agree
        expect(page.locator("#run-status")).to_have_text("waiting for approval")
        expect(page.locator("#usage .badge")).to_have_text("waiting for approval")
        page.screenshot(path=str(tmp_path / "waiting.png"), full_page=True)
        page.locator("#approvals button.approve").click()
        expect(page.locator("#run-status")).to_have_text("success")
        expect(page.locator("#usage .badge")).to_have_text("success")
        expect(page.locator('#tree .node[data-id="0"]')).to_have_attribute("data-status", "SUCCESS")

        page.click("#new-thread")  # statuses are a run's: a new conversation starts grey
        expect(page.locator('#tree .node[data-status="SUCCESS"]')).to_have_count(0)
        expect(page.locator("#run-status")).to_have_text("idle")
        page.screenshot(path=str(tmp_path / "new-conversation.png"), full_page=True)
        expect(ask(page, "add 1").locator(".answer")).to_have_text("result 2")
        expect(page.locator('#tree .node[data-id="0"]')).to_have_attribute("data-status", "SUCCESS")
    for name in ("thought.png", "model-failure.png", "waiting.png", "new-conversation.png"):
        assert (tmp_path / name).stat().st_size > 0


@pytest.mark.skipif(
    "reasoning" not in CHANNELS,  # type: ignore[comparison-overlap]
    reason="the SSE `reasoning` channel (issue 21.4, the reasoning lane) is not on this branch yet",
)
def test_the_models_reasoning_is_shown_as_it_streams(page: Any, tmp_path: Path) -> None:
    with live_server(console_app()) as url:
        page.goto(url + "/")
        run = ask(page, "reason 4")
        expect(run.locator(".answer")).to_have_text("result 5")
        expect(run.locator(".note.thinking")).to_have_text(["iteration 1: thought"])
        expect(run.locator("details.reasoning pre")).to_have_text("Adding one to 4.")
        expect(run.locator("details.thought")).to_have_count(0)  # the reasoning is the thought
        page.screenshot(path=str(tmp_path / "reasoning.png"), full_page=True)


def test_the_docs_page_lists_every_route_from_the_document(page: Any, tmp_path: Path) -> None:
    with live_server(console_app()) as url:
        document = httpx.get(url + "/openapi.json", timeout=30).json()
        operations = [op for methods in document["paths"].values() for op in methods.values()]
        api = [op for op in operations if "console" not in op.get("tags", [])]
        assert len(api) < len(operations)  # the console's files are in the document...
        page.goto(url + "/docs")
        expect(page.locator(".route")).to_have_count(len(api))  # ...and not on the API page
        expect(page.locator('.route[data-path="/console.js"]')).to_have_count(0)
        expect(page.locator(".console-files")).to_contain_text("/console.js")
        runs = page.locator('.route[data-method="POST"][data-path="/api/runs"]')
        expect(runs).to_contain_text("request: RunRequest")
        expect(runs).to_contain_text("from_checkpoint?")
        expect(runs).to_contain_text("response 201: RunCreated")
        expect(page.locator('.route[data-path="/api/runs/{run_id}/events"]')).to_contain_text(
            "text/event-stream"
        )
        page.screenshot(path=str(tmp_path / "docs.png"), full_page=True)
