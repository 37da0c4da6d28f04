"""What a hostile MCP server can make the client keep, show or spend: each bounded here.

A server is code the agent's author did not write. While a tool call runs it may send any number
of notifications and requests; unbounded, a single call could fill the run's events and memory
(15,000 log lines), spend the run's tokens (sampling), bury a person in questions (elicitations)
or hand the console a `javascript:` link. The rules:

- **Logs** (`notifications/message`): the first `max_log_events` of a call become `mcp.log`
  events (and log lines); the rest are counted, and one last `mcp.log` event (level `warning`,
  logger `jianmu_like`) says how many were dropped. Between calls the same cap applies to the
  log lines until the next call starts. `MCPToolProvider.log_records` keeps the newest `LOG_KEEP`.
- **Progress** (`notifications/progress`): coalesced to the latest report of the call; at most one
  `tool.progress` event per `progress_interval` seconds, and the latest unsent one when the call
  ends. Every report still proves the server alive (the call's silence bound restarts).
- **Sampling** counts against the run's token budget *before* each request: a request once the
  budget is spent is refused with an MCP error, and `maxTokens` is capped by what is left (see
  `_sampling`). A request that arrives when none of the server's calls is running (after the
  call returned) is refused: nothing would count its tokens, and no user action asked for it.
- **Elicitations**: at most `max_open_elicitations` of a server open at once (with the
  `sampling: ask` questions); more are refused with an MCP error. URL elicitations only for
  `https:` URLs, or `http:` on a loopback host (a local sign-in page); any other scheme
  (`javascript:`, `data:`, `file:`...) is refused before anyone sees it (`url_refusal`).
- **`resources/updated`** counts only for a subscribed URI; the `read_resource` description names
  the URIs the client chose to subscribe to, never a server's text.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ...telemetry import events as ev

if TYPE_CHECKING:
    from mcp.types import ErrorData, LoggingMessageNotificationParams

    from .._call_context import ToolCallContext

Emit = Callable[..., None]

LOOPBACK_NAMES = {"localhost", "localhost.localdomain"}


def url_refusal(url: str) -> str | None:
    """Why a URL elicitation's `url` is refused (None: it may be offered): only `https:`, or
    `http:` on a loopback host, and never one with credentials in it."""
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").rstrip(".").lower()
    except ValueError:
        return "the URL cannot be parsed"
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http") or not host:
        shown = f"{scheme}:" if scheme else "no scheme"
        return f"only https: URLs (or http: on a loopback host) are offered to the user, not {shown}"
    if parts.username is not None or parts.password is not None:
        return "a URL with credentials in it is not offered to the user"
    if scheme == "http" and not _loopback(host):
        return f"http: is offered only for a loopback host (localhost, 127.0.0.1, ::1), not {host!r}"
    return None


def _loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def refusal(message: str) -> ErrorData:
    """The MCP error a server reads when the client refuses its request."""
    from mcp.types import INVALID_REQUEST, ErrorData

    return ErrorData(code=INVALID_REQUEST, message=message)


@dataclass
class LogGate:
    """The cap on one call's (or the time between calls') log notifications."""

    limit: int
    kept: int = 0
    dropped: int = 0

    def admit(self) -> bool:
        if self.kept < self.limit:
            self.kept += 1
            return True
        self.dropped += 1
        return False


@dataclass(eq=False)  # each call is itself: two calls with equal fields are two flights
class Flight:
    """One tool call of a server running now: its context, its event emitter (server messages
    arrive in the session's reader task, outside the call's) and the bounds of its notifications."""

    call: ToolCallContext | None
    emit: Emit | None
    server: str
    max_logs: int
    interval: float
    logs: LogGate = field(init=False)
    _last_sent: float = field(default=float("-inf"), init=False)
    _latest: tuple[float, float | None, str | None] | None = field(default=None, init=False)
    _timer: asyncio.TimerHandle | None = field(default=None, init=False)
    _closed: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self.logs = LogGate(self.max_logs)

    def log(self, params: LoggingMessageNotificationParams) -> bool:
        """Publish the log notification as an `mcp.log` event unless the cap is reached
        (then count it); whether it was kept."""
        if not self.logs.admit():
            return False
        if self.emit is not None:
            self.emit(
                ev.MCPLog,
                server=self.server,
                level=str(params.level),
                logger=params.logger,
                log_data=params.data,
            )
        return True

    def progress(self, done: float, total: float | None, message: str | None) -> None:
        """Keep the latest report; send it now if the interval has passed, else when it has
        (a report after the call ended is dropped: nothing of the call runs any more)."""
        if self._closed:
            return
        self._latest = (done, total, message)
        loop = asyncio.get_running_loop()
        wait = self._last_sent + self.interval - loop.time()
        if wait <= 0:
            self._send()
        elif self._timer is None:
            self._timer = loop.call_later(wait, self._send)

    def _send(self) -> None:
        self._timer = None
        latest, self._latest = self._latest, None
        if latest is None:
            return
        self._last_sent = asyncio.get_running_loop().time()
        if self.emit is not None:
            done, total, message = latest
            self.emit(ev.ToolProgress, server=self.server, progress=done, total=total, message=message)

    def close(self) -> None:
        """The call ended: the latest unsent progress, and how many log notifications were
        dropped, as its last events."""
        if self._closed:
            return
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
        self._send()
        if self.logs.dropped and self.emit is not None:
            self.emit(
                ev.MCPLog,
                server=self.server,
                level="warning",
                logger="jianmu_like",
                log_data=(
                    f"{self.logs.dropped} more log notifications of this call were dropped "
                    f"(max_log_events={self.max_logs})"
                ),
            )
