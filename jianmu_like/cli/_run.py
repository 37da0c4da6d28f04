"""`jianmu-like run` and `jianmu-like resume`: drive an agent file, showing its events live.

Events are taken from the agent's telemetry hub while the run is a task of its own, so a Ctrl-C
or a SIGTERM cancels that task (every in-flight model or tool call is cancelled with it, the
agent's MCP servers are stopped) and the checkpoint written after the last tick stays in the
store, resumable with `jianmu-like resume`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from rich.console import Console
from rich.live import Live
from rich.text import Text

from .._base.config import PROJECT_FILE, config_file, explain_config, get_config
from .._run.agent import Agent, AgentResult
from .._run.explain import headline
from ..agentfile._loader import load_agent
from ..checkpoint._target import open_checkpointer, store_label
from ..models._describe import clients_in, describe_all
from ..models._messages import human
from ..models._types import Usage
from ..telemetry import events as ev
from ..telemetry._hub import structlog_sink
from ..telemetry.events import AnyEvent
from ..telemetry.otel_setup import flush_tracing
from ..tools._questions import close_human_channel
from ._common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_NODE_ERROR,
    EXIT_OK,
    EXIT_PROVIDER_ERROR,
    EXIT_SUSPENDED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    CliError,
    existing_store,
)
from ._render import EventRenderer, shorten
from ._signals import Terminated, terminable
from ._tracing import start_tracing

STREAM_ENV = "JIANMU__LLM__STREAM"
EXIT_BY_REASON = {
    "node_error": EXIT_NODE_ERROR,
    "provider_error": EXIT_PROVIDER_ERROR,
    "guard_error": EXIT_USAGE,  # a rule names a tool that the MCP servers did not list
}
"""Exit codes of failures with a code of their own; any other failure exits EXIT_FAILED."""
Start = Callable[[], Awaitable[AgentResult]]


@dataclass
class RunView:
    """How a run is shown: JSON lines, or a transcript with or without the live tree."""

    console: Console
    errors: Console
    json_lines: bool = False
    live: bool = True
    verbose: bool = False


def enable_streaming() -> None:
    """Stream answers in CLI runs, unless the configuration file or the environment sets
    `llm.stream` (an agent file's own `llm.stream` wins anyway)."""
    if STREAM_ENV not in os.environ:
        _, sources = explain_config()
        if sources.values.get("llm.stream", (None, "default"))[1] == "default":
            os.environ[STREAM_ENV] = "true"
    get_config(reload=True)


def total_usage(agent: Agent) -> Usage:
    """Tokens spent by every agent of the tree (each namespace keeps its own usage)."""
    sm, key, total = agent.state_manager, agent.keys.usage, Usage()
    for namespace in [None, *sorted(sm.namespaces())]:
        try:
            value = sm.get(key, namespace, None)
        except KeyError:
            continue
        if isinstance(value, Usage):
            total += value
        elif isinstance(value, dict):
            total += Usage.model_validate(value)
    return total


async def pump(agent: Agent, start: Start, sink: Callable[[AnyEvent], None]) -> AgentResult:
    """Run `start()` as a task and pass every event to `sink` as it happens; cancelling the
    caller cancels the run."""
    queue: asyncio.Queue[AnyEvent | None] = asyncio.Queue()
    unsubscribe = agent.telemetry.subscribe(queue.put_nowait)
    task = asyncio.ensure_future(start())
    task.add_done_callback(lambda _task: queue.put_nowait(None))
    try:
        while (event := await queue.get()) is not None:
            sink(event)
        return await task
    finally:
        unsubscribe()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def _json_line(event: AnyEvent) -> None:
    sys.stdout.write(json.dumps(event.model_dump(mode="json"), ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


async def _close(agent: Agent) -> None:
    """Close tool providers and the model clients' connections."""
    await agent.aclose()
    for client in clients_in(agent.root):
        await client.aclose()


async def session(agent: Agent, start: Start, view: RunView) -> AgentResult:
    """Drive one run or resume with the chosen view; the agent is closed afterwards. Nobody
    can answer an MCP server's question here, so each is declined at once (serve the agent
    to answer them: `jianmu-like elicitations`)."""
    close_human_channel(agent.toolsets())
    if view.verbose and get_config().logging.level.upper() not in ("DEBUG", "INFO"):
        agent.telemetry.subscribe(structlog_sink())
    try:
        if view.json_lines:
            return await pump(agent, start, _json_line)
        models = describe_all(clients_in(agent.root))  # which model answers: always said
        renderer = EventRenderer(
            view.console, agent.root, namespace=agent.namespace, live=view.live, models=models
        )
        if not view.live:
            result = await pump(agent, start, renderer.handle)
        else:
            with Live(renderer, console=view.console, auto_refresh=False, transient=True) as live:
                last = 0.0

                def sink(event: AnyEvent) -> None:
                    nonlocal last
                    renderer.handle(event)
                    now = time.monotonic()
                    if event.type != ev.TEXT_DELTA or now - last > 0.05:
                        live.refresh()
                        last = now

                result = await pump(agent, start, sink)
        renderer.finish(result, total_usage(agent))
        return result
    finally:
        await _close(agent)
        flush_tracing()


def _drive(
    agent: Agent, start: Start, view: RunView, store: str | None, thread: str | None
) -> AgentResult | int:
    """`session` under asyncio; Ctrl-C becomes EXIT_INTERRUPTED and SIGTERM EXIT_TERMINATED, with
    a note on the checkpoint (either way the run is cancelled and the agent closed first)."""
    where = f"; checkpoint kept in {store} (thread {thread})" if store is not None else ""
    try:
        return asyncio.run(terminable(session(agent, start, view)))
    except KeyboardInterrupt:
        view.errors.print(Text(f"interrupted{where}", style="yellow"))
        return EXIT_INTERRUPTED
    except Terminated:
        view.errors.print(Text(f"terminated (SIGTERM){where}", style="yellow"))
        return EXIT_TERMINATED


def _view(args: argparse.Namespace, console: Console, errors: Console) -> RunView:
    live = not args.no_live and not args.json and console.is_terminal
    return RunView(console, errors, json_lines=args.json, live=live, verbose=args.verbose)


def announce_project_config(errors: Console) -> None:
    """Say so when a `./jianmu.yaml` of the working directory configures the run: a file
    nobody passed must not change behaviour unseen."""
    if not os.environ.get("JIANMU_CONFIG") and config_file() == PROJECT_FILE:
        errors.print(Text(f"using configuration {PROJECT_FILE.resolve()} (./jianmu.yaml)", style="dim"))


def run_command(args: argparse.Namespace, console: Console, errors: Console) -> int:
    """`run PRESET QUESTION`: a fresh run; exit 0 success, 1 failure, 3 suspended, 4 node error,
    5 tool provider error, 130 Ctrl-C, 143 SIGTERM."""
    if args.thread and not args.checkpoint:
        raise CliError("--thread needs --checkpoint STORE (a thread lives in a checkpoint store)")
    tracing = start_tracing(args)
    enable_streaming()
    announce_project_config(errors)
    agent = load_agent(args.preset, allow_modules=args.allow_module)
    if args.substitute:
        agent.substitutions.load(args.substitute)
    if tracing is not None:
        agent.telemetry.subscribe(tracing)
    store = open_checkpointer(args.checkpoint) if args.checkpoint else None
    thread = (args.thread or uuid.uuid4().hex[:12]) if store is not None else None
    question: str = args.question
    data = {"task": question, "messages": [human(question)]}

    def start() -> Awaitable[AgentResult]:
        return agent.run(
            data, max_ticks=args.max_ticks, thread_id=thread, checkpointer=store, record=args.record
        )

    try:
        label = store_label(args.checkpoint) if store is not None else None
        outcome = _drive(agent, start, _view(args, console, errors), label, thread)
    finally:
        if store is not None:
            store.close()
    return outcome if isinstance(outcome, int) else report(outcome, args, errors, store_path=args.checkpoint)


def resume_command(args: argparse.Namespace, console: Console, errors: Console) -> int:
    """`resume PRESET --checkpoint STORE --thread ID`: continue a suspended (or interrupted) run."""
    target = existing_store(args.checkpoint)
    open_checkpointer(target, readonly=True).close()  # a checkpoint store, not any file: checked first
    store = open_checkpointer(target)
    label = store_label(args.checkpoint)
    try:
        checkpoint = store.load(args.thread)
        if checkpoint is None:
            known = ", ".join(store.threads()) or "none"
            raise CliError(f"{label}: no thread {args.thread!r} (threads: {known})")
        if checkpoint.status in ("success", "failure"):
            raise CliError(
                f"thread {args.thread!r} already finished ({checkpoint.status}); nothing to resume"
            )
        tracing = start_tracing(args)
        enable_streaming()
        agent = load_agent(args.preset, allow_modules=args.allow_module)
        if tracing is not None:
            agent.telemetry.subscribe(tracing)

        async def start() -> AgentResult:
            try:
                return await agent.resume(thread_id=args.thread, checkpointer=store, max_ticks=args.max_ticks)
            except RuntimeError as exc:  # CheckpointError too: another tree, schema, ...
                raise CliError(str(exc)) from exc

        outcome = _drive(agent, start, _view(args, console, errors), label, args.thread)
    finally:
        store.close()
    return outcome if isinstance(outcome, int) else report(outcome, args, errors, store_path=args.checkpoint)


def report(result: AgentResult, args: argparse.Namespace, errors: Console, *, store_path: str | None) -> int:
    """Explain a failure or a suspension on stderr; the exit code of the run."""
    if result.status == "success":
        return EXIT_OK
    if result.status == "suspended":
        _explain_suspension(result, args.preset, store_path, errors)
        return EXIT_SUSPENDED
    first, more = headline(result)
    errors.print(Text(f"error: {first}", style="bold red"))
    for line in more:
        errors.print(Text(f"  {line}", style="red"))
    fault = result.fault
    return EXIT_BY_REASON.get(fault.kind, EXIT_FAILED) if fault is not None else EXIT_FAILED


def _explain_suspension(result: AgentResult, preset: str, store_path: str | None, errors: Console) -> None:
    count = len(result.pending_approvals)
    errors.print(Text(f"⏸ suspended: {count} tool call(s) wait for approval", style="bold yellow"))
    for approval in result.pending_approvals:
        call = f"{approval.tool}({shorten(approval.arguments)})"
        reason = f"  {approval.reason}" if approval.reason else ""
        errors.print(Text(f"  {approval.id}  {call}{reason}", style="yellow"))
    if store_path is None or result.thread_id is None:
        errors.print("not resumable: run with --checkpoint STORE [--thread ID] to decide and resume later")
        return
    file, thread = shlex.quote(store_label(store_path)), shlex.quote(result.thread_id)
    first = shlex.quote(result.pending_approvals[0].id) if result.pending_approvals else "ID"
    errors.print(f"approve:  jianmu-like approvals approve {file} {thread} {first}")
    errors.print(f'deny:     jianmu-like approvals deny {file} {thread} {first} --reason "..."')
    errors.print(f"then:     jianmu-like resume {shlex.quote(preset)} --checkpoint {file} --thread {thread}")
