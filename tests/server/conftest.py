"""Lets tests import the helper modules beside them (sse_live.py...), and gives the console's
browser tests their `browser` (headless Chromium, the system's, driven by Playwright; one per
module) and `page` (one per test; an error the page logs fails the test, except those a
`console_errors` marker names)."""

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from chromium import system_chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from console_page import sync_api

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
    from console_page import TIMEOUT_MS, expect

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
