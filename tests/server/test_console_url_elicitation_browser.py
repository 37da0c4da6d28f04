"""The console never renders a non-http(s) URL as a link, in a real browser (headless Chromium).

The server refuses such URL elicitations already (tools.mcp._bounds, test_mcp_hostile.py), so
this checks the page's own line behind it: an elicitation reaching the page with a
`javascript:`, `data:` or `file:` URL is shown as text, with no link to click; an https one is
a link that opens in a new tab without an opener."""

from __future__ import annotations

import json
from typing import Any

from tests.server.browser_page import expect
from tests.server.console_agent import console_app
from tests.server.sse_live import live_server

URLS = {
    "https://example.com/sign-in": True,
    "javascript:alert(document.domain)": False,
    " JAVASCRIPT:alert(1)": False,
    "data:text/html,<script>alert(1)</script>": False,
    "file:///etc/passwd": False,
}


def _question(number: int, url: str) -> dict[str, Any]:
    return {
        "runId": "r1",
        "name": "approval",
        "data": {
            "status": "elicitation",
            "elicitation": {
                "id": f"q-{number}",
                "server": "hostile",
                "message": "Open this page to sign in",
                "url": url,
                "kind": "elicitation",
            },
        },
    }


def test_only_http_urls_become_links(page: Any) -> None:
    with live_server(console_app()) as url:
        page.goto(url + "/")
        for number, (target, _) in enumerate(URLS.items()):
            detail = json.dumps(_question(number, target))
            page.evaluate(f"document.dispatchEvent(new CustomEvent('jianmu:event', {{detail: {detail}}}))")
        forms = page.locator("#elicitations .elicitation")
        expect(forms).to_have_count(len(URLS))
        for number, (target, is_link) in enumerate(URLS.items()):
            form = page.locator(f'.elicitation[data-id="q-{number}"]')
            if is_link:
                link = form.locator("a")
                expect(link).to_have_attribute("href", target)
                expect(link).to_have_attribute("rel", "noopener noreferrer")
            else:
                expect(form.locator("a")).to_have_count(0)
                expect(form.locator("code.unsafe-url")).to_have_text(target)
                expect(form.locator("p.unsafe-note")).to_contain_text("not an http(s) link")
        hrefs = page.eval_on_selector_all("a[href]", "links => links.map(a => a.href)")
        assert not [h for h in hrefs if not h.startswith(("http:", "https:", "blob:"))], hrefs
