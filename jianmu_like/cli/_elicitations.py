"""`jianmu-like elicitations list|respond`: answer the questions MCP servers ask a person.

An elicitation (and a sampling request of a `sampling: ask` server) waits inside a running
agent while the server's tool call waits, so it is nowhere in a checkpoint store: this command
talks to the `jianmu-like serve` that runs the agent, over its API
(`GET /api/elicitations`, `POST /api/runs/{run}/elicitations/{id}`; see `server._elicitations`),
with its token when it has one. The server checks accepted content against the requested
schema; its refusal is printed as it is (exit 2) and the question stays open.
"""

from __future__ import annotations

import argparse
import json
import os
import urllib.error
import urllib.request
from datetime import datetime
from typing import Any
from urllib.parse import quote

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ._common import EXIT_OK, CliError, json_object_option
from ._render import shorten

TIMEOUT = 30.0
"""Seconds one request to the server may take."""


def elicitations_command(args: argparse.Namespace, console: Console, errors: Console) -> int:
    """Run `elicitations list|respond`; an unreachable server or a refusal is a CliError (exit 2)."""
    if args.action == "list":
        path = f"/api/runs/{quote(args.run_id, safe='')}/elicitations" if args.run_id else "/api/elicitations"
        items = call_server(args, "GET", path)["elicitations"]
        _list(items, args, console)
        return EXIT_OK
    body: dict[str, Any] = {"action": args.answer}
    if args.content is not None:
        if args.answer != "accept":
            raise CliError("--content comes with accept, not with decline or cancel")
        body["content"] = json_object_option(args.content, "--content", "the values asked for")
    path = f"/api/runs/{quote(args.run_id, safe='')}/elicitations/{quote(args.elicitation_id, safe='')}"
    answer = call_server(args, "POST", path, body)
    console.print(Text(f"{answer['action']} sent for {answer['id']} (run {answer['run_id']})", style="green"))
    return EXIT_OK


def call_server(args: argparse.Namespace, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """One request to the server; its JSON answer, or a CliError with its `error` text."""
    base = str(args.url).rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise CliError(f"--url must start with http:// or https://, got {args.url!r}")
    headers = {"Accept": "application/json"}
    token = args.token or os.environ.get("JIANMU_SERVER_TOKEN")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read() or b"{}").get("error") or exc.reason
        except (ValueError, AttributeError):
            message = exc.reason
        raise CliError(f"the server refused ({exc.code}): {message}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        hint = "is `jianmu-like serve` running?"
        raise CliError(f"cannot reach the server at {base}: {reason} ({hint})") from None


def _list(items: list[dict[str, Any]], args: argparse.Namespace, console: Console) -> None:
    if args.json:
        for item in items:
            console.out(json.dumps(item, ensure_ascii=False), highlight=False)
        return
    if not items:
        console.print("no open questions" + (f" in run {args.run_id}" if args.run_id else ""))
        return
    table = Table(title="questions waiting for a person", title_justify="left")
    for column in ("run", "id", "kind", "question", "asks for", "asked"):
        table.add_column(column, no_wrap=column in ("run", "id", "kind", "asked"))
    for item in items:
        schema = item.get("requested_schema") or {}
        fields = ", ".join(
            f"{name}{'*' if name in schema.get('required', ()) else ''}: {spec.get('type', '?')}"
            for name, spec in (schema.get("properties") or {}).items()
        )
        table.add_row(
            item["run_id"],
            item["id"],
            item.get("kind", "elicitation"),
            shorten(item.get("message", ""), 100),
            fields or (item.get("url") or "-"),
            datetime.fromtimestamp(item.get("requested_at", 0)).strftime("%H:%M:%S"),
        )
    console.print(table)
    console.print("answer: jianmu-like elicitations respond RUN ID accept --content '{...}' (or decline)")
