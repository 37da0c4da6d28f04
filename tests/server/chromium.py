"""The system's Chromium for the browser tests (Debian's `chromium`, which `.ci/run` installs;
Playwright's own browser download is never used): its path, or a skip saying why there is none."""

from __future__ import annotations

import shutil

import pytest


def system_chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no Chromium on PATH (Debian: apt-get install chromium; .ci/run installs it)")
