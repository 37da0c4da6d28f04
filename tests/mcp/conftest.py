"""One HTTP MCP test server for the session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.mcp.mcp_helpers import HTTPServer


@pytest.fixture(scope="session")
def http_server() -> Iterator[HTTPServer]:
    server = HTTPServer()
    yield server
    server.stop()
