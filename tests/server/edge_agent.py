"""The agent the edge tests serve, whose tools leave a trace: any question makes the model call
`record(note=question)` (which appends to `ran`), except `delete P`, which calls `delete_file`
held by a guard for approval (also appending to `ran` once it runs).

`recording(app)` wraps an app so a test sees every request that reached the server and the
status it got, proving a refused request did arrive rather than being stopped on the way.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass, field
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from jianmu_like import AgentTemplate, ReActConfig, create_react_node, tool
from jianmu_like.guard import GuardEnforcer, RequireApproval
from jianmu_like.server import create_app
from jianmu_like.testing import call, reply, scripted_client

ran: list[str] = []
"""What the tools did, in order."""


@tool
def record(note: str) -> str:
    """Record a note."""
    ran.append(f"record {note}")
    return f"recorded {note}"


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    ran.append(f"delete {path}")
    return f"deleted {path}"


def responder(body: dict[str, Any]) -> Any:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return reply(f"done: {last['content']}")
    question = str(last["content"])
    if question.startswith("delete "):
        return call("delete_file", path=question.removeprefix("delete "))
    return call("record", note=question)


def edge_app(**options: Any) -> Any:
    """`create_app` serving the recording agent; `options` go to `create_app`."""
    root = create_react_node(
        model_client=scripted_client(responder),
        tools=[record, delete_file],
        constraints=GuardEnforcer([RequireApproval(tools="delete_file")]),
        config=ReActConfig(max_iterations=4),
    )
    template = AgentTemplate.from_prototype(root, log_events=False)
    return create_app(template.conversation, **options)


@dataclass
class Seen:
    """One request that reached the server: method, path, headers, and the status answered."""

    method: str
    path: str
    headers: dict[str, str]
    status: int | None = None


@dataclass
class Recording:
    app: ASGIApp
    seen: list[Seen] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        entry = Seen(scope["method"], scope["path"], headers)
        self.seen.append(entry)

        async def send_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                entry.status = message["status"]
            await send(message)

        await self.app(scope, receive, send_status)


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def exchange(port: int, head: bytes, *chunks: bytes) -> Reply:
    """Send `head` (and `chunks`) on a fresh connection to 127.0.0.1:`port` and read one reply
    (bounded by a generous socket timeout). A server that closes while chunks are still being
    sent is fine: its reply is read all the same."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        try:
            sock.sendall(head)
            for chunk in chunks:
                sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        data = b""
        while b"\r\n\r\n" not in data:
            more = sock.recv(65536)
            if not more:
                raise AssertionError(f"the connection closed before a reply: {data!r}")
            data += more
        head_bytes, _, body = data.partition(b"\r\n\r\n")
        status_line, *lines = head_bytes.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            more = sock.recv(65536)
            if not more:
                break
            body += more
        return Reply(int(status_line.split()[1]), headers, body[:length])


def request(
    port: int,
    method: str,
    path: str,
    body: bytes = b"",
    *,
    host: str | None = "",
    headers: dict[str, str] | None = None,
    version: str = "HTTP/1.1",
) -> Reply:
    """One raw request: `host=""` sends `Host: 127.0.0.1:<port>`, None sends no Host at all."""
    lines = [f"{method} {path} {version}"]
    if host is not None:
        lines.append(f"Host: {host or f'127.0.0.1:{port}'}")
    all_headers = {"Content-Length": str(len(body)), "Connection": "close", **(headers or {})}
    lines += [f"{k}: {v}" for k, v in all_headers.items()]
    return exchange(port, ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
