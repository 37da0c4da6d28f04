"""A fresh run first answers the tool calls its thread left without results.

A run cancelled at an await of a tool batch (Ctrl-C, SIGTERM, `task.cancel()`) keeps the
checkpoint of its last tick, whose batch is still open: `resume` carries it on. A new question
instead must not follow those calls unanswered (the chat API refuses such a conversation, and
every later run of the thread would fail), so before the new input goes in, every unanswered
call of every namespace is answered by the rule of `nodes._open_calls` — a finished call with its
recorded outcome (the state's, else the journal's: it never runs twice), the others as not run
or interrupted — and the repair is said in a `thread.repaired` event and a warning log line. A
thread written by an older version with such a history is repaired the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..models._keys import StateKeys
from ..models._messages import Message
from ..nodes._open_calls import answer_open_calls
from ..nodes._results import read_key
from ..nodes._tool_outcome import ToolOutcome
from ..state._journal import JournalEntry
from ..state._manager import StateManager
from ..telemetry.logging import get_logger

_log = get_logger("jianmu_like.run")


def repair_open_calls(
    sm: StateManager, keys: StateKeys, entries: Mapping[str, JournalEntry], *, thread_id: str | None
) -> list[dict[str, Any]]:
    """Answer, in the state, every tool call of every namespace's history that has no result
    (see the module); what was answered (empty: the history was valid and is untouched)."""
    repaired: list[dict[str, Any]] = []
    for namespace in (None, *sorted(sm.namespaces())):
        history = read_key(sm, keys.messages, namespace, None)
        if not history:
            continue
        messages = [m if isinstance(m, Message) else Message.model_validate(m) for m in history]
        if not any(m.tool_calls for m in messages if m.role == "assistant"):
            continue
        outcomes = {
            call_id: o if isinstance(o, ToolOutcome) else ToolOutcome.model_validate(o)
            for call_id, o in (read_key(sm, keys.tool_results, namespace, None) or {}).items()
        }
        pending = read_key(sm, keys.pending_approvals, namespace, None) or ()
        waiting = frozenset(_field(a, "id") for a in pending)
        clients = frozenset(_field(a, "id") for a in pending if _field(a, "kind") == "client_tool")
        edited = {
            call_id: arguments
            for call_id, decision in (read_key(sm, keys.approval_decisions, namespace, None) or {}).items()
            if (arguments := _field(decision, "arguments")) is not None
        }
        fixed, answered = answer_open_calls(
            messages,
            namespace=namespace,
            outcomes=outcomes,
            entries=entries,
            waiting=waiting,
            edited=edited,
            clients=clients,
        )
        if not answered:
            continue
        sm.set(keys.messages, fixed, namespace)
        for item in answered:
            repaired.append({**item, "namespace": namespace})
            _log.warning(
                "tool call without a result answered before the run",
                thread_id=thread_id,
                namespace=namespace,
                **item,
            )
    return repaired


def _field(value: Any, name: str) -> Any:
    """A field of a pydantic model or of its dumped dict (namespaced keys may hold either)."""
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)
