"""What an MCP session tells its owner about the server: the handlers, and which server
notification goes to which (the same for every revision: at 2026-07-28 the changes arrive on
the `subscriptions/listen` stream, and the SDK passes them on like any notification)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._auth import Authorize

if TYPE_CHECKING:
    from mcp.types import (
        CreateMessageRequestParams,
        CreateMessageResult,
        ElicitRequestParams,
        ElicitResult,
        ErrorData,
        LoggingMessageNotificationParams,
    )


@dataclass
class SessionHandlers:
    """What the session tells its owner about the server, between and during requests.

    Every field is optional; a server notification nobody handles is dropped. `roots` is asked
    whenever the server sends `roots/list`; with it set, the client declares the roots
    capability in its handshake (servers only ask clients that declare it)."""

    tools_changed: Callable[[], None] | None = None
    resources_changed: Callable[[], None] | None = None
    """`resources/list_changed` (or `resources/updated` when `resource_updated` is unset): what
    `read_resource` offers is stale."""
    resource_updated: Callable[[str], None] | None = None
    """`resources/updated` of a subscribed resource, with its URI."""
    prompts_changed: Callable[[], None] | None = None
    log: Callable[[LoggingMessageNotificationParams], None] | None = None
    roots: Callable[[], list[tuple[str, str | None]]] | None = None
    """`(uri, name)` pairs sent to a server asking for the client's roots."""
    sampling: Callable[[CreateMessageRequestParams], Awaitable[CreateMessageResult | ErrorData]] | None = None
    """Answers `sampling/createMessage`; with it set, the client declares sampling."""
    elicitation: Callable[[ElicitRequestParams], Awaitable[ElicitResult | ErrorData]] | None = None
    """Answers `elicitation/create`; with it set, the client declares elicitation."""
    authorize: Authorize | None = None
    """Plays the person's part of an OAuth login (`auth:` servers): without it, a server that
    needs one fails with `MCPLoginRequiredError`."""


def notify(handlers: SessionHandlers, message: Any) -> None:
    """Tell `handlers` what a server notification says (one nobody handles is dropped)."""
    method = getattr(message, "method", None)
    handler = (
        {
            "notifications/tools/list_changed": handlers.tools_changed,
            "notifications/resources/list_changed": handlers.resources_changed,
            "notifications/resources/updated": handlers.resources_changed,
            "notifications/prompts/list_changed": handlers.prompts_changed,
        }.get(method)
        if isinstance(method, str)
        else None
    )
    if method == "notifications/resources/updated" and handlers.resource_updated is not None:
        handlers.resource_updated(str(getattr(getattr(message, "params", None), "uri", "")))
    elif handler is not None:
        handler()
