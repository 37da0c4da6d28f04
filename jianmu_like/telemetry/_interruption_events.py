"""The events of an interruption, emitted in one place: the new pair and the older events.

Every way a run waits for someone publishes `interruption.requested` when the wait opens and
`interruption.decided` when the run takes the answer (`guard._interruptions`). Before that pair
existed, a waiting tool call published `approval.requested` / `approval.resolved` and a tool's
question `elicitation.requested` / `elicitation.resolved`; those still go out, beside the pair,
for readers written against them, and are *deprecated*: `events.DEPRECATED_EVENTS` names each
one's replacement and the release that stops emitting it. Emitters call `requested` and `decided`
here, never the older events themselves, so the day they go is a change of this module alone.

The older events are derived from the pair's fields (an approval's `request` is the `Approval`
as JSON, a question's the `Question`), so they cannot say something the pair does not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from . import events as ev

Emit = Callable[..., None]
"""`emit(EventClass, **fields)`: a node's `emit`, a tool's, or `Telemetry.emit` bound to a node."""

_TOOL_CALL_KINDS = ("approval", "client_tool")


def requested(
    emit: Emit,
    *,
    id: str,
    kind: str,
    request: Mapping[str, Any],
    tool_call: tuple[str | None, str | None] | None = None,
) -> None:
    """A wait opens: `interruption.requested`, after the older event of its kind (if any).
    `tool_call`: (tool, call id) the wait belongs to, (None, None) for none; left out where
    `emit` adds its own call's (a tool's emit)."""
    payload = dict(request)
    tool = tool_call[0] if tool_call is not None else None
    if kind in _TOOL_CALL_KINDS:
        emit(
            ev.ApprovalRequested,
            approval_id=id,
            tool=str(payload.get("tool", tool or "")),
            arguments=dict(payload.get("arguments") or {}),
            reason=payload.get("reason"),
        )
    elif kind == "question":
        emit(ev.ElicitationRequested, request=payload)
    emit(ev.InterruptionRequested, id=id, kind=kind, request=payload, **_call(tool_call))


def decided(
    emit: Emit,
    *,
    id: str,
    kind: str,
    answer: Mapping[str, Any],
    tool_call: tuple[str | None, str | None] | None = None,
    server: str = "",
) -> None:
    """The run takes an answer: `interruption.decided`, after the older event of its kind (if
    any). `answer` is the kind's answer model as JSON (`ApprovalDecision`, `QuestionAnswer`);
    `server` names a question's asker for the older `elicitation.resolved`."""
    answer = dict(answer)
    tool = tool_call[0] if tool_call is not None else None
    if kind in _TOOL_CALL_KINDS:
        emit(
            ev.ApprovalResolved,
            approval_id=id,
            tool=tool or "",
            approved=bool(answer.get("approved")),
            reason=answer.get("reason"),
            arguments=answer.get("arguments") if kind == "approval" else None,
        )
    elif kind == "question":
        emit(ev.ElicitationResolved, id=id, server=server, action=answer.get("action", "cancel"))
    emit(ev.InterruptionDecided, id=id, kind=kind, answer=answer, **_call(tool_call))


def _call(tool_call: tuple[str | None, str | None] | None) -> dict[str, str | None]:
    """The tool call fields, when given (a tool's own `emit` adds its call's: never twice)."""
    return {} if tool_call is None else {"tool": tool_call[0], "call_id": tool_call[1]}
