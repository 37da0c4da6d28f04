"""Real cross-origin attacks from headless Chromium on a server on 127.0.0.1 (issue 18): a page
of another origin (a second local HTTP server on another port) POSTs with a `no-cors` fetch and a
form, the simple requests a browser sends without a preflight; a DNS-rebinding page (its own name,
`rebind.test`, resolving to 127.0.0.1 by `--host-resolver-rules`) reads and decides approvals.
Each request reaches the server (recorded there) and is refused: no run starts, no tool runs.
The console, served at the loopback address, keeps working beside them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from tests.server.chromium import system_chromium
from tests.server.edge_agent import Recording, edge_app, ran
from tests.server.sse_live import live_server, read_events

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')"
)
expect = sync_api.expect
TIMEOUT_MS = 30_000
REBIND = "rebind.test"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = system_chromium()
    with sync_api.sync_playwright() as playwright:
        try:
            chromium = playwright.chromium.launch(
                executable_path=executable,
                headless=True,
                args=[f"--host-resolver-rules=MAP {REBIND} 127.0.0.1"],
            )
        except sync_api.Error as exc:
            pytest.skip(f"Chromium at {executable} does not start under Playwright: {exc}")
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    expect.set_options(timeout=TIMEOUT_MS)
    yield page
    context.close()


@contextmanager
def attacker_site(pages: dict[str, str]) -> Iterator[str]:
    """Another origin: a plain HTTP server on another port of 127.0.0.1 serving `pages[path]`
    (read at each request, so a test may fill it once it knows the agent server's address)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path, "").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="attacker-site", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)


ATTACK_PAGE = """<!doctype html>
<html><body>
<iframe name="sink"></iframe>
<form id="form" method="POST" action="{server}/api/runs" enctype="text/plain" target="sink">
  <input name='{{"input": "form attack", "x": "' value='"}}'>
</form>
<script>
async function attack() {{
  const body = JSON.stringify({{ input: "fetch attack" }});
  const plain = await fetch("{server}/api/runs", {{
    method: "POST", mode: "no-cors", headers: {{ "Content-Type": "text/plain" }}, body,
  }});
  // A Blob without a type: a POST with no Content-Type at all.
  await fetch("{server}/api/runs", {{ method: "POST", mode: "no-cors", body: new Blob([body]) }});
  const frame = document.querySelector("iframe");
  await new Promise((resolve) => {{
    frame.onload = resolve;
    document.getElementById("form").submit();
  }});
  return plain.type;
}}
</script>
</body></html>
"""


def test_a_page_of_another_origin_cannot_start_a_run(page: Any) -> None:
    ran.clear()
    app = edge_app()
    recording = Recording(app)
    pages: dict[str, str] = {}
    with live_server(recording) as server, attacker_site(pages) as site:
        pages["/"] = ATTACK_PAGE.format(server=server)
        page.goto(site + "/")
        assert page.evaluate("attack()") == "opaque"  # sent; the page may not read the answer
        posts = [s for s in recording.seen if s.method == "POST"]
        assert [s.path for s in posts] == ["/api/runs"] * 3, posts
        for seen in posts:
            assert seen.headers.get("origin") == site, seen.headers
            assert seen.status == 403, seen
        content_types = [s.headers.get("content-type", "").split(";")[0] for s in posts]
        assert content_types == ["text/plain", "", "text/plain"], content_types
        assert app.state.registry.runs == {} and ran == []


def test_a_configured_cors_origin_still_reaches_the_api_through_its_preflight(page: Any) -> None:
    """The other side of the same rule: a page of an origin the server lists in `cors_origins`
    sends JSON with a preflight, and gets its run."""
    ran.clear()
    pages = {"/": "<!doctype html><p>a front end of its own</p>"}
    with attacker_site(pages) as site:
        app = edge_app(cors_origins=[site])
        with live_server(app) as server:
            page.goto(site + "/")
            created = page.evaluate(
                """async (server) => {
                    const response = await fetch(server + "/api/runs", {
                        method: "POST",
                        headers: { "Content-Type": "application/json" },
                        body: JSON.stringify({ input: "from my front end" }),
                    });
                    return { status: response.status, body: await response.json() };
                }""",
                server,
            )
            assert created["status"] == 201, created
            assert list(app.state.registry.runs) == [created["body"]["run_id"]]


def test_a_dns_rebinding_page_cannot_read_or_decide_approvals_while_the_console_works(page: Any) -> None:
    ran.clear()
    app = edge_app()
    recording = Recording(app)
    with live_server(recording) as server, httpx.Client(base_url=server, timeout=30) as http:
        port = int(server.rsplit(":", 1)[1])
        run = http.post("/api/runs", json={"input": "delete secrets.txt"}).json()
        read_events(http, run["run_id"], until="approval:pending")
        [pending] = http.get("/api/approvals").json()["approvals"]

        # The attacker's page under its own name, which now resolves to 127.0.0.1: the agent
        # server serves its document (a refusal), and the page's same-origin requests, run as
        # its script, reach the agent server with `Host: rebind.test:PORT`.
        rebound = f"http://{REBIND}:{port}"
        assert page.goto(rebound + "/").status == 421
        found = page.evaluate(
            """async (id) => {
                const list = await fetch("/api/approvals");
                const decide = await fetch("/api/approvals/" + id, {
                    method: "POST",
                    headers: { "Content-Type": "application/json" },
                    body: JSON.stringify({ decision: "approve" }),
                });
                const console = await fetch("/");
                return {
                    list: list.status, listed: await list.text(), decide: decide.status,
                    console: console.status, page: await console.text(),
                };
            }""",
            pending["id"],
        )
        assert (found["list"], found["decide"], found["console"]) == (421, 421, 421), found
        assert "secrets.txt" not in found["listed"] and "delete_file" not in found["listed"]
        assert json.loads(found["page"])["error"].startswith("refused: this server does not answer")
        rebinding = [s for s in recording.seen if s.headers.get("host") == f"{REBIND}:{port}"]
        # (Chromium retries a request answered 421 once on a fresh connection.)
        assert {(s.method, s.path) for s in rebinding} >= {
            ("GET", "/"),
            ("GET", "/api/approvals"),
            ("POST", f"/api/approvals/{pending['id']}"),
        }, rebinding
        assert {s.status for s in rebinding} == {421}
        assert ran == [] and http.get("/api/approvals").json()["approvals"] == [pending]

        # The console at the loopback address still finds the waiting call and approves it.
        page.goto(server + "/")
        approval = page.locator("#approvals .approval")
        expect(approval).to_contain_text("secrets.txt")
        approval.locator("button.approve").click()
        expect(page.locator("article.run .answer").last).to_have_text("done: deleted secrets.txt")
        assert ran == ["delete secrets.txt"]
