"""The console's browser tests share one Chromium per module (`browser`) and a fresh page each
(`page`), which fails the test on any error the page reports beyond the expected ones."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.server.chromium import system_chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from tests.server import browser_page  # here: a missing Playwright skips only its users

    executable = system_chromium()
    with browser_page.sync_api.sync_playwright() as playwright:
        try:
            chromium = playwright.chromium.launch(executable_path=executable, headless=True)
        except browser_page.sync_api.Error as exc:
            pytest.skip(f"Chromium at {executable} does not start under Playwright: {exc}")
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    from tests.server import browser_page

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(browser_page.TIMEOUT_MS)
    browser_page.expect.set_options(timeout=browser_page.TIMEOUT_MS)
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
