"""A real uvicorn server in a background thread, on a free port of 127.0.0.1, and SSE parsing."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import uvicorn
from starlette.types import ASGIApp

from jianmu_like.testing import PATIENCE, wait_until


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def live_server(app: ASGIApp) -> Iterator[str]:
    """Serve `app` with uvicorn until the block ends; yields the base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="uvicorn-test", daemon=True)
    thread.start()
    wait_until(
        lambda: server.started,
        "uvicorn to start",
        abort=lambda: None if thread.is_alive() else "uvicorn's thread ended",
        interval=0.01,
    )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=PATIENCE)


def sse_events(lines: Iterator[str]) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(id, event, data) of every message of an SSE stream (comments and pings skipped)."""
    fields: dict[str, str] = {}
    for line in lines:
        if line == "":
            if "data" in fields and "event" in fields:
                yield int(fields["id"]), fields["event"], json.loads(fields["data"])
            fields = {}
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        fields[name] = value[1:] if value.startswith(" ") else value


def read_events(
    client: httpx.Client, run_id: str, *, last_event_id: int | None = None, until: str = "done"
) -> list[tuple[int, str, dict[str, Any]]]:
    """Read a run's stream until an event named `until` (included); `"approval:pending"`: until
    an `approval` message of that status (the run suspended; a `requested` one came before)."""
    name, _, status = until.partition(":")
    headers = {} if last_event_id is None else {"Last-Event-ID": str(last_event_id)}
    found: list[tuple[int, str, dict[str, Any]]] = []
    with client.stream("GET", f"/api/runs/{run_id}/events", headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for event in sse_events(response.iter_lines()):
            found.append(event)
            if event[1] == name and (not status or event[2].get("status") == status):
                break
    return found


def shape(events: list[tuple[int, str, dict[str, Any]]]) -> list[str]:
    """A compact form of a stream for assertions: `channel:type:status` (or `channel:status`)."""
    out = []
    for _, channel, data in events:
        parts = [channel, str(data.get("type", "")), str(data.get("status", ""))]
        out.append(":".join(p for p in parts if p))
    return out


def answer_shown(messages: Iterable[tuple[str, dict[str, Any]]]) -> str:
    """What a client rendering the answer channel shows at the end, from (channel, data) pairs
    (start/reset empty it, deltas add, done replaces)."""
    text = ""
    for channel, data in messages:
        if channel != "answer":
            continue
        if data["status"] in ("start", "reset"):
            text = ""
        elif data["status"] == "delta":
            text += data["content"]
        elif data["status"] == "done":
            text = data["content"]
    return text
