"""Lets the MCP tests import `mcp_helpers` beside them; one HTTP test server for the session."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mcp_helpers import HTTPServer


@pytest.fixture(scope="session")
def http_server() -> Iterator[HTTPServer]:
    server = HTTPServer()
    yield server
    server.stop()
