"""`jianmu-like interruptions list|answer`: what a running `jianmu-like serve` waits for, answered.

Every way a served run waits for someone (an approval, a client tool's call, a question an MCP
server asks) is an interruption, listed by `GET /api/interruptions` and answered by
`POST /api/interruptions/{id}` (see `server._interruptions`): this command is that listing and
that route on the command line, with the server's token when it has one. `approve` / `deny`
answer an approval, `accept` / `decline` / `cancel` a question; the server refuses the other
kind's answer (exit 2) and nothing is taken. (`jianmu-like approvals` works on a checkpoint store
instead, with no server: approvals are stored there, questions never are.)
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import Any
from urllib.parse import quote

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ._common import EXIT_OK, CliError, json_object_option
from ._elicitations import call_server
from ._render import shorten

DECISIONS = ("approve", "deny")
ACTIONS = ("accept", "decline", "cancel")


def interruptions_command(args: argparse.Namespace, console: Console, errors: Console) -> int:
    """Run `interruptions list|answer`; an unreachable server or a refusal is a CliError (exit 2)."""
    if args.action == "list":
        run = quote(args.run_id, safe="") if args.run_id else None
        path = f"/api/runs/{run}/interruptions" if run else "/api/interruptions"
        _list(call_server(args, "GET", path)["interruptions"], args, console)
        return EXIT_OK
    body = answer_body(args)
    answer = call_server(args, "POST", f"/api/interruptions/{quote(args.interruption_id, safe='')}", body)
    console.print(
        Text(
            f"{args.answer} sent for {answer['id']} ({answer['kind']}, run {answer['run_id']})", style="green"
        )
    )
    return EXIT_OK


def answer_body(args: argparse.Namespace) -> dict[str, Any]:
    """The body of `POST /api/interruptions/{id}` the options say; options of the other kind's
    answer are refused here (exit 2) rather than sent."""
    body: dict[str, Any] = {"run_id": args.run, "thread_id": args.thread}
    if args.answer in DECISIONS:
        if args.content is not None:
            raise CliError("--content answers a question (accept), not an approval")
        body.update(decision=args.answer, reason=args.reason)
        if args.arguments is not None:
            if args.answer != "approve":
                raise CliError("--args come with approve, not with deny")
            body["arguments"] = json_object_option(args.arguments, "--args", "the tool's arguments")
    else:
        if args.arguments is not None or args.reason:
            raise CliError("--args and --reason answer an approval, not a question")
        body["action"] = args.answer
        if args.content is not None:
            if args.answer != "accept":
                raise CliError("--content comes with accept, not with decline or cancel")
            body["content"] = json_object_option(args.content, "--content", "the values asked for")
    return {key: value for key, value in body.items() if value is not None}


def _list(items: list[dict[str, Any]], args: argparse.Namespace, console: Console) -> None:
    if args.json:
        for item in items:
            console.out(json.dumps(item, ensure_ascii=False), highlight=False)
        return
    if not items:
        console.print("nothing waits" + (f" in run {args.run_id}" if args.run_id else ""))
        return
    table = Table(title="what the runs wait for", title_justify="left")
    for column in ("run", "id", "kind", "waits on", "asked"):
        table.add_column(column, no_wrap=column != "waits on")
    for item in items:
        payload = item.get("payload") or {}
        if item["kind"] == "question":
            what = shorten(payload.get("message", ""), 100)
        else:
            what = f"{payload.get('tool')}({shorten(payload.get('arguments'), 80)})"
        table.add_row(
            item["run_id"],
            item["id"],
            item["kind"] + (" (decided)" if item.get("decided") else ""),
            what,
            datetime.fromtimestamp(item.get("requested_at", 0)).strftime("%H:%M:%S"),
        )
    console.print(table)
    console.print("answer: jianmu-like interruptions answer ID approve|deny|accept|decline|cancel")
