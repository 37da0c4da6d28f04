"""What changes with the protocol revision a server speaks: negotiating it, multi-round-trip
requests, and `subscriptions/listen`.

Revision 2026-07-28 has no `initialize` handshake (a `server/discover` probe instead, every
request carrying the version and the client's capabilities), no server-initiated requests and
no resource subscriptions. A server that needs the user (elicitation), the client's model
(sampling) or its roots mid-request answers `tools/call`, `prompts/get` or `resources/read` with
`input_required`: the client answers each embedded request through the same handlers as the
requests of earlier revisions and sends the request again with the answers and the server's
opaque `requestState`. Change notifications only reach a client that keeps a
`subscriptions/listen` stream open, naming what it wants to hear about.

`protocol: auto` (the default) probes for 2026-07-28 and falls back to the handshake of earlier
revisions for a server that does not answer the probe, so servers of every revision keep
working; `legacy` only speaks the handshake (core MCP tasks and logging levels are 2025-11-25
features); `2026-07-28` refuses a server without it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ..._base.redact import redact_text, redacting_logger

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import InputRequest, InputRequiredResult, InputResponse, InputResponses
    from mcp_types import ErrorData

    from ._handlers import SessionHandlers

ProtocolChoice = Literal["auto", "legacy", "2026-07-28"]
"""An entry's `protocol:` (see the module docstring)."""

MAX_INPUT_ROUNDS = 10
"""Rounds of `input_required` one request may take before it fails (the SDKs' own bound)."""

RELISTEN_DELAY = 1.0
"""Seconds before a lost `subscriptions/listen` stream is opened again (doubling, at most 30)."""

logger = redacting_logger(__name__)

_R = TypeVar("_R")


def is_modern(version: str | None) -> bool:
    """`version` is a revision without the handshake (2026-07-28 or later)."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return version in MODERN_PROTOCOL_VERSIONS


async def negotiate(session: ClientSession, protocol: ProtocolChoice) -> None:
    """Agree on a revision with the server, as `protocol` says; the session then stamps every
    request with it (headers, request metadata)."""
    if protocol == "legacy":
        await session.initialize()
        return
    if protocol == "auto":
        # The SDK's own policy, shared with its `Client(mode="auto")`: only positive evidence of a
        # modern server (an answered probe naming a mutual version) avoids the handshake.
        from mcp.client._probe import negotiate_auto

        await negotiate_auto(session)
        return
    result = await session.discover()  # refuses a server without the revision, naming why
    if session.protocol_version != protocol:
        offered = ", ".join(result.supported_versions)
        raise RuntimeError(
            f"the server offers protocol revisions {offered}, not {protocol} (protocol: {protocol})"
        )


async def answer_input_rounds(
    session: ClientSession,
    first: _R | InputRequiredResult,
    again: Callable[[InputResponses | None, str | None], Awaitable[_R | InputRequiredResult]],
) -> _R:
    """The final result of a request the server answered with `input_required`: each embedded
    request (elicitation, sampling, roots) goes to the handlers that answer the server-initiated
    requests of earlier revisions, and `again(answers, request_state)` resends the request, at
    most `MAX_INPUT_ROUNDS` times. A handler's refusal (an MCP error) ends the request with it."""
    from mcp.client._input_required import run_input_required_driver
    from mcp.client.session import ClientRequestContext
    from mcp.types import InputRequiredResult

    if not isinstance(first, InputRequiredResult):
        return first

    async def dispatch(key: str, request: InputRequest) -> InputResponse | ErrorData:
        meta = request.params.meta if request.params is not None else None
        context = ClientRequestContext(session=session, request_id=key, meta=meta)
        return await session.dispatch_input_request(context, request)

    return await run_input_required_driver(first, dispatch=dispatch, retry=again, max_rounds=MAX_INPUT_ROUNDS)


class Listener:
    """Keeps one `subscriptions/listen` stream open on a 2026-07-28 session, for the changes its
    owner handles (tool, prompt and resource lists) and the resources it subscribed to.

    The events reach the session's message handler like the notifications of earlier revisions
    (the SDK passes them on), so they are handled in one place. The filter changes with the
    subscriptions: the stream is then opened again with the new one. A stream the server ends or
    loses is opened again after a delay; since nothing is replayed, `reopened` is told each time
    (what the owner caches is stale)."""

    def __init__(
        self,
        server: str,
        session: ClientSession,
        *,
        tools: bool,
        prompts: bool,
        resources: bool,
        reopened: Callable[[], None],
    ) -> None:
        self.server, self._session = server, session
        self._flags = {"tools": tools, "prompts": prompts, "resources": resources}
        self._reopened = reopened
        self.uris: list[str] = []
        self.honored: Any = None
        """The filter the server acknowledged (an `mcp.types.SubscriptionFilter`), once it did."""
        self._changed = asyncio.Event()
        self._acked = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @classmethod
    def for_handlers(cls, server: str, session: ClientSession, handlers: SessionHandlers) -> Listener:
        """Started, listening for the changes `handlers` handle."""

        def reopened() -> None:
            for changed in (handlers.tools_changed, handlers.prompts_changed, handlers.resources_changed):
                if changed is not None:
                    changed()

        declared = session.server_capabilities

        def changes(kind: str) -> bool:  # what the server says it notifies
            return bool(getattr(getattr(declared, kind, None), "list_changed", False))

        listener = cls(
            server,
            session,
            tools=handlers.tools_changed is not None and changes("tools"),
            prompts=handlers.prompts_changed is not None and changes("prompts"),
            resources=handlers.resources_changed is not None and changes("resources"),
            reopened=reopened,
        )
        listener.start()
        return listener

    @property
    def wanted(self) -> bool:
        return any(self._flags.values()) or bool(self.uris)

    def start(self) -> None:
        if self._task is None and self.wanted:
            self._task = asyncio.create_task(self._run(), name=f"mcp-listen:{self.server}")

    async def set_uris(self, uris: list[str], *, timeout: float) -> None:
        """Listen to `uris` from now on; waits (at most `timeout` s) for the server to acknowledge."""
        if uris == self.uris:
            return
        self.uris = list(uris)
        self._acked.clear()
        if self._task is None or self._task.done():  # never started, or the server has no listen
            self._task = None
            self.start()
        else:
            self._changed.set()
        if self._task is not None:
            async with asyncio.timeout(timeout):
                await self._acked.wait()

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.wait({task})

    async def _run(self) -> None:
        from mcp import MCPError
        from mcp.client.subscriptions import listen
        from mcp.types import METHOD_NOT_FOUND

        delay, first = RELISTEN_DELAY, True
        while True:
            self._changed.clear()
            try:
                async with listen(
                    self._session,
                    tools_list_changed=self._flags["tools"],
                    prompts_list_changed=self._flags["prompts"],
                    resources_list_changed=self._flags["resources"],
                    resource_subscriptions=self.uris,
                ) as subscription:
                    self.honored = subscription.honored
                    self._acked.set()
                    if not first:
                        self._reopened()
                    first, delay = False, RELISTEN_DELAY
                    await self._until_changed_or_ended(subscription)
                if self._changed.is_set():
                    continue
                logger.info(
                    "MCP server %r ended its subscriptions/listen stream; listening again", self.server
                )
            except asyncio.CancelledError:
                raise
            except MCPError as exc:
                if exc.code != METHOD_NOT_FOUND:
                    self._failed(exc, delay)
                else:
                    logger.info(
                        "MCP server %r offers no subscriptions/listen: its changes are not notified",
                        self.server,
                    )
                    self.honored = None
                    self._acked.set()
                    return
            except Exception as exc:
                self._failed(exc, delay)
            self.honored = None
            self._acked.set()  # a waiting `set_uris` learns no more by waiting
            await asyncio.sleep(delay)  # a back-off, not a synchronisation
            delay = min(delay * 2, 30.0)

    def _failed(self, exc: BaseException, delay: float) -> None:
        logger.warning(
            "MCP server %r: subscriptions/listen failed (%s); change notifications are missed "
            "until it is open again in %g s",
            self.server,
            redact_text(f"{type(exc).__name__}: {exc}"),
            delay,
        )

    async def _until_changed_or_ended(self, subscription: Any) -> None:
        """Drain the stream (its events already went to the message handler) until it ends or
        the filter changes."""

        async def drain() -> None:
            async for _event in subscription:
                pass

        drained = asyncio.ensure_future(drain())
        changed = asyncio.ensure_future(self._changed.wait())
        try:
            await asyncio.wait({drained, changed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in (drained, changed):
                waiter.cancel()
            await asyncio.wait({drained, changed})
        if drained.done() and not drained.cancelled() and drained.exception() is not None:
            raise drained.exception()  # type: ignore[misc]
