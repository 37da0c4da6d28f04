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
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, TypeVar

from ._idempotency import Remembered
from ._openai_errors import OpenAIError, retry_after_header
from ._run_record import NotFound, RunConflict, RunRecord
from ._runs import RunRegistry

T = TypeVar("T")
STOP_GRACE = 1.0
"""Seconds a message waits for its conversation's streamed run to notice that its stream closed."""
CANCEL_GRACE = 10.0
"""Seconds a message waits for its conversation's cancelled run to end (then: 409 thread busy)."""


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
