"""`jianmu-like serve AGENT.yaml`: the agent behind the HTTP/SSE API (jianmu_like.server).

Without a checkpoint store every conversation is a cheap `Conversation` of one `AgentTemplate`
(trees pooled, cloned from the file's agent); with `--checkpoint` each conversation is a full
agent saving its runs into the store (resumable by `jianmu-like resume`).
"""

from __future__ import annotations

import argparse
import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ._common import EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED, CliError
from ._signals import recorded_stop_signals

if TYPE_CHECKING:
    from rich.console import Console

    from .._agent import Agent
    from .._run.protocol import AgentLike
    from ..server._app import Cleanup
    from ..server._runs import AgentFactory
    from ..telemetry._hub import Subscriber


def agent_factory(
    path: str, *, allow_modules: Sequence[str] = (), checkpoint: str | None = None
) -> tuple[AgentFactory, list[Cleanup], str]:
    """The per-conversation agent factory for an agent file, what to close at shutdown, and a
    phrase saying where conversations live. The file is loaded here, so its errors come first."""
    from .._template import AgentTemplate
    from ..agentfile._loader import load_agent
    from ..checkpoint._target import open_checkpointer, store_label

    first = load_agent(path, allow_modules=allow_modules)
    if checkpoint is None:
        template = AgentTemplate.from_agent(first)
        return template.conversation, [template.aclose], "conversations kept in memory"
    store = open_checkpointer(checkpoint)
    spare = [first]

    def build() -> Agent:
        agent = spare.pop() if spare else load_agent(path, allow_modules=allow_modules)
        agent.use_checkpointer(store)
        return agent

    async def close_store() -> None:
        store.close()

    return build, [close_store], f"runs saved in {store_label(checkpoint)}"


def traced(factory: AgentFactory, subscriber: Subscriber) -> AgentFactory:
    """`factory` whose every conversation reports its runs to `subscriber` (one for all: the
    spans of concurrent runs are told apart by run id)."""

    def build() -> AgentLike:
        agent = factory()
        agent.telemetry.subscribe(subscriber)
        return agent

    return build


def serve_command(args: argparse.Namespace, console: Console, errors: Console) -> int:
    """Serve until Ctrl-C (exit 130) or SIGTERM (exit 143), both a graceful shutdown that stops
    the agents' MCP servers; exit 2 when the agent file or the bind is refused."""
    from ..server._security import TOKEN_ENV, InsecureBindError, check_bind

    token: str | None = args.token or os.environ.get(TOKEN_ENV) or None
    try:
        check_bind(args.host, token)
    except InsecureBindError as exc:
        raise CliError(str(exc)) from None

    import uvicorn

    from .._config import get_config
    from ..agentfile._loader import validate_agent_file
    from ..server._app import create_app
    from ._run import enable_streaming
    from ._tracing import start_tracing

    settings = get_config().server
    tracing = start_tracing(args)
    enable_streaming()
    factory, cleanups, where = agent_factory(
        args.agent_file, allow_modules=args.allow_module, checkpoint=args.checkpoint
    )
    if tracing is not None:
        factory = traced(factory, tracing)
    app = create_app(
        factory,
        token=token,
        max_ticks=args.max_ticks,
        on_shutdown=cleanups,
        max_runs=args.max_runs or None,  # 0: no limit
        run_ttl=args.run_ttl or None,
        allowed_hosts=[*settings.allowed_hosts, *args.allowed_host],
        max_body_bytes=args.max_body_bytes or settings.max_body_bytes,
        model_name=Path(args.agent_file).stem,  # each served agent file is a model of /v1/
        a2a=validate_agent_file(args.agent_file, allow_modules=args.allow_module).a2a_card(),
    )
    host = f"[{args.host}]" if ":" in args.host else args.host
    console.print(f"serving {args.agent_file} on http://{host}:{args.port}/ ({where}; Ctrl-C to stop)")
    if token:  # the token itself is never printed: it would land in logs
        console.print(
            f"web console: http://{host}:{args.port}/#token=<token> (or paste the token when asked)"
        )
    else:
        console.print(f"web console: http://{host}:{args.port}/")
    with recorded_stop_signals() as stops:
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    if tracing is not None:
        from ..telemetry.otel_setup import flush_tracing

        flush_tracing()
    if not stops:
        return EXIT_OK
    terminated = signal.SIGTERM in stops
    name = "SIGTERM" if terminated else "Ctrl-C"
    errors.print(f"stopped ({name}): runs in progress were cancelled, tool providers closed")
    return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
