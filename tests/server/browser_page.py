"""The console's page in headless Chromium, for the browser tests (their fixtures `browser` and
`page` are in conftest.py). Importing this skips the importing test module where Playwright is
not installed, saying why."""

from __future__ import annotations

from typing import Any

import pytest

from jianmu_like.testing import PATIENCE

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')"
)
expect = sync_api.expect
TIMEOUT_MS = PATIENCE * 1000


def ask(page: Any, question: str) -> Any:
    """Ask in the page; the locator of that run's article."""
    page.fill("#question", question)
    page.click("#ask")
    run = page.locator("article.run").last
    expect(run.locator(".question")).to_have_text(question)
    return run
