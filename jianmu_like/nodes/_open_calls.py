"""Tool calls left without results: the one rule for answering them.

The chat API refuses a conversation in which an assistant message's `tool_calls` are not each
followed by a `tool` message (HTTP 400), so a history holding such calls would fail every later
request of its thread. A run stopped in the middle of a tool batch leaves one: halted in
process (`POST /cancel`, `Agent.aclose()`, a Parallel sibling failing), the ToolExecutor answers
the batch as it stops; cancelled at an await (Ctrl-C, SIGTERM, `task.cancel()`), the checkpoint
kept is the last tick's, which still has the batch open so that `resume` can carry it on.

Either way the calls are answered by this module's rule, so a thread is never dead:

- a call that finished keeps its real outcome (from the state's `tool_results`, else the
  thread's journal): it ran once, and the model reads what it did — never "interrupted", which
  would invite the model to run it again;
- a call waiting for a human's approval is answered `NOT_RUN_WAITING` (it never ran); one waiting
  for its client's result (a client tool, `clients`), `NO_CLIENT_RESULT`;
- any other call is answered `INTERRUPTED` (it may have been running when the run stopped).

`answer_open_calls` applies it to a whole history (every assistant message, not only the last:
a thread written by an older version may hold an unanswered batch anywhere); the run core calls
it when a fresh run starts on a thread (see `_run.core`), the ToolExecutor's halt uses the same
texts for the batch it stops.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..models._messages import Message, ToolCall
from ..state._journal import JournalEntry
from ._tool_outcome import ToolOutcome

INTERRUPTED = "Error: interrupted: the run was stopped before this call finished"
"""The observation of a call the stopped run did not finish (it may have been running)."""

NOT_RUN_WAITING = "Error: not run: it was waiting for human approval when the run was stopped"
"""The observation of a call that waited for an approval when the run stopped (it never ran)."""

NO_CLIENT_RESULT = "Error: no result: the client had not answered when the run was stopped"
"""The observation of a client tool's call (`nodes._client_tools`) still waiting for its client's
result when the run stopped (it never ran here)."""


def journal_key(namespace: str | None, batch: int, call: ToolCall) -> str:
    """Identifies a call within its thread's journal: namespace, batch (the history's length
    when the batch started: the assistant message's index + 1), id, name and arguments (call ids
    alone repeat: some backends number them from 1 in every process)."""
    raw = json.dumps([namespace, batch, call.id, call.name, call.arguments], default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def answer_open_calls(
    messages: Sequence[Message],
    *,
    namespace: str | None = None,
    outcomes: Mapping[str, ToolOutcome] | None = None,
    entries: Mapping[str, JournalEntry] | None = None,
    waiting: frozenset[str] = frozenset(),
    edited: Mapping[str, dict[str, Any]] | None = None,
    clients: frozenset[str] = frozenset(),
) -> tuple[list[Message], list[dict[str, str]]]:
    """`messages` with a `tool` message for every call that has none (see the module), placed
    after the batch's existing answers; and what was answered (`call_id`, `tool`, `answer`:
    "outcome" | "waiting" | "interrupted"). Nothing to answer: the same messages and `[]`.

    `outcomes`: the state's outcomes of the open batch (by call id); `entries`: the thread's
    journal; `waiting`: ids of calls waiting for approval; `edited`: arguments a reviewer
    corrected (by call id: the call ran, and was journaled, with those)."""
    repaired: list[Message] = []
    answered: list[dict[str, str]] = []
    index, count = 0, len(messages)
    while index < count:
        message = messages[index]
        repaired.append(message)
        index += 1
        calls = message.tool_calls if message.role == "assistant" else None
        if not calls:
            continue
        batch = index  # the history's length when the batch started (ToolExecutor._batch)
        answers: set[str] = set()
        while index < count and messages[index].role == "tool":
            answers.add(messages[index].tool_call_id or "")
            repaired.append(messages[index])
            index += 1
        for call in calls:
            if call.id in answers:
                continue
            content, how = _answer(call, namespace, batch, outcomes, entries, waiting, edited, clients)
            repaired.append(Message(role="tool", content=content, tool_call_id=call.id, name=call.name))
            answered.append({"call_id": call.id, "tool": call.name, "answer": how})
    return (repaired, answered) if answered else (list(messages), [])


def _answer(
    call: ToolCall,
    namespace: str | None,
    batch: int,
    outcomes: Mapping[str, ToolOutcome] | None,
    entries: Mapping[str, JournalEntry] | None,
    waiting: frozenset[str],
    edited: Mapping[str, dict[str, Any]] | None,
    clients: frozenset[str] = frozenset(),
) -> tuple[str, str]:
    known = outcomes.get(call.id) if outcomes else None
    if known is not None:
        return known.content, "outcome"
    if entries:
        ran = call
        if edited and call.id in edited:
            ran = call.model_copy(update={"arguments": edited[call.id]})
        entry = entries.get(journal_key(namespace, batch, ran))
        if entry is not None and entry.status == "finished" and entry.outcome is not None:
            return ToolOutcome.model_validate(entry.outcome).content, "outcome"
    if call.id in clients:
        return NO_CLIENT_RESULT, "waiting"
    if call.id in waiting:
        return NOT_RUN_WAITING, "waiting"
    return INTERRUPTED, "interrupted"
