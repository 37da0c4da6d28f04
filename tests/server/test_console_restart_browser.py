"""The console on a server restarted on a store: a run the earlier server left waiting for
approval is shown with its buttons, and Approve resumes it as a new run, followed in the page to
its answer (headless Chromium)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.server.browser_page import expect
from tests.server.console_agent import console_app
from tests.server.sse_live import live_server
from tests.server.test_restart_interruptions import paused_before_restart


def test_a_stored_approval_is_approved_in_the_console_after_a_restart(page: Any, tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    paused_before_restart(store, "delete notes.txt", [])
    with live_server(console_app(checkpoint=str(store))) as url:
        page.goto(url + "/")
        approval = page.locator("#approvals .approval")
        expect(approval).to_contain_text("delete_file")
        expect(approval).to_contain_text("notes.txt")
        approval.locator("button.approve").click()
        expect(page.locator("#approvals")).to_be_hidden()
        run = page.locator("article.run").last
        expect(run.locator(".answer")).to_have_text("result deleted notes.txt")
        expect(page.locator("#run-status")).to_have_attribute("data-status", "success")
