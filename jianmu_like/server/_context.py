"""What every endpoint of one app shares: its registry, its sample agent, its settings.

Endpoints are plain module-level functions (`server._api` and the protocol modules' tables); the
one object they share is a `ServerContext`, built by `create_app` and kept on the app
(`app.state.server`), reached from a request by `context(request)`. Adding a route is one entry
in a table, with no closure to thread through.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

from .._run.protocol import AgentLike
from ..checkpoint._contract import Checkpointer
from ._a2a import A2ACard
from ._debug import Debugging
from ._idempotency import IdempotencyKeys
from ._recordings import Recordings
from ._routes import ApiRoute
from ._run_record import RunConflict
from ._runs import AgentFactory, RunRegistry

Cleanup = Callable[[], Awaitable[None]]


@dataclass(eq=False)
class ServerContext:
    """The state of one served app; `table` is filled by `create_app` once the routes exist."""

    agent_factory: AgentFactory
    registry: RunRegistry
    idempotency: IdempotencyKeys
    model_name: str | None = None
    token: bool = False
    a2a: A2ACard | None = None
    on_shutdown: Sequence[Cleanup] = ()
    debugging: Debugging = field(default_factory=Debugging)
    """The server's breakpoints (`server._debug`)."""
    recordings: Recordings = field(default_factory=lambda: Recordings(None))
    """The folder of recordings the console opens (`server._recordings`)."""
    table: list[ApiRoute] = field(default_factory=list)
    described: list[AgentLike] = field(default_factory=list)
    """The sample agent, once built (closed with the app)."""
    openapi: dict[str, Any] | None = None
    """The OpenAPI document, built on its first request."""

    def sample(self) -> AgentLike:
        """One agent of the factory, built once, to describe the tree and find the store."""
        if not self.described:
            self.described.append(self.agent_factory())
        return self.described[0]

    def thread_store(self) -> Checkpointer:
        """The checkpoint store the server's agents save into (threads live there)."""
        store = self.sample().checkpointer
        if store is None:
            raise RunConflict(
                "this server keeps no checkpoint store, so no thread versions: serve with "
                "--checkpoint STORE (a conversation is continued in memory while its last run is kept)"
            )
        return store

    def served_model(self) -> str:
        """The model name of the OpenAI-compatible face (default: the tree's root name)."""
        return self.model_name if self.model_name is not None else str(self.sample().tree.name)

    async def aclose(self) -> None:
        """At the app's shutdown: the runs cancelled, their agents closed, then `on_shutdown`."""
        await self.idempotency.aclose()
        await self.registry.aclose()
        for agent in self.described:
            await agent.aclose()
        for cleanup in self.on_shutdown:
            await cleanup()


def context(request: Request) -> ServerContext:
    """The context of the app serving `request`."""
    server: ServerContext = request.app.state.server
    return server
