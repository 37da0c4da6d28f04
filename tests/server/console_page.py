"""What the console's browser tests share: Playwright's `expect` and `ask` (the `browser` and
`page` fixtures are in conftest.py, which imports Playwright only when a test asks for them).

Skipped, saying why, only where no Chromium or no Playwright can be had (.ci/run installs
Debian's `chromium`; the dev extra pins `playwright`, whose own browser download is never used).
"""

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
