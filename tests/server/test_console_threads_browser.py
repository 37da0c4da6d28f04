"""Threads in the console, in a real browser (headless Chromium) against a server with a
checkpoint store: the list of conversations, one conversation's history, the state saved in each
version (messages, the tree's statuses, pending approvals), forking from one, and the state
inspector of the current run. Screenshots go to the test's tmp dir."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from jianmu_like.testing import PATIENCE
from tests.server.browser_page import ask, expect
from tests.server.console_agent import console_app
from tests.server.sse_live import live_server


def versions(url: str, thread_id: str) -> list[dict[str, Any]]:
    answer = httpx.get(f"{url}/api/threads/{thread_id}/history", timeout=PATIENCE)
    return list(answer.json()["versions"])


def test_threads_history_versions_and_a_fork_from_the_console(page: Any, tmp_path: Path) -> None:
    with live_server(console_app(checkpoint=str(tmp_path / "runs.db"))) as url:
        page.goto(url + "/")
        expect(page.locator("#thread-list")).to_contain_text("no conversation saved yet")
        expect(ask(page, "add 41").locator(".answer")).to_have_text("result 42")
        expect(ask(page, "add 1").locator(".answer")).to_have_text("result 2")
        thread_id = (page.locator("#thread").text_content() or "").removeprefix("conversation ")
        item = page.locator(f'#thread-list .thread-item[data-thread-id="{thread_id}"]')
        expect(item).to_contain_text("8 messages")

        # A conversation, opened from the list on a fresh page: its runs, its versions.
        page.click("#new-thread")
        item.locator("button").click()
        past = page.locator("article.run.past")
        expect(past).to_have_count(2)
        expect(past.nth(0).locator(".question")).to_have_text("add 41")
        expect(past.nth(1).locator(".answer")).to_have_text("result 2")
        saved = versions(url, thread_id)
        expect(page.locator("#version-list .version")).to_have_count(len(saved))

        # The state at the first run's end: its messages and the tree's statuses then.
        first_end = min(v["seq"] for v in saved if v["status"] == "success")
        page.locator(f'#version-list .version[data-seq="{first_end}"] button').click()
        expect(page.locator("#version-title")).to_contain_text(f"v{first_end}")
        messages = page.locator("#version-messages")
        expect(messages).to_contain_text("result 42")
        expect(messages.locator("li")).to_have_count(4)
        expect(messages).not_to_contain_text("add 1")
        expect(page.locator('#tree .node[data-id="0"]')).to_have_attribute("data-status", "SUCCESS")
        expect(page.locator("#tree-caption")).to_contain_text(f"v{first_end}")
        page.screenshot(path=str(tmp_path / "version.png"), full_page=True)

        # Fork from it: the next question continues that version, not the newest.
        page.click("#fork")
        expect(page.locator("#fork-note")).to_contain_text(f"forks {thread_id} from version {first_end}")
        run = ask(page, "add 5")
        expect(run.locator(".answer")).to_have_text("result 6")
        expect(page.locator("#fork-note")).to_be_hidden()
        page.click("#inspect")  # the state inspector: this run's messages
        inspector = page.locator("#inspector")
        expect(inspector).to_contain_text("messages (8)")
        expect(inspector.locator("li.message[data-role=user]")).to_have_text(["useradd 41", "useradd 5"])
        forked = [
            v for v in versions(url, thread_id) if v["parent_seq"] == first_end and v["seq"] > first_end + 1
        ]
        assert len(forked) == 1, versions(url, thread_id)
        item.locator("button").click()
        expect(page.locator("#version-list")).to_contain_text(f"fork of v{first_end}")
        page.screenshot(path=str(tmp_path / "fork.png"), full_page=True)

        # A version that waits for an approval lists it; the inspector shows it while it waits.
        page.click("#new-thread")
        ask(page, "delete notes.txt")
        expect(page.locator("#approvals .approval")).to_contain_text("delete_file")
        page.click("#inspect")
        expect(inspector).to_contain_text("pending approvals")
        expect(inspector).to_contain_text("notes.txt")
        waiting_thread = (page.locator("#thread").text_content() or "").removeprefix("conversation ")
        page.locator("#approvals button.approve").click()
        expect(page.locator("#run-status")).to_have_attribute("data-status", "success")
        page.locator(f'#thread-list .thread-item[data-thread-id="{waiting_thread}"] button').click()
        [suspended] = [v for v in versions(url, waiting_thread) if v["status"] == "suspended"]
        page.locator(f'#version-list .version[data-seq="{suspended["seq"]}"] button').click()
        expect(page.locator("#version-pending")).to_contain_text("delete_file")
        expect(page.locator('#tree .node[data-id="0.0.1"]')).to_have_attribute("data-status", "RUNNING")
        page.screenshot(path=str(tmp_path / "pending-version.png"), full_page=True)
        page.click("#close-version")
        expect(page.locator("#version")).to_be_hidden()
        expect(page.locator('#tree .node[data-status="RUNNING"]')).to_have_count(0)
    for name in ("version.png", "fork.png", "pending-version.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_without_a_store_the_console_says_so_and_asks_nothing_it_cannot(page: Any) -> None:
    with live_server(console_app()) as url:
        page.goto(url + "/")
        expect(page.locator("#thread-list")).to_contain_text("keeps no checkpoint store")
        expect(ask(page, "add 1").locator(".answer")).to_have_text("result 2")
        page.click("#inspect")
        expect(page.locator("#inspector")).to_contain_text("messages (4)")
