"""`jianmu-like approvals list|approve|deny`: review tool calls waiting in a checkpoint store.

Nothing runs here: decisions are stored in the checkpoint store (a SQLite file or a
`postgresql://` database; one row each, so concurrent operators never lose one), and the agent
finds them when `jianmu-like resume` (or `Agent.resume(thread_id=...)`) continues the thread; a
`jianmu-like serve --checkpoint` on the same store that holds the suspended run sees the decision
(PostgreSQL NOTIFY, sent in the decision's transaction; a poll of the SQLite file) and resumes
the run by itself. An approval is named by its thread and its id, the tool call's id: the same
id the server's API and web console show. A second decision, by anyone, exits 2 saying
"already decided (approved|denied)".
`list` opens the store read-only: it never creates or changes one; `approve`/`deny` write only
into an existing checkpoint store.
"""

from __future__ import annotations

import argparse
import json
import shlex
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .._run.review import PendingApproval, list_pending, record_decision
from ..checkpoint._target import open_checkpointer, store_label
from ..guard._approvals import ApprovalDecision
from ._common import EXIT_OK, CliError, existing_store, json_object_option
from ._render import shorten


def approvals_command(args: argparse.Namespace, console: Console, errors: Console) -> int:
    """Run `approvals <action>`; store and approval errors reach the caller (exit 2)."""
    if args.database:  # durable runs (DBOS): the run itself receives the decision
        from ._durable import approvals_command as durable_approvals

        return durable_approvals(args, console, errors)
    if args.file is None or (args.action != "list" and args.approval_id is None):
        raise CliError("approvals list STORE | approvals approve|deny STORE THREAD ID (or --database URL)")
    target = existing_store(args.file)
    if args.action == "list":
        _list(_pending_of(args.file), args, console)
        return EXIT_OK
    open_checkpointer(target, readonly=True).close()  # a checkpoint store, not any file: checked first
    store = open_checkpointer(target)
    approved = args.action == "approve"
    decision = ApprovalDecision(approved=approved, reason=args.reason, arguments=edited_arguments(args))
    try:
        record_decision(store, args.thread, args.approval_id, decision)
    finally:
        store.close()
    verdict = "approved" if approved else "denied"
    console.print(Text(f"{verdict} {args.approval_id} in thread {args.thread}", style="green"))
    remaining = [p for p in _pending_of(args.file) if p.thread_id == args.thread and p.decision is None]
    if remaining:
        ids = ", ".join(p.approval.id for p in remaining)
        console.print(Text(f"still waiting in this thread: {ids}", style="yellow"))
    else:
        file, thread = shlex.quote(store_label(args.file)), shlex.quote(args.thread)
        agent = shlex.quote(_source_of(args.file, args.thread) or "AGENT_FILE")
        console.print(
            f"continue with: jianmu-like resume {agent} --checkpoint {file} --thread {thread} "
            "(a `jianmu-like serve` holding this run on the store resumes it by itself)"
        )
    return EXIT_OK


def edited_arguments(args: argparse.Namespace) -> dict[str, Any] | None:
    """`approve --args JSON`: the corrected arguments, a JSON object (None: not given)."""
    raw = getattr(args, "arguments", None)
    return None if raw is None else json_object_option(raw, "--args", "the tool's arguments")


def _source_of(path: str, thread: str) -> str | None:
    """The agent file the thread's checkpoint says it was built from (None: not recorded)."""
    store = open_checkpointer(existing_store(path), readonly=True)
    try:
        checkpoint = store.load(thread)
    finally:
        store.close()
    return checkpoint.source if checkpoint is not None else None


def _pending_of(path: str) -> list[PendingApproval]:
    store = open_checkpointer(existing_store(path), readonly=True)
    try:
        return list_pending(store)
    finally:
        store.close()


def _list(pending: list[PendingApproval], args: argparse.Namespace, console: Console) -> None:
    if args.json:
        for item in pending:
            console.out(json.dumps(item.model_dump(mode="json"), ensure_ascii=False), highlight=False)
        return
    if not pending:
        console.print(f"no pending approvals in {store_label(args.file)}")
        return
    table = Table(title=f"pending approvals in {store_label(args.file)}", title_justify="left")
    table.add_column("thread", no_wrap=True)
    table.add_column("id", no_wrap=True, style="bold")
    table.add_column("call")
    table.add_column("reason")
    table.add_column("requested", no_wrap=True)
    table.add_column("decision", no_wrap=True)
    for item in pending:
        approval, decision = item.approval, item.decision
        if decision is None:
            verdict = Text("waiting", style="yellow")
        else:
            verdict = Text("approved" if decision.approved else "denied", style="green")
        table.add_row(
            item.thread_id,
            approval.id,
            f"{approval.tool}({shorten(approval.arguments, 80)})",
            approval.reason,
            datetime.fromtimestamp(approval.requested_at).strftime("%Y-%m-%d %H:%M:%S"),
            verdict,
        )
    console.print(table)
