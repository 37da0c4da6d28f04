"""Serve an SDK `MCPServer` over stdio in the handshake era only (2025-11-25 and before).

The SDK's own `run()` serves both eras (the client's first request decides). A server that
asks the client mid-call (sampling, elicitation, roots as requests of its own) or runs core
tasks is a server of the handshake era: 2026-07-28 has neither. Serving it this way is what a
server of that revision does with a 2026-07-28 client's `server/discover` probe (it is no
`initialize`, so it is refused), and what the client's fallback must handle.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server


def run_legacy(server: MCPServer[Any]) -> None:
    async def serve() -> None:
        lowlevel = server._lowlevel_server
        options = lowlevel.create_initialization_options()
        async with stdio_server() as (read, write), lowlevel.lifespan(lowlevel) as state:
            await serve_loop(lowlevel, read, write, lifespan_state=state, init_options=options)

    anyio.run(serve)
