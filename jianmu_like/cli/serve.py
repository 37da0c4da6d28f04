"""`jianmu-like serve AGENT.yaml`: the agent behind the HTTP/SSE API (jianmu_like.server).

Without a checkpoint store every conversation is a cheap `Conversation` of one `AgentTemplate`
(trees pooled, cloned from the file's agent); with `--checkpoint` each conversation is a full
agent saving its runs into the store (resumable by `jianmu-like resume`).
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from .common import CliError

if TYPE_CHECKING:
    from rich.console import Console


def serve_command(args: argparse.Namespace, console: Console, errors: Console) -> int:
    """Serve until Ctrl-C; exit 2 when the agent file or the bind is refused."""
    from ..server.security import TOKEN_ENV, InsecureBindError, check_bind

    token: str | None = args.token or os.environ.get(TOKEN_ENV) or None
    try:
        check_bind(args.host, token)
    except InsecureBindError as exc:
        raise CliError(str(exc)) from None

    import uvicorn

    from ..agent import Agent
    from ..agentfile.loader import load_agent
    from ..checkpoint.target import open_checkpointer, store_label
    from ..server.app import Cleanup, create_app
    from ..template import AgentTemplate
    from .run import enable_streaming

    enable_streaming()
    path, modules = args.agent_file, args.allow_module
    first = load_agent(path, allow_modules=modules)  # errors in the file surface before binding
    cleanups: list[Cleanup] = []
    if args.checkpoint:
        store = open_checkpointer(args.checkpoint)

        spare = [first]

        def build() -> Agent:
            agent = spare.pop() if spare else load_agent(path, allow_modules=modules)
            agent.use_checkpointer(store)
            return agent

        async def close_store() -> None:
            store.close()

        cleanups.append(close_store)
        where = f"runs saved in {store_label(args.checkpoint)}"
    else:
        template = AgentTemplate.from_prototype(
            first.root,
            first.state_manager.schema,
            namespace=first.namespace,
            output_namespace=first.output_namespace,
        )
        build = template.conversation
        cleanups.append(template.aclose)
        where = "conversations kept in memory"
    app = create_app(build, token=token, max_ticks=args.max_ticks, on_shutdown=cleanups)
    host = f"[{args.host}]" if ":" in args.host else args.host
    console.print(f"serving {path} on http://{host}:{args.port}/ ({where}; Ctrl-C to stop)")
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
