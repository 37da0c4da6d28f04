"""`jianmu-like replay FILE`: play a recording back, offline, and say whether it still holds.

Without options the recorded agent file is loaded afresh and its run re-played with every model
and tool call answered from the recording (nothing is contacted, no tool runs): exit 0 when the
event stream is the recorded one, 1 with the first difference (tick, node, recorded and new)
when the agent changed. `--json` prints every event as one JSON line (a divergence as a last
`replay.diverged` line). `--until N --live` replays N model calls and goes on against the real
model and tools (`--record OUT` keeps that new run, its header naming the fork);
`--export-mock OUT` writes the recording as a `jianmu-like mock` replies file instead.
`--checkpoint STORE --thread T [--run RUN]` takes a thread's recording kept in its store
(`keep_recordings`; the newest when no run is named) instead of a FILE.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING

from rich.text import Text

from ..replay import RecordingError, ReplayDivergence, areplay, export_mock, parse_recording, read_recording
from ..replay._player import load_replay_agent
from ..telemetry import events as ev
from ..telemetry.events import AnyEvent
from ._common import EXIT_FAILED, EXIT_OK, CliError, existing_store

if TYPE_CHECKING:
    from rich.console import Console


def replay_command(args: argparse.Namespace, console: Console, errors: Console) -> int:
    """`replay FILE [--json] [--agent FILE] [--until N | --until-tick T] [--live] [--record OUT]
    [--substitute RULES] [--export-mock OUT]`, the recording a FILE or `--checkpoint STORE
    --thread T [--run RUN]`."""
    source: str | bytes = _source(args)
    name = args.file or f"thread {args.thread}"
    try:
        if args.export_mock:
            if args.until is not None or args.until_tick is not None or args.live or args.record:
                raise CliError(
                    "--export-mock writes a replies file: "
                    "it takes no --until, --until-tick, --live or --record"
                )
            out = export_mock(source, args.export_mock)
            errors.print(Text(f"wrote {out} (serve it with: jianmu-like mock {out})", style="dim"))
            return EXIT_OK
        if args.until is not None and not args.live:
            raise CliError("--until N replays N model calls and then goes on live: add --live")
        if args.until_tick is not None and not args.live:
            raise CliError("--until-tick T replays up to tick T and then goes on live: add --live")
        if args.until is not None and args.until_tick is not None:
            raise CliError("give --until N (model calls) or --until-tick T (ticks), not both")
        lines = parse_recording(source, name) if isinstance(source, bytes) else read_recording(source)
        agent = args.agent
        if args.substitute:  # the replay's own rules, in place of the recorded run's
            agent = load_replay_agent(args.agent, lines[0], name)
            agent.substitutions.load(args.substitute)
    except RecordingError as exc:
        raise CliError(str(exc)) from exc
    events: list[AnyEvent] = []

    def sink(event: AnyEvent) -> None:
        if args.json:
            sys.stdout.write(
                json.dumps(event.model_dump(mode="json"), ensure_ascii=False, default=str) + "\n"
            )
        events.append(event)

    try:
        result = asyncio.run(
            areplay(
                source,
                agent=agent,
                until=args.until,
                until_tick=args.until_tick,
                live=args.live,
                on_event=sink,
                record=args.record,
            )
        )
    except ReplayDivergence as exc:
        if args.json:
            line = {"type": "replay.diverged", "data": exc.divergence.model_dump(mode="json")}
            sys.stdout.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
        errors.print(Text(f"✗ {exc}", style="bold red"))
        return EXIT_FAILED
    except RecordingError as exc:
        raise CliError(str(exc)) from exc
    if args.json:
        sys.stdout.flush()
        return EXIT_OK if result.status == "success" else EXIT_FAILED
    operations = sum(1 for line in lines if line["kind"] == "run")
    if args.live:
        forked = any(e.type == ev.REPLAY_FORKED for e in events)
        point = f"tick {args.until_tick}" if args.until_tick is not None else f"{args.until} model call(s)"
        where = f"forked live after {point}" if forked else "the recording ended the run"
        console.print(Text(f"▶ replayed, {where}: {result.status}", style="bold"))
    else:
        console.print(
            Text(
                f"✓ replay matches the recording: {len(events)} events, {operations} run(s), "
                f"no model or tool called ({result.status})",
                style="bold green",
            )
        )
    if result.final_answer:
        console.print(result.final_answer)
    return EXIT_OK


def _source(args: argparse.Namespace) -> str | bytes:
    """The recording: the FILE's path, or a thread's recording read from its store."""
    if args.file is not None:
        if args.checkpoint or args.thread or args.run:
            raise CliError("replay a FILE or --checkpoint STORE --thread ID [--run RUN_ID], not both")
        return str(args.file)
    if not (args.checkpoint and args.thread):
        if args.run:
            raise CliError(
                "--run RUN_ID names a recording of a thread: give --checkpoint STORE --thread ID too"
            )
        raise CliError(
            "replay FILE, or a thread's kept recording: --checkpoint STORE --thread ID [--run RUN_ID]"
        )
    from .._run.thread_recordings import replayable_recording
    from ..checkpoint._target import open_checkpointer, store_label

    store = open_checkpointer(existing_store(args.checkpoint), readonly=True)
    try:
        try:
            return replayable_recording(store, args.thread, args.run, label=store_label(args.checkpoint))[1]
        except RecordingError as exc:
            raise CliError(str(exc)) from exc
    finally:
        store.close()
