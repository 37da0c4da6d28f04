"""The console's approval box in a real browser (headless Chromium): the arguments are editable,
Approve sends the corrected ones, the tool runs with them; arguments that are not JSON, or that
the tool's schema refuses, are an error on the page and the approval keeps waiting."""

from __future__ import annotations

from typing import Any

import pytest

from tests.server.browser_page import ask, expect
from tests.server.console_agent import console_app
from tests.server.sse_live import live_server


@pytest.mark.console_errors("status of 422")  # the refused arguments
def test_approve_with_corrected_arguments_in_the_console(page: Any) -> None:
    with live_server(console_app()) as url:
        page.goto(url + "/")
        run = ask(page, "delete draft-final.txt")
        approval = page.locator("#approvals .approval")
        arguments = approval.locator("textarea.arguments")
        expect(arguments).to_have_value('{\n  "path": "draft-final.txt"\n}')

        arguments.fill('{"path": ')
        approval.locator("button.approve").click()
        expect(page.locator("#error")).to_contain_text("the arguments are not JSON")
        arguments.fill('{"path": 42}')
        approval.locator("button.approve").click()
        expect(page.locator("#error")).to_contain_text("do not match tool 'delete_file'")
        expect(approval).to_be_visible()  # still waiting, its buttons usable again
        expect(approval.locator("button.approve")).to_be_enabled()

        arguments.fill('{"path": "draft-v2.txt"}')
        approval.locator("button.approve").click()
        expect(page.locator("#approvals")).to_be_hidden()
        decided = run.locator(".note.inject").last
        expect(decided).to_contain_text('approved with arguments {"path":"draft-v2.txt"}')
        card = run.locator('.tool-card[data-tool="delete_file"]')
        expect(card.locator(".args")).to_contain_text("draft-v2.txt")
        expect(card.locator(".observation")).to_contain_text("deleted draft-v2.txt")
        expect(run.locator(".answer")).to_contain_text("deleted draft-v2.txt")
        expect(page.locator("#run-status")).to_have_attribute("data-status", "success")
