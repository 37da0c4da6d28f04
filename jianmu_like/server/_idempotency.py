"""One request, one run: `Idempotency-Key` and the SDKs' own retries of `/v1/chat/completions`.

A chat completion here is an agent run, with side effects (tool calls). A client that sends the
same request again — an explicit retry with its `Idempotency-Key`, or the OpenAI SDKs' automatic
retry after a timeout or a dropped connection (they resend the same body with
`X-Stainless-Retry-Count: 1, 2, ...`, and no key: `openai.OpenAI` sets no idempotency header) —
must get that run's response, never a second run:

- `Idempotency-Key: <1-255 printable ASCII characters>` names one run for `WINDOW` seconds (24 h,
  as OpenAI's and Stripe's keys): the first request starts it, a later one with the key follows
  the same run (waits for it if it is still working, replays its answer or its error if it has
  ended). The same key with another body is refused (400 `idempotency_key_reused`; the IETF
  draft suggests 422, but every other invalid `/v1/` request is a 400, the status OpenAI's
  clients raise `BadRequestError` for).
- Without a key, a request whose `X-Stainless-Retry-Count` is 1 or more is an SDK's retry of an
  identical earlier request: it follows the run that its first attempt (count 0, the same body:
  its fingerprint) started, within `RETRY_WINDOW` (an hour); none if that attempt started none.
  A first attempt (count 0) always starts a run: two users may ask the same thing.
- With a checkpoint store, the key -> run mapping and each run's outcome are kept in the store
  too (the journal of a reserved thread per window), so a retry after a restart replays the
  answer; a run the restart interrupted is refused (409 `run_interrupted`), never run again.

In one process the claim is atomic (a lock per key): two identical requests at once start one
run. Two server processes sharing one store are not coordinated (the journal has no atomic
put-if-absent); give each its own store or key space.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ..checkpoint._contract import Checkpointer, CheckpointError
from ..state._journal import JournalEntry
from ._client_tools import tool_call_items
from ._openai_errors import invalid
from ._run_record import RunRecord
from ._watch import log

WINDOW = 24 * 3600.0
"""Seconds a key names its run (and the store keeps the mapping)."""
RETRY_WINDOW = 3600.0
"""Seconds an SDK's retry (no key) may follow the run its body started: its retries come within
(1 + max_retries) timeouts; past that, an identical body is a new question."""
MAX_KEY_LENGTH = 255
MAX_REMEMBERED = 100_000
"""Keys kept in memory at most (the oldest go first; a store still answers for them)."""
THREAD_PREFIX = "jianmu-v1-idempotency:"
"""The reserved threads of the store whose journals hold the keys, one per window."""
_TOOL = "v1.chat.completions"


@dataclass
class Identity:
    """What names a request's run: `key` (a digest), the body's `fingerprint`, and whether
    this request may follow an earlier run (`attach`: an explicit key, or an SDK's retry)."""

    key: str
    fingerprint: str
    attach: bool
    explicit: bool


@dataclass
class Remembered:
    """A key's run, and its outcome once known (`None`: still working, or interrupted)."""

    run_id: str
    thread_id: str
    fingerprint: str
    at: float
    outcome: dict[str, Any] | None = None


@dataclass
class Claim:
    """The result of `IdempotencyKeys.claim`: the run the key already names (`found`), or
    nothing, and then `remember(record)` names the run the caller started."""

    keys: IdempotencyKeys
    identity: Identity | None
    found: Remembered | None = None

    def remember(self, record: RunRecord) -> None:
        if self.identity is not None:
            self.keys.remember(self.identity, record)


def fingerprint(body: BaseModel) -> str:
    """The request body's digest: the same JSON, whatever its spacing and key order."""
    text = json.dumps(body.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def identify(headers: Any, body: BaseModel) -> Identity | None:
    """The request's identity, from `Idempotency-Key` or `X-Stainless-Retry-Count`; None when it
    has neither (nothing to remember). A bad key is a 400 naming the header."""
    digest = fingerprint(body)
    given = headers.get("idempotency-key")
    if given is not None:
        if not 1 <= len(given) <= MAX_KEY_LENGTH or not all(" " <= c <= "~" for c in given):
            raise invalid(
                f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} printable ASCII characters "
                f"(got {len(given)} characters)",
                "invalid_idempotency_key",
                "Idempotency-Key",
            )
        key = hashlib.sha256(given.encode()).hexdigest()
        return Identity(f"key:{key}", digest, attach=True, explicit=True)
    retries = headers.get("x-stainless-retry-count")
    if retries is None:
        return None
    retry = retries.strip().isdigit() and int(retries.strip()) > 0
    return Identity(f"body:{digest}", digest, attach=retry, explicit=False)


class IdempotencyKeys:
    """The keys of one server: in memory for `window` seconds, and in `store()` when the
    server has one (see the module)."""

    def __init__(
        self,
        store: Callable[[], Checkpointer | None],
        *,
        window: float = WINDOW,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.window = window
        self.clock = clock
        self.memory: OrderedDict[str, Remembered] = OrderedDict()
        self._locks: dict[str, tuple[asyncio.Lock, list[int]]] = {}
        """Each key claimed now: its lock and how many requests hold or wait for it."""
        self._tasks: set[asyncio.Task[None]] = set()
        self._pruned: int | None = None
        self._read: set[int] = set()
        """The windows whose store thread this process has read into memory."""

    @asynccontextmanager
    async def claim(self, identity: Identity | None) -> AsyncIterator[Claim]:
        """Hold the key while the caller looks up (`found`) or starts and remembers its run:
        a second request with the key waits here, then finds that run."""
        if identity is None:
            yield Claim(self, None)
            return
        lock, users = self._locks.setdefault(identity.key, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                if identity.attach:
                    found = await self.find(identity)
                else:  # a first attempt: its retries follow its run or none, never an older one
                    found = None
                    self._keep(identity.key, Remembered("", "", identity.fingerprint, self.clock()))
                if found is not None and found.fingerprint != identity.fingerprint:
                    raise invalid(
                        "this Idempotency-Key was used with another request body (within "
                        f"{self.window:g} s); a key names one request: send a new key for a new request",
                        "idempotency_key_reused",
                        "Idempotency-Key",
                    )
                yield Claim(self, identity, found)
        finally:
            users[0] -= 1
            if not users[0]:
                del self._locks[identity.key]

    async def find(self, identity: Identity) -> Remembered | None:
        """The run `identity` names within the window: from memory, which holds every key of
        the window's store threads once the first lookup has read them (once per process)."""
        now = self.clock()
        window = self.window if identity.explicit else min(self.window, RETRY_WINDOW)
        store = self.store()
        bucket = _bucket(now, self.window)
        unread = [b for b in (bucket, bucket - 1) if b not in self._read]
        if store is not None and unread and identity.key not in self.memory:
            try:
                rows = await asyncio.to_thread(_load, store, unread)
            except CheckpointError as exc:
                log.warning("cannot read the idempotency keys", error=str(exc))
                rows = None
            if rows is not None:
                self._read.update(unread)
                for key, entry in rows.items():
                    if key not in self.memory:  # what this process wrote is newer
                        self._keep(key, entry)
        found = self.memory.get(identity.key)
        if found is None or not found.run_id or now - found.at > window:
            return None  # (no run id: its first attempt started none)
        return found

    def remember(self, identity: Identity, record: RunRecord) -> None:
        """`identity` names `record` from now on; its outcome is stored as it comes. Called
        before the run's task first runs: the key is in the store before the agent does
        anything (a crash right after cannot make a retry start it again)."""
        entry = Remembered(record.run_id, record.thread_id, identity.fingerprint, self.clock())
        self._keep(identity.key, entry)
        store = self.store()
        if store is not None:  # synchronously, as the registry reads the store to start a run
            try:
                _write(store, identity.key, entry, self.window, prune=False)
            except CheckpointError as exc:
                log.warning("cannot store an idempotency key", error=str(exc))
        task = asyncio.get_running_loop().create_task(self._record(identity.key, entry, record))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _keep(self, key: str, entry: Remembered) -> None:
        self.memory[key] = entry
        self.memory.move_to_end(key)
        while len(self.memory) > MAX_REMEMBERED:
            self.memory.popitem(last=False)

    async def _record(self, key: str, entry: Remembered, record: RunRecord) -> None:
        """Store the run's outcome when the run suspends or ends."""
        async for message in record.follow(0):
            if message.event == "approval" and message.data.get("status") == "pending":
                if record.waits_for_client():  # its calls, for a retry after a restart
                    entry.outcome = {"kind": "tool_calls", "done": {"tool_calls": tool_call_items(record)}}
                else:
                    entry.outcome = {"kind": "approval"}
                await self._save(key, entry)
            elif message.event == "done":
                entry.outcome = outcome_of(record, message.data)
                await self._save(key, entry)

    async def _save(self, key: str, entry: Remembered) -> None:
        store = self.store()
        if store is None:
            return
        bucket = _bucket(entry.at, self.window)
        prune = bucket != self._pruned
        self._pruned = bucket
        try:
            await asyncio.to_thread(_write, store, key, entry, self.window, prune)
        except CheckpointError as exc:
            log.warning("cannot store an idempotency key", error=str(exc))

    async def aclose(self) -> None:
        """Stop recording outcomes (the server is shutting down)."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def outcome_of(record: RunRecord, done: dict[str, Any]) -> dict[str, Any]:
    """What a replay after the run is gone needs of its end (`done` is its `done` event)."""
    kept = {k: done.get(k) for k in ("answer", "status", "usage", "error", "termination")}
    kind = "answer" if done.get("status") == "success" else "failure"
    return {"kind": kind, "done": kept, "model_failure": record.model_failure}


def _bucket(at: float, window: float) -> int:
    return int(at // window)


def _write(store: Checkpointer, key: str, entry: Remembered, window: float, prune: bool) -> None:
    bucket = _bucket(entry.at, window)
    row = JournalEntry(
        key=key,
        tool_call_id=entry.run_id,
        tool=_TOOL,
        status="started" if entry.outcome is None else "finished",
        outcome={
            "thread_id": entry.thread_id,
            "fingerprint": entry.fingerprint,
            "outcome": entry.outcome,
        },
        started_at=entry.at,
    )
    store.journal_start(f"{THREAD_PREFIX}{bucket}", row)
    if prune:  # the windows before the last: none of their keys names a run any more
        for old in range(bucket - 30, bucket - 1):
            store.delete(f"{THREAD_PREFIX}{old}")


def _load(store: Checkpointer, buckets: list[int]) -> dict[str, Remembered]:
    """Every key the store keeps for `buckets` (oldest window first, so a newer row wins)."""
    found: dict[str, Remembered] = {}
    for bucket in sorted(buckets):
        for key, row in store.journal(f"{THREAD_PREFIX}{bucket}").items():
            data = row.outcome or {}
            entry = Remembered(
                run_id=row.tool_call_id,
                thread_id=str(data.get("thread_id")),
                fingerprint=str(data.get("fingerprint")),
                at=row.started_at,
                outcome=data.get("outcome"),
            )
            if entry.outcome is None:  # the process ended before it wrote the outcome: the thread says
                saved = store.load(entry.thread_id)
                if saved is not None and saved.status == "suspended":
                    entry.outcome = {"kind": "approval"}
            found[key] = entry
    return found
