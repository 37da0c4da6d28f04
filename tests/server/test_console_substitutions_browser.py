"""Substitution rules on the console's drawing: each node a rule forces wears a badge naming the
status it reports unticked; a node without a rule wears none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.server.browser_page import expect
from tests.server.console_agent import console_app
from tests.server.sse_live import live_server
from tests.server.test_console_tree_browser import shot


def test_a_forced_node_wears_a_badge(page: Any, tmp_path: Path) -> None:
    with live_server(console_app()) as url:
        rules = [{"node": "ReActAgent.Done", "status": "FAILURE"}, {"tool": "add", "output": "500"}]
        answer = httpx.post(url + "/api/substitutions", json={"substitutions": rules})
        assert answer.status_code == 200, answer.text
        page.goto(url + "/")
        done = page.locator('#tree .node[data-id="0.0.2"]')
        expect(done).to_have_attribute("data-substituted", "FAILURE")
        badge = done.locator(".substituted")
        expect(badge).to_be_visible()
        expect(badge.locator("text")).to_have_text("⇄ FAILURE")
        tools = page.locator('#tree .node[data-id="0.0.1"]')
        expect(tools).not_to_have_attribute("data-substituted", "FAILURE")
        expect(tools.locator(".substituted")).to_be_hidden()
        shot(page, tmp_path, "substituted.png")
