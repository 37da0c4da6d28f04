"""The console's form for an MCP server's question, in a real browser (headless Chromium through
Playwright, as in test_console_browser.py): built from server-everything's requested schema
(text, email, number, checkbox, single and multiple selects, defaults filled in), sent, and the
server's tool reads the answer; a sampling request is allowed from the same panel."""

from __future__ import annotations

from typing import Any

from tests.server.browser_page import ask, expect
from tests.server.test_mcp_elicitations import repeat_the_tool, served, skip_without_everything

pytestmark = skip_without_everything


def test_the_form_is_built_from_the_schema_and_its_answer_reaches_the_server(page: Any) -> None:
    tool = "trigger-elicitation-request"
    with served(repeat_the_tool(tool), elicitation="ask", allow=[tool]) as (_http, _srv, url):
        page.goto(url + "/")
        run = ask(page, "ask me")
        form = page.locator("#elicitations .elicitation")
        expect(form).to_have_count(1)
        expect(form.locator(".elicit-head")).to_contain_text("ev asks")
        name = form.locator('input[name="name"]')
        expect(name).to_have_attribute("required", "")
        expect(form.locator('input[name="email"]')).to_have_attribute("type", "email")
        expect(form.locator('input[name="integer"]')).to_have_value("42")  # the schema's default
        expect(form.locator('select[name="untitledMultipleSelectEnum"]')).to_have_attribute("multiple", "")
        legacy = form.locator('select[name="legacyTitledEnum"]')
        expect(legacy.locator("option", has_text="Cats")).to_have_count(1)  # enumNames shown
        expect(legacy).to_have_value("pet-1")  # the default chosen
        name.fill("Ada Lovelace")
        form.locator('input[name="check"]').check()
        form.locator('select[name="legacyTitledEnum"]').select_option(label="Dogs")
        form.locator("button.approve").click()
        expect(page.locator("#elicitations")).to_be_hidden()
        answer = run.locator(".answer")
        expect(answer).to_contain_text("Name: Ada Lovelace")
        expect(answer).to_contain_text("Agreed to terms: true")
        expect(answer).to_contain_text('"legacyTitledEnum": "pet-2"')  # the server's raw echo
        expect(answer).to_contain_text('"untitledMultipleSelectEnum": [ "Guitar" ]')


def test_a_sampling_request_is_allowed_from_the_panel(page: Any) -> None:
    tool = "trigger-sampling-request"
    model = repeat_the_tool(tool, prompt="a haiku", maxTokens=40)
    with served(model, sampling="ask", allow=[tool]) as (_http, _srv, url):
        page.goto(url + "/")
        run = ask(page, "sample")
        request = page.locator('#elicitations .elicitation[data-kind="sampling"]')
        expect(request.locator("pre")).to_contain_text("a haiku")
        request.locator("button.approve").click()
        expect(run.locator(".answer")).to_contain_text("sampled words")
        expect(page.locator("#elicitations")).to_be_hidden()
