"""The console's form for an MCP server's question, in a real browser (headless Chromium through
Playwright, as in test_console_browser.py): built from server-everything's requested schema
(text, email, number, checkbox, single and multiple selects, defaults filled in), sent, and the
server's tool reads the answer; a sampling request is allowed from the same panel."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sse_live import live_server
from test_console_browser import ask, browser, expect  # noqa: F401 (the browser fixture)
from test_console_browser import page as page

from jianmu_like import Agent, create_react_node
from jianmu_like.server import create_app
from jianmu_like.testing import ScriptedOpenAIServer, call, reply
from jianmu_like.tools import MCPToolProvider

ENTRY = (
    Path(__file__).resolve().parents[1]
    / "mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
)
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(
    NODE is None or not ENTRY.exists(),
    reason="server-everything is not installed: npm install --prefix tests/mcp",
)


def repeat_the_tool(tool: str, **arguments: Any) -> Any:
    """Call `tool`, then answer with what it returned (a request without tools: a sampling one)."""

    def model(request: dict[str, Any]) -> Any:
        if "tools" not in request:
            return reply("sampled in the browser")
        results = [m for m in request["messages"] if m["role"] == "tool"]
        return reply(f"tool said: {results[-1]['content']}") if results else call(tool, **arguments)

    return model


@contextmanager
def console(model: Any, **options: Any) -> Iterator[str]:
    assert NODE is not None
    with ScriptedOpenAIServer(model) as srv:

        def factory() -> Agent:
            server = MCPToolProvider(name="ev", command=NODE, args=[str(ENTRY), "stdio"], **options)
            return Agent(create_react_node(model_client=srv.client(), tool_providers=[server]))

        with live_server(create_app(factory)) as url:
            yield url


def test_the_form_is_built_from_the_schema_and_its_answer_reaches_the_server(page: Any) -> None:
    tool = "trigger-elicitation-request"
    with console(repeat_the_tool(tool), elicitation="ask", allow=[tool]) as url:
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
        expect(answer).to_contain_text("- Name: Ada Lovelace")
        expect(answer).to_contain_text("- Agreed to terms: true")
        expect(answer).to_contain_text('"legacyTitledEnum": "pet-2"')  # the server's raw echo
        expect(answer).to_contain_text('"untitledMultipleSelectEnum": [ "Guitar" ]')


def test_a_sampling_request_is_allowed_from_the_panel(page: Any) -> None:
    tool = "trigger-sampling-request"
    model = repeat_the_tool(tool, prompt="a haiku", maxTokens=40)
    with console(model, sampling="ask", allow=[tool]) as url:
        page.goto(url + "/")
        run = ask(page, "sample")
        request = page.locator('#elicitations .elicitation[data-kind="sampling"]')
        expect(request.locator("pre")).to_contain_text("a haiku")
        request.locator("button.approve").click()
        expect(run.locator(".answer")).to_contain_text("sampled in the browser")
        expect(page.locator("#elicitations")).to_be_hidden()
