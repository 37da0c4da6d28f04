"""The console shows a running MCP call's progress and its server's log lines on the call's
card, in a real browser (headless Chromium through Playwright, as in test_console_browser.py)."""

from __future__ import annotations

from typing import Any

from tests.server.browser_page import ask, expect
from tests.server.test_mcp_progress_sse import ANSWER, served_chatty


def test_the_tool_card_shows_progress_and_the_servers_log(page: Any) -> None:
    with served_chatty() as (_http, url):
        page.goto(url + "/")
        run = ask(page, "chat twice")
        expect(run.locator(".answer")).to_contain_text(ANSWER)
        card = run.locator('.tool-card[data-tool="chatty"]')
        expect(card.locator(".progress")).to_have_text("progress 2 / 2: step 2")  # the latest report
        expect(card.locator(".server-log")).to_have_text("info: working on step 1\ninfo: working on step 2\n")
        expect(card.locator(".observation")).to_contain_text("chatted 2 times")
