"""`jianmu-like mcp login|logout AGENT_FILE SERVER`: OAuth with an agent file's MCP servers.

`login` runs the authorization-code flow in a browser (the URL is printed too, for a machine
without one) with its callback on 127.0.0.1, or fetches a token with a `client_credentials`
server's own credentials, and stores the tokens where the server's `auth.store` says (the user's
token file, readable by the user only); `logout` forgets them. See `tools.mcp._login`.

`jianmu-like mcp serve AGENT_FILE [--http]`: the agent as an MCP server (`server._mcp_server`);
over stdio nothing but the protocol reaches stdout (what the command says goes to stderr).
"""

from __future__ import annotations

import argparse
import asyncio

from rich.console import Console
from rich.text import Text

from ..tools.mcp._config import MCPConfigError
from ..tools.mcp._content import MCPServerError
from ._common import EXIT_OK, CliError


def mcp_command(args: argparse.Namespace, console: Console, errors: Console) -> int:
    if args.action == "serve":
        return serve_mcp_command(args, errors)
    from ..agentfile._loader import validate_agent_file
    from ..agentfile._shipped import agent_file_path
    from ..tools.mcp._login import find_server, login, logout, loopback_authorize
    from ._inspect import mcp_targets

    # The file is checked as `validate` checks it; its servers are those of its sub-agents too.
    spec = validate_agent_file(agent_file_path(args.agent_file), allow_modules=args.allow_module)
    try:
        config = find_server(mcp_targets(spec), args.server, where=args.agent_file)
        if args.action == "logout":
            console.print(Text(logout(config), style="green"))
            return EXIT_OK

        def say(text: str) -> None:
            errors.print(Text(text))

        authorize = None
        if config.auth is not None:
            authorize = loopback_authorize(
                config.auth.callback_port, say=say, open_browser=not args.no_browser
            )
        done = asyncio.run(login(config, say=say, authorize=authorize))
    except (MCPConfigError, MCPServerError) as exc:
        raise CliError(str(exc)) from None
    console.print(Text(done, style="green"))
    return EXIT_OK


def serve_mcp_command(args: argparse.Namespace, errors: Console) -> int:
    """Serve until the client closes stdio, or (--http) until Ctrl-C / SIGTERM."""
    import os

    from ..agentfile._loader import validate_agent_file
    from ..agentfile._shipped import agent_file_path
    from ..server._mcp_server import AgentTool, http_app, serve_stdio
    from ..server._runs import RunRegistry
    from ..server._security import TOKEN_ENV, InsecureBindError, check_bind
    from ._run import enable_streaming
    from ._serve import agent_factory

    token: str | None = (args.token or os.environ.get(TOKEN_ENV) or None) if args.http else None
    if args.http:
        try:
            check_bind(args.host, token)
        except InsecureBindError as exc:
            raise CliError(str(exc)) from None
    path = agent_file_path(args.agent_file)
    spec = validate_agent_file(path, allow_modules=args.allow_module)
    enable_streaming()
    factory, cleanups, where = agent_factory(
        str(path), allow_modules=args.allow_module, checkpoint=args.checkpoint
    )
    tool = AgentTool(
        RunRegistry(factory),
        name=spec.name or path.stem,
        description=spec.description or "",
        question_timeout=args.question_timeout,
        inputs=spec.inputs,
    )

    async def cleanup() -> None:
        for close in cleanups:
            await close()

    if not args.http:
        errors.print(Text(f"serving {args.agent_file} as the MCP tool {tool.name!r} on stdio ({where})"))

        async def main() -> None:
            try:
                await serve_stdio(tool)
            finally:
                await cleanup()

        asyncio.run(main())
        return EXIT_OK

    import uvicorn

    from .._base.config import get_config

    allowed = [*get_config().server.allowed_hosts, *args.allowed_host]
    app = http_app(tool, token=token, allowed_hosts=allowed, on_shutdown=[cleanup])
    host = f"[{args.host}]" if ":" in args.host else args.host
    where = f"http://{host}:{args.port}/mcp ({where})"
    errors.print(Text(f"serving {args.agent_file} as the MCP tool {tool.name!r} on {where}"))
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return EXIT_OK
