"""What a `/v1/` run's end means to an OpenAI client, and a chat UI's Stop.

- A failed run is a 500 `agent_failed`, a cancelled one a 409 `run_cancelled`, one that failed
  on its own model's rate limit (the upstream answered 429 after the agent's own retries) a 429
  `rate_limit_exceeded` with the upstream's `Retry-After`. None of them is retried by the SDKs
  (`x-should-retry: false`): a retry would start the agent again, side effects and all; the
  client decides (see `server._idempotency` for what a retry with the same key gets).
- A run whose request was answered once and which is gone from memory since (evicted, or the
  server restarted) is replayed from its recorded outcome (`replayed`).
- Stop: a chat UI stops an answer by closing the stream. The run is cancelled as `POST
  /api/runs/{id}/cancel` does when the last stream following it closes before its end
  (`StreamStops.watched`), and the conversation's next message waits (boundedly) for that
  cancellation to end instead of finding the thread busy (`StreamStops.settle`).

Both `/v1/` faces (chat completions and responses) start and resume their runs here
(`start_client_run`, `resume_client_run`): one way a request's client tools and output schema
reach a run, and one way the client's tool results resume it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any, TypeVar

from ..models._messages import Message
from ..nodes._client_tools import ClientTools
from ._client_tools import (
    ClientRequestError,
    ToolAnswers,
    agent_tool_names,
    answer_decision,
    check_answers,
    client_calls,
    find_answered,
    find_waiting,
    refuse_clashes,
)
from ._idempotency import Remembered
from ._openai_errors import OpenAIError, retry_after_header
from ._run_record import NotFound, RunConflict, RunRecord
from ._runs import RunRegistry

T = TypeVar("T")
STOP_GRACE = 1.0
"""Seconds a message waits for its conversation's streamed run to notice that its stream closed."""
CANCEL_GRACE = 10.0
"""Seconds a message waits for its conversation's cancelled run to end (then: 409 thread busy)."""


def usage_totals(usage: dict[str, Any] | None, spent: dict[str, int] | None = None) -> dict[str, int]:
    """The usage of a response (chat completions' names); `spent` (the run's usage reported by
    earlier responses: a run resumed by a client's tool results) is left out, so a client
    summing its responses counts each model call once."""
    usage = usage or {}
    prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    total = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": int(usage.get("total_tokens") or prompt + completion),
    }
    if spent:
        total = {key: max(0, value - spent.get(key, 0)) for key, value in total.items()}
    return total


def start_client_run(
    registry: RunRegistry,
    question: str,
    thread: str | None,
    history: Sequence[Message],
    client: ClientTools | None,
    schema: dict[str, Any] | None,
    *,
    tools_field: str = "tools",
    format_field: str = "response_format",
) -> RunRecord:
    """A new run for a request's question, with its client tools and output schema (the
    request's fields `tools_field` and `format_field`, named in a refusal)."""
    inputs: dict[str, Any] = {}
    if client is not None:
        inputs["client_tools"] = client
    if schema is not None:
        inputs["output_schema"] = schema
    if thread is not None:
        waiting = registry.active.get(thread)
        if waiting is not None and client_calls(waiting):
            ids = ", ".join(client_calls(waiting))
            raise RunConflict(
                f"run {waiting.run_id} of thread {thread!r} waits for the results of client tool "
                f"calls {ids}: send the result of each"
            )

    def check(agent: Any) -> None:
        for key in inputs:
            if not agent.accepts(key):
                field = tools_field if key == "client_tools" else format_field
                raise ClientRequestError(
                    f"{field}: the served agent takes no {key.replace('_', ' ')} (only a ReAct agent does)",
                    field,
                )
        if client is not None:
            refuse_clashes(client, agent_tool_names(agent))

    return registry.start(question, thread, history=history, inputs=inputs, check=check)


def resume_client_run(
    registry: RunRegistry, answers: ToolAnswers, thread: str | None, *, field: str = "messages"
) -> tuple[RunRecord, int, dict[str, int] | None]:
    """Resume the run waiting for these tool results; returns it, where its log stood and the
    usage the client was already told of. `field` names the request's field in a refusal."""
    record = find_waiting(registry, answers, thread)
    if record is None and (answered := find_answered(registry, answers.results, thread)) is not None:
        raise RunConflict(
            f"tool call {', '.join(map(repr, answers.results))} was already answered: run "
            f"{answered.run_id} took that answer (its outcome: GET /api/runs/{answered.run_id})"
        )
    if record is None and thread is not None:  # waiting in the store since an earlier server
        decisions = {call_id: answer_decision(text) for call_id, text in answers.results.items()}
        stored = registry.stored.resume(thread, decisions)
        if stored is not None:
            return stored, 0, None
    if record is None:
        ids = ", ".join(map(repr, answers.results))
        raise ClientRequestError(
            f"tool result for unknown tool call id {ids}: no run waits for it (answered "
            "already, expired, or never asked)",
            field,
            "unknown_tool_call",
        )
    check_answers(record, answers)
    after = len(record.log)
    spent = usage_totals(record.result.usage.model_dump()) if record.result is not None else None
    for call_id, content in answers.results.items():
        decision = answer_decision(content)
        registry.decide(call_id, True, decision.reason, record.thread_id, output=decision.output)
    return record, after, spent


def failure_error(done: dict[str, Any], model_failure: dict[str, Any] | None) -> OpenAIError:
    """The error of a run that ended without an answer (`done`: its `done` payload;
    `model_failure`: its last `model.call.failed`, if any)."""
    why = done.get("error") or "no answer"
    if done.get("status") == "cancelled":
        return OpenAIError(409, f"the run was cancelled: {why}", "conflict", "run_cancelled", retry=False)
    termination = done.get("termination") or {}
    if (
        model_failure is not None
        and model_failure.get("status_code") == 429
        and termination.get("reason") in (None, "model_error")
    ):
        return OpenAIError(
            429,
            f"the agent's model is rate limited (its server answered 429): {why}",
            "rate_limit_error",
            "rate_limit_exceeded",
            retry=False,
            headers=retry_after_header(model_failure.get("retry_after")),
        )
    # A structured answer that never matched its schema (`response_format`) says so in its code.
    code = "invalid_output" if termination.get("reason") == "invalid_output" else "agent_failed"
    return OpenAIError(500, f"the agent failed: {why}", "agent_error", code, retry=False)


def stored_approval_error(found: Remembered, kind: str, base_url: str) -> OpenAIError:
    """The key's run is gone from this server (a restart) while it waited for an approval
    (`kind` "approval") or was working ("interrupted"): it is never started again."""
    where = f"run {found.run_id} (thread {found.thread_id})"
    if kind == "approval":
        message = (
            f"{where} was waiting for a human approval when this server stopped; decide it with "
            f"`jianmu-like approvals` on the server's store, then continue the conversation "
            f"(thread {found.thread_id}); the console is at {base_url}/"
        )
        return OpenAIError(409, message, "approval_required", "approval_required", retry=False)
    message = (
        f"{where} was interrupted before it answered (the server stopped); it is not started "
        f"again for this Idempotency-Key: send a new key to ask again"
    )
    return OpenAIError(409, message, "conflict", "run_interrupted", retry=False)


async def replayed(found: Remembered) -> AsyncIterator[tuple[str, Any]]:
    """The recorded outcome of a run that is gone, as `progress` yields a live one's end."""
    outcome = found.outcome
    if outcome is None:
        yield "interrupted", {}
        return
    kind = str(outcome.get("kind"))
    yield kind, dict(outcome.get("done") or {})


class StreamStops:
    """The streams following each run: the last one closing early cancels the run."""

    def __init__(self, registry: RunRegistry) -> None:
        self.registry = registry
        self.followers: dict[str, int] = {}
        self.closed: dict[str, asyncio.Event] = {}
        """Set when the last stream of a run ends (by id; while streams follow it)."""

    async def watched(self, record: RunRecord, events: AsyncIterator[T]) -> AsyncIterator[T]:
        """`events` (a stream of `record`); closed before its end (the client went away),
        the run is cancelled unless another stream still follows it."""
        run_id = record.run_id
        self.followers[run_id] = self.followers.get(run_id, 0) + 1
        closed = self.closed.setdefault(run_id, asyncio.Event())
        ended = False
        try:
            async for event in events:
                yield event
            ended = True
        finally:
            self.followers[run_id] -= 1
            if not self.followers[run_id]:
                del self.followers[run_id]
                del self.closed[run_id]
                if not ended and record.status == "running" and not record.cancelling:
                    with contextlib.suppress(RunConflict, NotFound):
                        self.registry.cancel(run_id)
                closed.set()

    async def settle(self, thread_id: str) -> None:
        """Before a new message of `thread_id`: if its run is streamed, give a closed stream
        `STOP_GRACE` to be noticed; if that run is being cancelled, wait (`CANCEL_GRACE` at
        most) for it to end. Whatever is left answers as a busy thread."""
        active = self.registry.active.get(thread_id)
        if active is None:
            return
        closed = self.closed.get(active.run_id)
        if closed is not None and not active.cancelling:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(closed.wait(), STOP_GRACE)
        if active.cancelling and not active.finished:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(_end(active), CANCEL_GRACE)


async def _end(record: RunRecord) -> None:
    async for _message in record.follow(len(record.log)):
        pass
