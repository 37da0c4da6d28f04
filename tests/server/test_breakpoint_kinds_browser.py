"""Breakpoints on a status or an event type in the console: listed in words (never marked on the
drawing as a node's own breakpoint), and a pause they make says what triggered it."""

from __future__ import annotations

from typing import Any

import httpx

from jianmu_like.testing import PATIENCE
from tests.server.browser_page import ask, expect
from tests.server.console_agent import console_app
from tests.server.sse_live import live_server


def test_a_status_and_an_event_breakpoint_in_the_console(page: Any) -> None:
    rules = [{"event": "tool.call.failed"}, {"status": "FAILURE", "node": "0.0.2"}]
    with live_server(console_app()) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        assert http.post("/api/breakpoints", json={"breakpoints": rules}).status_code == 200
        page.goto(url + "/")
        listed = page.locator("#breakpoint-list li")
        expect(listed).to_have_count(2)
        expect(listed.nth(0)).to_contain_text("after event tool.call.failed")
        expect(listed.nth(1)).to_contain_text("after ReActAgent.Done FAILURE")
        expect(page.locator("#tree .node[data-breakpoint]")).to_have_count(0)  # no node's own

        run = ask(page, "boom x")
        pause = page.locator("#approvals .approval.breakpoint")
        tools = "ReActAgent/ReActAgent.Loop/ReActAgent.Tools"
        expect(pause.locator(".paused-at")).to_contain_text("Paused before ReActAgent.Done (0.0.2")
        expect(pause.locator(".paused-why")).to_have_text(f"after event tool.call.failed from {tools}")
        pause.locator("button.continue").click()
        done = "ReActAgent/ReActAgent.Loop/ReActAgent.Done"
        expect(pause.locator(".paused-why")).to_have_text(f"after {done} finished FAILURE")
        expect(pause.locator(".paused-at")).to_contain_text("(0.0,")
        assert http.post("/api/breakpoints", json={"breakpoints": []}).status_code == 200
        pause.locator("button.continue").click()
        expect(run.locator(".answer")).to_be_visible()
        expect(page.locator("#run-status")).to_have_attribute("data-status", "success")
