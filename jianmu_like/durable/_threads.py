"""Threads of durable runs: a run submitted with a `thread_id` continues that conversation.

The conversation lives in the checkpoint store of the durable database itself (the tables of
`checkpoint._postgres`, next to DBOS's): a run loads the thread's newest version as a step (so a
replay after a crash starts from the very state the first execution loaded, whatever was saved
since), runs on it (run-scoped state reset, as `Agent.run` does), and appends its final state as
a new version as another step. Nothing is overwritten: two runs of one thread that overlapped
both append, and the later one's `parent_seq` names the version it started from (a fork, as
`history` shows it).

The save is idempotent. A worker killed after the save committed but before DBOS recorded the
step replays the step on recovery; each run appends at most one version, marked with the run's
id (`version_source`), so the replay finds its own version among those newer than the one it
loaded and returns its seq instead of appending a duplicate.
"""

from __future__ import annotations

import asyncio
from typing import Any

from .._run.protocol import AgentLike
from .._run.result import AgentResult
from ..checkpoint._contract import Checkpoint, CheckpointError, ThreadConflictError, schema_fingerprint
from ..checkpoint._history import summarize
from ..checkpoint._postgres import PostgresCheckpointer

_stores: dict[str, PostgresCheckpointer] = {}
_SAVE_ATTEMPTS = 5


def _store(database: str) -> PostgresCheckpointer:
    """One store per database and process (opened at the first threaded run)."""
    store = _stores.get(database)
    if store is None:
        store = _stores[database] = PostgresCheckpointer(database, pool_size=2)
    return store


def close_stores() -> None:
    """Close the stores this process opened (a worker stopping)."""
    while _stores:
        _stores.popitem()[1].close()


async def load_thread(database: str, thread_id: str) -> dict[str, Any] | None:
    """The thread's newest version as JSON data (None for a new thread): a step's output."""
    checkpoint = await asyncio.to_thread(_store(database).load, thread_id)
    return None if checkpoint is None else checkpoint.model_dump(mode="json")


def continue_thread(agent: AgentLike, thread_id: str, loaded: dict[str, Any] | None) -> int | None:
    """Put the loaded version's state into `agent` (a fresh one); the version's seq, None for a
    new thread. A version of another state schema is a CheckpointError naming both."""
    if loaded is None:
        return None
    checkpoint = Checkpoint.model_validate(loaded)
    sm = agent.state_manager
    mine = schema_fingerprint(sm.schema)
    if checkpoint.schema_fingerprint != mine:
        raise CheckpointError(
            f"thread {thread_id!r} was saved with state schema {checkpoint.schema_name} "
            f"({checkpoint.schema_fingerprint}); this agent uses {sm.schema.__qualname__} ({mine})"
        )
    sm.restore(checkpoint.state)
    return checkpoint.seq


def version_source(run_id: str) -> str:
    """The mark of the one version a durable run appends to its thread (`Checkpoint.source`):
    deterministic per run, so a replayed save step recognises what the first execution stored."""
    return f"durable run {run_id}"


def _saved_by(
    store: PostgresCheckpointer, thread_id: str, head: Checkpoint, parent: int | None, mark: str
) -> int | None:
    """The seq of the version marked `mark` among those newer than `parent` (None: not saved).
    The head is checked first (a replay right after the kill: nobody appended since); older ones
    only when other runs of the thread appended after it, one load each."""
    if head.source == mark:
        return head.seq
    for seq in range(head.seq - 1, parent or 0, -1):
        version = store.load(thread_id, seq)
        if version is not None and version.source == mark:
            return seq
    return None


async def save_thread(
    database: str,
    thread_id: str,
    parent: int | None,
    agent: AgentLike,
    result: AgentResult,
    fingerprint: str,
    run_id: str,
) -> int:
    """Append the run's final state as the thread's next version; its seq (a step's output).
    `fingerprint` identifies the agent (durable._fingerprint: a worker's tree is borrowed per
    run, so the agent's own tree may be gone by now)."""
    store, sm = _store(database), agent.state_manager
    state, mark = sm.snapshot(), version_source(run_id)
    for _ in range(_SAVE_ATTEMPTS):
        head = await asyncio.to_thread(store.load, thread_id)
        if head is not None:  # a replay of this step: the first execution may have saved already
            saved = await asyncio.to_thread(_saved_by, store, thread_id, head, parent, mark)
            if saved is not None:
                return saved
        checkpoint = Checkpoint(
            thread_id=thread_id,
            seq=(head.seq if head is not None else 0) + 1,
            parent_seq=parent,
            status=result.status,
            schema_name=f"{sm.schema.__module__}.{sm.schema.__qualname__}",
            schema_fingerprint=schema_fingerprint(sm.schema),
            tree_fingerprint=fingerprint,
            state=state,
            summary=summarize(state, {}, agent.keys),
            source=mark,
        )
        try:
            await asyncio.to_thread(store.save, checkpoint)
        except ThreadConflictError:
            continue  # another run of the thread appended first: take the next seq
        return checkpoint.seq
    raise ThreadConflictError(thread_id, f"could not append a version after {_SAVE_ATTEMPTS} attempts")
