"""A reopened conversation in the console, in a real browser (headless Chromium) against a server
with a checkpoint store: its past answers render as markdown through the server's one
markdown-it + nh3 path (hostile markdown stays inert, as when it streamed), and a saved
version's messages — and the state inspector's — show tool calls as `name({...})` with readable
JSON arguments, not the stored format. The thread API's messages carry that HTML and are
redacted like every answer of the server. Screenshots go to the test's tmp dir."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from jianmu_like.server._markdown import answer_html
from jianmu_like.testing import PATIENCE, wait_until
from tests.server.browser_page import ask, expect
from tests.server.console_agent import HOSTILE, console_app
from tests.server.sse_live import live_server

SECRET = "sk-proj-abcdefghijklmnop"
READABLE_ADD = "add(" + json.dumps({"a": 41, "b": 1}, indent=2) + ")"


def _thread_of(page: Any) -> str:
    return (page.locator("#thread").text_content() or "").removeprefix("conversation ")


def test_a_reopened_conversation_renders_its_answers_and_shows_tool_calls_readably(
    page: Any, tmp_path: Path
) -> None:
    with live_server(console_app(checkpoint=str(tmp_path / "runs.db"))) as url:
        page.goto(url + "/")
        title = page.title()
        live = ask(page, "md x").locator(".answer")
        expect(live.locator("strong")).to_have_text("110")  # as it streamed: rendered
        expect(ask(page, "add 41").locator(".answer")).to_have_text("result 42")
        thread_id = _thread_of(page)

        page.click("#new-thread")
        page.locator(f'#thread-list .thread-item[data-thread-id="{thread_id}"] button').click()
        past = page.locator("article.run.past")
        expect(past).to_have_count(2)
        rendered = past.nth(0).locator(".answer")
        expect(rendered).to_have_class("answer markdown")
        expect(rendered.locator("strong")).to_have_text("110")
        expect(rendered.locator("table td")).to_have_text(["Paris", "2.1"])
        expect(rendered.locator('a[href="https://example.org/docs"]')).to_have_attribute(
            "rel", "noopener noreferrer"
        )
        expect(rendered.locator("script, img")).to_have_count(0)
        expect(rendered.locator('a[href^="javascript"]')).to_have_count(0)
        expect(rendered).to_contain_text("<script>")  # raw HTML shown as text, never run
        assert page.title() == title  # nothing hostile ran
        expect(past.nth(1).locator(".answer")).to_have_text("result 42")
        page.screenshot(path=str(tmp_path / "reopened.png"), full_page=True)

        # The newest version's messages: the tool call readable, the answers rendered too.
        newest = page.locator("#version-list .version").first
        newest.locator("button").click()
        messages = page.locator("#version-messages")
        calls = messages.locator("pre.tool-call")
        expect(calls).to_have_text([READABLE_ADD])
        expect(messages).not_to_contain_text("arguments_error")
        expect(messages).not_to_contain_text("raw_arguments")
        expect(messages.locator("li.message[data-role=assistant] .content.markdown strong")).to_have_text(
            "110"
        )
        page.screenshot(path=str(tmp_path / "version-messages.png"), full_page=True)

        # The inspector reads the run's messages in OpenAI's shape: the same readable call.
        expect(ask(page, "add 4").locator(".answer")).to_have_text("result 5")
        page.click("#inspect")
        expect(page.locator("#inspector pre.tool-call")).to_have_text(
            [READABLE_ADD, READABLE_ADD.replace("41", "4")]
        )
    for name in ("reopened.png", "version-messages.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_the_thread_api_renders_answers_and_redacts_messages(tmp_path: Path) -> None:
    with (
        live_server(console_app(checkpoint=str(tmp_path / "runs.db"))) as url,
        httpx.Client(base_url=url, timeout=PATIENCE) as http,
    ):
        created = http.post("/api/runs", json={"input": f"md {SECRET}"}).json()
        thread_id = created["thread_id"]
        wait_until(
            lambda: http.get(f"/api/runs/{created['run_id']}").json()["status"] == "success", "the run to end"
        )
        view_json = http.get(f"/api/threads/{thread_id}").json()
        seq = http.get(f"/api/threads/{thread_id}/history").json()["versions"][0]["seq"]
        version = http.get(f"/api/threads/{thread_id}/checkpoints/{seq}").json()
    for messages in (view_json["messages"], version["messages"]):
        assert SECRET not in json.dumps(messages), messages
        [user] = [m for m in messages if m["role"] == "user"]
        assert user["content"] == "md ***" and "html" not in user
        [answer] = [m for m in messages if m["role"] == "assistant"]
        assert answer["content"] == HOSTILE and answer["html"] == answer_html(HOSTILE)
