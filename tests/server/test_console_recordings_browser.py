"""A recording opened in the console, in headless Chromium: the server (`--recordings DIR`, or a
conversation's kept runs) replays it, the page draws the tree of the agent the recording names
(not the served one) and follows the replay as a live run, so its timeline scrubs through the
recorded run's steps — statuses, the state's changes, the calls, the model's request. A changed
agent's replay says it diverged, and its later steps are the recorded events'.

`JIANMU_DOC_SHOTS=1` refreshes the picture in docs/guides/debugger.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from jianmu_like import Agent, ReActConfig, create_react_node
from jianmu_like.checkpoint import SQLiteCheckpointer
from jianmu_like.server import create_app
from jianmu_like.testing import PATIENCE, scripted_client
from tests.server.browser_page import expect
from tests.server.console_agent import add, build_root, record, responder
from tests.server.sse_live import live_server, read_events
from tests.server.test_console_tree_browser import shot


def served() -> Agent:
    """The served agent: another tree (its nodes named `Served.*`) than the recordings'."""
    root = create_react_node(
        name="Served",
        model_client=scripted_client(responder),
        tools=[add],
        config=ReActConfig(max_iterations=3),
    )
    return Agent(root, log_events=False)


def test_a_recording_opened_drawn_and_scrubbed(page: Any, tmp_path: Path) -> None:
    record(tmp_path / "add-7.jsonl", "add 7")
    record(tmp_path / "changed.jsonl", "add 7", entry="tests.server.console_agent:changed")
    with live_server(create_app(served, recordings=tmp_path, allow_modules=["tests.server"])) as url:
        page.goto(url + "/")
        tools = page.locator('#tree .node[data-id="0.0.1"] .name')
        expect(tools).to_have_text("Served.Tools")
        listed = page.locator("#recording-list button.recording")
        expect(listed).to_have_count(2)

        page.locator('#recording-list button[data-name="add-7.jsonl"]').click()
        run = page.locator("article.run").last
        expect(run.locator(".question")).to_have_text("replay of add-7.jsonl")
        expect(run.locator(".answer")).to_have_text("result 8")
        expect(page.locator("#run-status")).to_have_attribute("data-status", "success")
        expect(tools).to_have_text("ReActAgent.Tools")  # the recording's agent, loaded afresh
        expect(page.locator("#tree-caption")).to_contain_text("replay of add-7.jsonl")

        # Step by step through the replayed run, as through a live one.
        expect(page.locator("#timeline-label")).to_contain_text("live")
        steps = int(page.locator("#timeline-range").get_attribute("max") or 0) + 1
        detail = page.locator("#timeline-detail")
        page.locator("#timeline-range").fill("0")
        expect(page.locator("#timeline-label")).to_have_text(f"step 1 of {steps}")
        expect(page.locator('#tree .node[data-status="SUCCESS"]')).to_have_count(0)
        tool_step = None
        for index in range(steps):
            page.locator("#timeline-next").click() if index else None
            expect(page.locator("#timeline-label")).to_have_text(f"step {index + 1} of {steps}")
            if page.locator('#tree .node[data-id="0.0.1"]').get_attribute("data-status") == "RUNNING":
                tool_step = index
                break
        assert tool_step is not None
        expect(detail).to_contain_text('iteration 1: tool add called with {"a":7,"b":1}')
        expect(detail).to_contain_text("iteration 1: tool add → 8")
        expect(detail.locator('li.state-change[data-key="actions"]').first).to_contain_text('"a":7')
        page.locator('#tree .tree-tools button[data-action="fit"]').click()
        shot(page, tmp_path, "recording.png")
        request = detail.locator("li.request details")
        request.locator("summary").click()
        expect(request.locator("pre.request-body")).to_contain_text('"content": "add 7"')
        page.locator("#timeline-live").click()
        expect(page.locator('#tree .node[data-id="0"]')).to_have_attribute("data-status", "SUCCESS")

        # A recording whose agent changed since: the replay says where it diverged, and its
        # later steps are what the recorded events say.
        page.locator('#recording-list button[data-name="changed.jsonl"]').click()
        run = page.locator("article.run").last
        expect(run.locator(".question")).to_have_text("replay of changed.jsonl")
        expect(run.locator(".divergence")).to_contain_text("diverged from the recording")
        expect(run.locator(".run-error")).to_contain_text("model request differs")
        expect(page.locator("#run-status")).to_have_attribute("data-status", "failure")
        page.locator("#timeline-range").fill(page.locator("#timeline-range").get_attribute("max") or "0")
        expect(detail.locator("li.recorded")).to_contain_text(
            "from the recording (the replay diverged before)"
        )

        # A new conversation draws the served agent's tree again.
        page.locator("#new-thread").click()
        expect(tools).to_have_text("Served.Tools")
        page.close()  # before the server stops: the page still reads its breakpoints and rules


def test_a_conversations_recorded_run_opened_like_a_folders(page: Any, tmp_path: Path) -> None:
    """A conversation's kept runs (`keep_recordings`) listed under it in plain words, one that
    cannot be replayed with the reason and no button, an ended one opened as a folder's is."""
    db = str(tmp_path / "runs.db")

    def build() -> Agent:
        return Agent(
            build_root(),
            checkpointer=db,
            keep_recordings=True,
            source="tests.server.console_agent:replayable",
            log_events=False,
        )

    with live_server(create_app(build, allow_modules=["tests.server"])) as url:
        with httpx.Client(base_url=url, timeout=PATIENCE) as http:
            run_id = http.post("/api/runs", json={"input": "add 7", "thread_id": "kept"}).json()["run_id"]
            read_events(http, run_id)
            [kept] = http.get("/api/threads/kept/recordings").json()["recordings"]
        store = SQLiteCheckpointer(db)
        try:  # what a process killed mid-run leaves
            store.append_recording("kept", "killed", b"", status="incomplete")
        finally:
            store.close()
        page.goto(url + "/")
        page.locator('#thread-list .thread-item[data-thread-id="kept"] button').click()
        rows = page.locator("#thread-recording-list li")
        expect(rows).to_have_count(2)
        killed = page.locator('#thread-recording-list li[data-run-id="killed"]')
        expect(killed).to_contain_text("incomplete (its run stopped mid-way): cannot be replayed")
        expect(killed.locator("button")).to_have_count(0)
        ended = page.locator(f'#thread-recording-list li[data-run-id="{kept["run_id"]}"]')
        expect(ended).to_contain_text("answered")
        ended.locator("button").click()
        run = page.locator("article.run").last
        expect(run.locator(".question")).to_have_text(f"replay of run {kept['run_id']} of kept")
        expect(run.locator(".answer")).to_have_text("result 8")
        expect(page.locator("#run-status")).to_have_attribute("data-status", "success")
        expect(page.locator("#tree-caption")).to_contain_text(f"replay of run {kept['run_id']} of kept")
        expect(page.locator("#timeline-label")).to_contain_text("live")
        page.close()  # before the server stops: the page still reloads the conversations
