"""`jianmu-like threads list|show|history|recordings`: look at the conversations a checkpoint
store keeps.

Read only: the store is opened read-only (never created or changed). Every save of a thread is
a version; `history` lists them newest first, with `parent` naming the version each continues
(a fork where it is not the one before), so `Agent.run(..., thread_id=T, from_checkpoint=SEQ)`
or `Agent.state_at(T, SEQ)` can be pointed at one. `recordings` lists the thread's runs kept as
recordings (`keep_recordings`), `--run RUN` writes one out as JSON Lines (`jianmu-like replay
--checkpoint STORE --thread T --run RUN` replays it).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..checkpoint._history import CheckpointInfo
from ..checkpoint._recordings import StoredRecording, thread_recordings
from ..checkpoint._target import open_checkpointer, store_label
from ..checkpoint._threads import thread_history, thread_view
from ._common import EXIT_OK, CliError, existing_store
from ._render import shorten


def threads_command(args: argparse.Namespace, console: Console, errors: Console) -> int:
    """Run `threads <action>`; an unknown thread or store is a CheckpointError (exit 2)."""
    if args.action != "list" and not args.thread:
        raise CliError(f"threads {args.action} STORE THREAD: name the thread (see `threads list STORE`)")
    label = store_label(args.file)
    store = open_checkpointer(existing_store(args.file), readonly=True)
    try:
        if args.action == "list":
            _infos(store.heads(), args, console, f"threads in {label}", first="thread")
        elif args.action == "recordings":
            recordings = thread_recordings(store, args.thread)
            if not recordings and args.thread not in store.threads():
                thread_history(store, args.thread, label=label)  # names the threads it holds
            if args.run:
                _write_recording(store.read_recording(args.thread, args.run), args.output, errors)
            elif args.output:
                raise CliError("--output writes one recording: name it with --run RUN_ID")
            else:
                _recordings(recordings, args, console, f"recordings of {args.thread}")
        elif args.action == "history":
            _infos(
                thread_history(store, args.thread, label=label), args, console, f"versions of {args.thread}"
            )
        else:
            view = thread_view(store, args.thread, label=label)
            if args.json:
                console.out(json.dumps(view.model_dump(mode="json"), ensure_ascii=False), highlight=False)
                return EXIT_OK
            info = view.thread
            console.print(
                Text(
                    f"thread {info.thread_id}: {info.status}, version {info.seq} of {view.versions} kept, "
                    f"{info.messages} messages, saved {_when(info.saved_at)}",
                    style="bold",
                )
            )
            if info.pending_approvals:
                console.print(
                    Text(f"waiting for approval: {', '.join(info.pending_approvals)}", style="yellow")
                )
            for message in view.messages:
                role = str(message.get("role", "?"))
                content = message.get("content")
                calls = message.get("tool_calls") or []
                text = (
                    str(content)
                    if content
                    else ", ".join(
                        f"{c.get('name')}({shorten(c.get('arguments'), 60)})"
                        for c in calls
                        if isinstance(c, dict)
                    )
                )
                console.print(Text(f"{role:>9}: ", style="cyan"), Text(text), sep="")
    finally:
        store.close()
    return EXIT_OK


def _write_recording(data: bytes, output: str | None, errors: Console) -> None:
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    try:
        Path(output).write_bytes(data)
    except OSError as exc:
        raise CliError(f"cannot write {output!r}: {exc}") from exc
    errors.print(
        Text(f"wrote {output} ({len(data)} bytes; replay it with: jianmu-like replay {output})", style="dim")
    )


def _recordings(infos: list[StoredRecording], args: argparse.Namespace, console: Console, title: str) -> None:
    if args.json:
        for info in infos:
            console.out(json.dumps(info.model_dump(mode="json"), ensure_ascii=False), highlight=False)
        return
    if not infos:
        console.print(
            f"no recordings of thread {args.thread} (keep them with Agent(keep_recordings=...) "
            "or the configuration's checkpoints.recordings)"
        )
        return
    table = Table(title=title, title_justify="left")
    for column in ("#", "run", "status", "started", "ended", "bytes"):
        table.add_column(column, no_wrap=True)
    for info in infos:
        status = info.status + (", truncated" if info.truncated else "")
        ended = "" if info.ended_at is None else _when(info.ended_at)
        table.add_row(str(info.number), info.run_id, status, _when(info.started_at), ended, str(info.size))
    console.print(table)


def _when(stamp: float) -> str:
    return datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M:%S")


def _infos(
    infos: list[CheckpointInfo], args: argparse.Namespace, console: Console, title: str, *, first: str = "seq"
) -> None:
    if args.json:
        for info in infos:
            console.out(json.dumps(info.model_dump(mode="json"), ensure_ascii=False), highlight=False)
        return
    if not infos:
        console.print(f"no threads in {store_label(args.file)}")
        return
    table = Table(title=title, title_justify="left")
    for column in (
        first,
        "seq" if first != "seq" else "parent",
        "status",
        "node",
        "round",
        "messages",
        "pending",
        "saved",
    ):
        table.add_column(column, no_wrap=column != "node")
    for info in infos:
        lead = info.thread_id if first == "thread" else str(info.seq)
        second = (
            str(info.seq) if first == "thread" else ("-" if info.parent_seq is None else str(info.parent_seq))
        )
        table.add_row(
            lead,
            second,
            info.status,
            info.node or "",
            "" if info.iteration is None else str(info.iteration),
            str(info.messages),
            ", ".join(info.pending_approvals),
            _when(info.saved_at),
        )
    console.print(table)
