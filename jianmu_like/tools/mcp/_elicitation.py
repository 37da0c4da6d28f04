"""Answering an MCP server's `elicitation/create`: the server asks the user for input mid-call.

The MCP half of a question (`tools._questions`): `ElicitationBox.ask` translates the server's
`ElicitRequestParams` into a `Question` put to a person, and the person's `QuestionAnswer` back
into an `ElicitResult`. Everything else (the open questions, their answers, the timeout, the
handler) is the generic box's, so the run core lists and answers an MCP server's question as an
interruption of kind `question` without knowing MCP. A provider whose config does not say
`elicitation: ask` does not declare the capability (servers then do not ask).

The same box carries the sampling requests a `sampling: ask` server makes (`kind="sampling"`):
a person accepts (the agent's model answers the server) or declines them, through the same
routes, CLI and console form (see `tools.mcp._sampling`).

The names `ElicitationRequest`, `ElicitationAnswer` (public in `jianmu_like.tools`) are the
generic `Question` and `QuestionAnswer`; the helpers (`boxes_of`, `pending_in`, `respond_in`,
`close_human_channel`, `no_human_channel`, `with_defaults`) live in `tools._questions` and are
re-exported here for the code that imported them from this module.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from .._questions import (
    Action,
    ElicitationError,
    Handler,
    Question,
    QuestionAnswer,
    QuestionBox,
    UnknownElicitation,
    boxes_of,
    close_human_channel,
    no_human_channel,
    pending_in,
    respond_in,
    with_defaults,
)

if TYPE_CHECKING:
    from mcp.types import ElicitRequestParams, ElicitResult, ErrorData

__all__ = [
    "Action",
    "ElicitationAnswer",
    "ElicitationBox",
    "ElicitationError",
    "ElicitationRequest",
    "Handler",
    "UnknownElicitation",
    "boxes_of",
    "close_human_channel",
    "no_human_channel",
    "pending_in",
    "respond_in",
    "with_defaults",
]

logger = logging.getLogger(__name__)

ElicitationRequest = Question
"""An MCP server's open question: a `Question` (the name this module always gave it)."""
ElicitationAnswer = QuestionAnswer
"""The answer to an elicitation: a `QuestionAnswer`."""


class ElicitationBox(QuestionBox):
    """An MCP provider's open questions, and the translation of the server's requests into them."""

    async def ask(
        self, params: ElicitRequestParams, emit: Callable[..., None] | None
    ) -> ElicitResult | ErrorData:
        """Put the server's request up for an answer and wait for it (at most `timeout`); an MCP
        error when `max_open` are open already, or for a URL no user should be shown."""
        from mcp.types import ElicitResult

        from ._bounds import refusal, url_refusal

        url = getattr(params, "url", None)
        why = url_refusal(str(url)) if url is not None else None
        if why is None and self.full():
            why = f"{self.max_open} questions of this server are open already (max_open_elicitations)"
        if why is not None:
            logger.warning("MCP server %r: elicitation refused: %s", self.server, why)
            return refusal(f"elicitation refused: {why}")
        answer = await self.ask_human(
            message=params.message,
            requested_schema=_dump(getattr(params, "requested_schema", None)),
            url=url,
            emit=emit,
            runs=self.callers(),  # it arrives in the session's task: any run calling may have asked
        )
        return ElicitResult(action=answer.action, content=answer.content)


def _dump(schema: Any) -> dict[str, Any]:
    if schema is None:
        return {}
    if isinstance(schema, BaseModel):
        return schema.model_dump(by_alias=True, exclude_none=True)
    return dict(schema)
