"""`jianmu-like serve AGENT.yaml`: the agent behind the HTTP/SSE API (jianmu_like.server).

Without a checkpoint store every conversation is a cheap `Conversation` of one `AgentTemplate`
(trees pooled, cloned from the file's agent); with `--checkpoint` each conversation is a full
agent saving its runs into the store (resumable by `jianmu-like resume`).
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ._common import EXIT_ADDRESS, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED, CliError
from ._signals import recorded_stop_signals

if TYPE_CHECKING:
    from rich.console import Console

    from .._run.agent import Agent
    from .._run.protocol import AgentLike
    from ..server._context import Cleanup
    from ..server._runs import AgentFactory
    from ..telemetry._hub import Subscriber


def agent_factory(
    path: str, *, allow_modules: Sequence[str] = (), checkpoint: str | None = None
) -> tuple[AgentFactory, list[Cleanup], str]:
    """The per-conversation agent factory for an agent file, what to close at shutdown, and a
    phrase saying where conversations live. The file is loaded here, so its errors come first."""
    from .._run.template import AgentTemplate
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


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to `host:port` for uvicorn to serve on, as uvicorn would bind it (reuse of
    an address in TIME_WAIT allowed); a `CliError` exiting EXIT_ADDRESS when it cannot be bound,
    before anything is printed, so a busy port never follows a banner that says "serving"."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            why = "the port is in use (another server listens there): stop it, or pass another --port"
        elif exc.errno == errno.EACCES:
            why = "permission denied (ports below 1024 need privileges): pass --port 1024 or above"
        else:
            why = f"{exc.strerror or exc} (is {host} an address of this machine? see --host)"
        raise CliError(f"cannot serve on {host}:{port}: {why}", code=EXIT_ADDRESS) from None
    sock.set_inheritable(True)
    return sock


def announce_models(factory: AgentFactory, console: Console, errors: Console) -> None:
    """Name the model(s) the served agent uses, and warn (never refuse: the server may come up
    later) when one cannot answer as configured, with the cause and what to do."""
    import asyncio

    from rich.text import Text

    from ..models._describe import check, clients_in

    clients = clients_in(factory().tree)

    async def probe_all() -> list[tuple[str, str | None]]:
        return [await check(client) for client in clients]

    for label, warning in dict.fromkeys(asyncio.run(probe_all())):
        console.print(f"model: {label}")
        if warning is not None:
            errors.print(Text(f"warning: {warning}", style="yellow"))


def serve_command(args: argparse.Namespace, console: Console, errors: Console) -> int:
    """Serve until Ctrl-C (exit 130) or SIGTERM (exit 143), both a graceful shutdown that stops
    the agents' MCP servers; exit 2 when the agent file or the bind is refused, 6 when the
    address cannot be listened on (a busy port), before the banner."""
    from ..server._security import TOKEN_ENV, InsecureBindError, check_bind

    token: str | None = args.token or os.environ.get(TOKEN_ENV) or None
    if args.recordings is not None and not Path(args.recordings).is_dir():
        raise CliError(f"--recordings {args.recordings}: not a directory")
    try:
        check_bind(args.host, token)
    except InsecureBindError as exc:
        raise CliError(str(exc)) from None

    import uvicorn

    from .._base.config import get_config
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
        recordings=args.recordings,
        allow_modules=args.allow_module,
    )
    sock = listening_socket(args.host, args.port)  # a busy port: said before any banner
    port = int(sock.getsockname()[1])  # --port 0: the one the system chose
    host = f"[{args.host}]" if ":" in args.host else args.host
    console.print(f"serving {args.agent_file} on http://{host}:{port}/ ({where}; Ctrl-C to stop)")
    announce_models(factory, console, errors)
    if token:  # the token itself is never printed: it would land in logs
        console.print(f"web console: http://{host}:{port}/#token=<token> (or paste the token when asked)")
    else:
        console.print(f"web console: http://{host}:{port}/")
    server = uvicorn.Server(uvicorn.Config(app, host=args.host, port=port, log_level="warning"))
    with recorded_stop_signals() as stops:
        server.run(sockets=[sock])
    sock.close()
    if not server.started and not stops:  # the app's startup failed (uvicorn logged why)
        raise CliError("the server did not start (see the error above)", code=EXIT_FAILED)
    if tracing is not None:
        from ..telemetry.otel_setup import flush_tracing

        flush_tracing()
    if not stops:
        return EXIT_OK
    terminated = signal.SIGTERM in stops
    name = "SIGTERM" if terminated else "Ctrl-C"
    errors.print(f"stopped ({name}): runs in progress were cancelled, tool providers closed")
    return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
