"""Conversations as people think of them, in headless Chromium: listed by their first question
(the id stays the title), and the open one kept across a reload of the page."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.server.browser_page import ask, expect
from tests.server.console_agent import console_app
from tests.server.sse_live import live_server


def test_named_by_the_first_question_and_kept_across_a_reload(page: Any, tmp_path: Path) -> None:
    with live_server(console_app(checkpoint=str(tmp_path / "runs.db"))) as url:
        page.goto(url + "/")
        expect(ask(page, "add 41").locator(".answer")).to_have_text("result 42")
        expect(ask(page, "add 1").locator(".answer")).to_have_text("result 2")
        thread_id = (page.locator("#thread").text_content() or "").removeprefix("conversation ")
        item = page.locator(f'#thread-list .thread-item[data-thread-id="{thread_id}"] button')
        expect(item).to_have_text("add 41")
        expect(item).to_have_attribute("title", f"conversation {thread_id}")

        page.reload()  # the open conversation comes back, with its questions and answers
        expect(page.locator("#thread")).to_have_text(f"conversation {thread_id}")
        past = page.locator("article.run.past")
        expect(past).to_have_count(2)
        expect(past.nth(1).locator(".answer")).to_have_text("result 2")
        expect(ask(page, "add 2").locator(".answer")).to_have_text("result 3")  # it continues
        expect(page.locator("#thread")).to_have_text(f"conversation {thread_id}")

        page.click("#new-thread")  # a new conversation: nothing is reopened any more
        page.reload()
        expect(page.locator("#thread-list .thread-item")).to_have_count(1)
        expect(page.locator("article.run")).to_have_count(0)
        expect(page.locator("#thread")).to_have_text("")


def test_versions_in_plain_words_grouped_per_turn(page: Any, tmp_path: Path) -> None:
    with live_server(console_app(checkpoint=str(tmp_path / "runs.db"))) as url:
        page.goto(url + "/")
        expect(ask(page, "add 41").locator(".answer")).to_have_text("result 42")
        ask(page, "delete notes.txt")
        expect(page.locator("#approvals .approval")).to_contain_text("delete_file")
        page.locator("#approvals button.approve").click()
        expect(page.locator("#run-status")).to_have_attribute("data-status", "success")
        thread_id = (page.locator("#thread").text_content() or "").removeprefix("conversation ")
        page.locator(f'#thread-list .thread-item[data-thread-id="{thread_id}"] button').click()
        turns = page.locator("#version-list .turn")
        expect(turns).to_have_text(["Turn 2: delete notes.txt", "Turn 1: add 41"])
        versions = page.locator("#version-list")
        expect(versions).to_contain_text(re.compile(r"waiting for a decision on one call \(call_\d+\)"))
        expect(versions).to_contain_text("· 1 message")
        expect(versions).to_contain_text("answered")
        expect(versions).to_contain_text("working, at ReActAgent.Tools")
        page.screenshot(path=str(tmp_path / "versions.png"), full_page=True)
