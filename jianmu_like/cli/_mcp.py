"""`jianmu-like mcp login|logout AGENT_FILE SERVER`: OAuth with an agent file's MCP servers.

`login` runs the authorization-code flow in a browser (the URL is printed too, for a machine
without one) with its callback on 127.0.0.1, or fetches a token with a `client_credentials`
server's own credentials, and stores the tokens where the server's `auth.store` says (the user's
token file, readable by the user only); `logout` forgets them. See `tools.mcp._login`.
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
