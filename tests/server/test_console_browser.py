"""The web console in a real browser: headless Chromium (the system's, driven by Playwright)
against uvicorn on 127.0.0.1 serving a ReAct agent on the scripted model.

Skipped, saying why, only where no Chromium or no Playwright can be had (.ci/run installs
Debian's `chromium`; the dev extra pins `playwright`, whose own browser download is never used).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from chromium import system_chromium
from console_agent import console_app, gate
from guarded_agent import environment, responder, write_agent
from sse_live import live_server

from jianmu_like.cli._serve import agent_factory
from jianmu_like.server import create_app
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')"
)
expect = sync_api.expect
TIMEOUT_MS = PATIENCE * 1000


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = system_chromium()
    with sync_api.sync_playwright() as playwright:
        try:
            chromium = playwright.chromium.launch(executable_path=executable, headless=True)
        except sync_api.Error as exc:
            pytest.skip(f"Chromium at {executable} does not start under Playwright: {exc}")
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    expect.set_options(timeout=TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    expected = ["status of 401"]  # what the browser logs when the page first tries without a token
    marker = request.node.get_closest_marker("console_errors")  # a test's deliberate bad requests
    expected.extend(marker.args if marker is not None else ())
    yield page
    context.close()
    errors = [e for e in errors if not any(x in e for x in expected)]
    assert errors == [], f"the page reported errors: {errors}"


def ask(page: Any, question: str) -> Any:
    """Ask in the page; the locator of that run's article."""
    page.fill("#question", question)
    page.click("#ask")
    run = page.locator("article.run").last
    expect(run.locator(".question")).to_have_text(question)
    return run


def test_ask_watch_tools_approve_and_follow_up(page: Any, tmp_path: Path) -> None:
    gate.clear()
    try:
        with live_server(console_app()) as url:
            page.goto(url + "/")
            expect(page.locator('#tree .node[data-id="0.0.1"] .type')).to_have_text("ToolExecutor")

            # A tool call: its card, the streamed answer, the usage footer, the tree's statuses.
            run = ask(page, "add 41")
            card = run.locator('.tool-card[data-tool="add"]')
            expect(card.locator(".args")).to_contain_text('"a": 41')
            expect(card.locator(".observation")).to_have_text("42")
            expect(run.locator(".answer")).to_have_text("result 42")
            assert int(run.locator(".answer").get_attribute("data-deltas") or 0) >= 2  # streamed
            expect(page.locator("#run-status")).to_have_attribute("data-status", "success")
            expect(page.locator("#usage")).to_contain_text("tokens")
            expect(page.locator("#usage")).to_contain_text("2 iterations")
            for node_id in ("0", "0.0.0", "0.0.1"):
                expect(page.locator(f'#tree .node[data-id="{node_id}"]')).to_have_attribute(
                    "data-status", "SUCCESS"
                )

            # A guarded call waits for approval; Approve resumes the run to its answer.
            run = ask(page, "delete notes.txt")
            approval = page.locator("#approvals .approval")
            expect(approval).to_contain_text("delete_file")
            expect(approval).to_contain_text("notes.txt")
            expect(page.locator("#run-status")).to_have_attribute("data-status", "suspended")
            for node_id in ("0", "0.0.1"):  # the tool node waits for the human
                expect(page.locator(f'#tree .node[data-id="{node_id}"]')).to_have_attribute(
                    "data-status", "RUNNING"
                )
            page.screenshot(path=str(tmp_path / "console-approval.png"), full_page=True)
            page.reload()  # a page opened later finds the waiting run and replays it
            run = page.locator("article.run").last
            expect(run.locator(".question")).to_have_text("delete notes.txt")
            expect(approval).to_contain_text("notes.txt")
            approval.locator("button.approve").click()
            expect(page.locator("#approvals")).to_be_hidden()
            card = run.locator('.tool-card[data-tool="delete_file"]')
            expect(card.locator(".observation")).to_have_text("deleted notes.txt")
            expect(run.locator(".answer")).to_have_text("result deleted notes.txt")
            expect(page.locator("#run-status")).to_have_attribute("data-status", "success")

            # A follow-up sent while a tool works reaches the model at the next iteration.
            run = ask(page, "wait A")
            expect(run.locator('.tool-card[data-tool="wait"] .state')).to_have_text("running")
            page.fill("#followup", "also say hello")
            page.click("#send-followup")
            expect(run.locator(".note.inject").first).to_contain_text("follow-up queued: also say hello")
            gate.set()
            expect(run.locator(".answer")).to_have_text("noted: [USER INTERRUPT] also say hello")
            expect(page.locator("#run-status")).to_have_attribute("data-status", "success")
            expect(page.locator("#send-followup")).to_be_disabled()
            page.screenshot(path=str(tmp_path / "console.png"), full_page=True)
    finally:
        gate.set()
    assert (tmp_path / "console.png").stat().st_size > 0


def test_a_protected_server_takes_the_token_from_the_fragment_or_asks(page: Any) -> None:
    token = "s3cret-console-token"
    with live_server(console_app(token=token)) as url:
        page.goto(url + "/")  # no token: the page asks for it
        expect(page.locator("#token-panel")).to_be_visible()
        page.fill("#token-input", token)
        page.click("#token-form button")
        expect(page.locator('#tree .node[data-id="0"]')).to_be_visible()
        assert token not in page.content()

        page.goto(url + "/#token=" + token)  # the fragment never reaches the server
        expect(page.locator('#tree .node[data-id="0"]')).to_be_visible()
        assert "token" not in page.url  # taken out of the address bar and history
        run = ask(page, "add 1")
        expect(run.locator(".answer")).to_have_text("result 2")
        expect(page.locator("#token-panel")).to_be_hidden()


def test_a_decision_from_the_command_line_reaches_the_console(
    page: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The console shows the approval under the id `jianmu-like approvals` takes; an operator's
    decision on the server's store closes the box and the run finishes."""
    agent, store = write_agent(tmp_path, module="console_effects"), str(tmp_path / "runs.db")
    with ScriptedOpenAIServer(responder) as model:
        monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        factory, cleanups, _ = agent_factory(str(agent), checkpoint=store)
        with live_server(create_app(factory, on_shutdown=cleanups)) as url:
            page.goto(url + "/")
            run = ask(page, "/data/x")
            approval = page.locator("#approvals .approval")
            expect(approval).to_contain_text("delete_file")
            [pending] = httpx.get(url + "/api/approvals", timeout=20).json()["approvals"]
            expect(approval).to_contain_text(f"({pending['id']})")
            decided = subprocess.run(
                [sys.executable, "-m", "jianmu_like", "approvals", "approve", store, pending["thread_id"],
                 pending["id"]],
                cwd=tmp_path, env=environment(model.base_url), capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert decided.returncode == 0, decided.stderr
            expect(page.locator("#approvals")).to_be_hidden(timeout=120_000)
            expect(run.locator(".answer")).to_have_text("result: deleted /data/x", timeout=120_000)
            expect(run.locator(".note.inject", has_text="by an operator")).to_have_count(1)
            expect(page.locator("#run-status")).to_have_attribute("data-status", "success")
    assert (tmp_path / "effects.log").read_text().splitlines() == ["delete /data/x"]


def test_stop_cancels_a_run_and_deny_sends_a_reason_showing_the_refused_arguments(
    page: Any, tmp_path: Path
) -> None:
    gate.clear()
    try:
        with live_server(console_app()) as url:
            page.goto(url + "/")
            expect(page.locator("#stop")).to_be_disabled()
            run = ask(page, "wait slow")
            expect(run.locator('.tool-card[data-tool="wait"] .state')).to_have_text("running")
            expect(page.locator("#stop")).to_be_enabled()
            page.click("#stop")
            expect(page.locator("#run-status")).to_have_text("cancelled")
            expect(page.locator("#usage .badge")).to_have_text("cancelled")
            expect(run).to_contain_text("cancelled by a client")
            expect(page.locator("#stop")).to_be_disabled()
            expect(page.locator("#ask")).to_be_enabled()
            page.screenshot(path=str(tmp_path / "stopped.png"))

            run = ask(page, "delete notes.txt")
            box = page.locator("#approval-list .approval")
            box.locator("input.deny-reason").fill("keep my notes")
            box.locator("button.deny").click()
            card = run.locator('.tool-card[data-tool="delete_file"]')
            expect(card.locator(".state")).to_have_text("denied")
            expect(card.locator("pre.args")).to_contain_text('"path": "notes.txt"')
            expect(card.locator("pre.error-text")).to_contain_text("keep my notes")
            expect(run).to_contain_text("delete_file: denied: keep my notes")
            page.screenshot(path=str(tmp_path / "denied.png"))
    finally:
        gate.set()


@pytest.mark.console_errors(  # the artifact's sandboxed frame refuses its script: the point
    "Blocked script execution in 'about:srcdoc' because the document's frame is sandboxed"
)
def test_artifacts_are_shown_sandboxed_and_downloadable(page: Any, tmp_path: Path) -> None:
    from artifact_agent import artifact_app

    with live_server(artifact_app()) as url:
        page.goto(url + "/")
        title = page.title()
        run = ask(page, "make them")
        frame = run.locator('.artifact[data-name="chart.html"] iframe')
        expect(frame).to_have_attribute("sandbox", "")  # no allow-same-origin, no allow-scripts
        expect(page.frame_locator('.artifact[data-name="chart.html"] iframe').locator("h1")).to_have_text(
            "Sales chart"
        )
        image = run.locator('.artifact[data-name="dot.png"] img')
        expect(image).to_be_visible()
        page.wait_for_function("img => img.complete && img.naturalWidth === 1", arg=image.element_handle())
        expect(run.locator('.artifact[data-name="cities.csv"] pre')).to_contain_text("Paris,2.1")
        with page.expect_download() as download:
            run.locator('.artifact[data-name="cities.csv"] a.download').dispatch_event("click")
        assert download.value.suggested_filename == "cities.csv"
        saved = tmp_path / "cities.csv"
        download.value.save_as(saved)
        assert saved.read_text() == "city,people\nParis,2.1\n"
        assert page.title() == title  # the artifact's script never ran
        page.screenshot(path=str(tmp_path / "artifacts.png"))
