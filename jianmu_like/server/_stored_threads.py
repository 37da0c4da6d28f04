"""The threads a checkpoint store holds suspended that no run of this server holds.

An earlier server (or a command line run) may have stopped while a thread waited for approvals,
answers or a client's tool results; the store keeps those interruptions, so a restarted server
lists them beside its own runs and decides them: the decision is stored first (one atomic row, so
a second decider, here or in another process, is told "already decided"), and once a thread
waits for nothing more it resumes as a new run of the registry (`RunRegistry.adopt`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from .._run.protocol import AgentLike
from .._run.review import (
    PendingApproval,
    ThreadSuspendedError,
    pending_of_thread,
    recent_pending,
    record_decision,
    refuse_fresh_run,
)
from ..checkpoint._store import Checkpointer, CheckpointError
from ..guard._approvals import AlreadyDecided, ApprovalDecision, ApprovalError, InvalidEdit, verdict
from ..models._keys import StateKeys
from ._run_record import NotFound, RunConflict, RunRecord
from ._watch import log

if TYPE_CHECKING:
    from ._runs import RunRegistry

STORED_LIMIT = 50
"""How many suspended threads of the store (the most recently saved) a server lists beside its
own runs: bounded however many threads the store holds."""


class StoredThreads:
    """The store's suspended threads, for one registry (`RunRegistry.stored`)."""

    def __init__(self, registry: RunRegistry) -> None:
        self.registry = registry
        self.sample: Callable[[], AgentLike] | None = None
        """An agent of the server (`ServerContext.sample`): its store holds the threads an
        earlier server left suspended."""

    def _store(self) -> tuple[Checkpointer, StateKeys] | None:
        agent = self.sample() if self.sample is not None else None
        if agent is None or agent.checkpointer is None:
            return None
        return agent.checkpointer, agent.keys

    def pending(self, thread_id: str | None = None) -> list[PendingApproval]:
        """What the threads of the store that no run here holds wait for (an earlier server, or
        a command line run, left them suspended): of `thread_id`, or of the `STORED_LIMIT` most
        recently saved suspended threads."""
        found = self._store()
        if found is None:
            return []
        store, keys = found
        try:
            if thread_id is not None:
                return (
                    []
                    if thread_id in self.registry.active
                    else pending_of_thread(store, thread_id, keys=keys)
                )
            return recent_pending(store, keys=keys, limit=STORED_LIMIT, skip=self.registry.active)
        except CheckpointError as exc:
            log.warning("cannot read the store's suspended threads", error=str(exc))
            return []

    def decide(
        self, approval_id: str, decision: ApprovalDecision, thread_id: str | None = None
    ) -> RunRecord | None:
        """Decide an interruption of a thread the store holds suspended (no run here holds it):
        the decision is stored (one atomic row: a second decider, here or in another process,
        gets a RunConflict "already decided"), and once the thread waits for nothing more it
        resumes as a new run (returned; None: it still waits for others). NotFound when the
        store holds no such interruption."""
        found = self._store()
        if found is None or (thread_id is not None and thread_id in self.registry.active):
            raise NotFound(f"no pending interruption {approval_id!r}")
        store, keys = found
        if thread_id is None:
            threads = sorted({p.thread_id for p in self.pending() if p.approval.id == approval_id})
            if len(threads) > 1:
                raise RunConflict(
                    f"interruption {approval_id!r} is pending in several stored threads "
                    f'({", ".join(threads)}); name one: {{"thread_id": ...}}'
                )
            if not threads:
                raise NotFound(f"no pending interruption {approval_id!r}")
            thread_id = threads[0]
        try:
            record_decision(store, thread_id, approval_id, decision, keys=keys)
        except AlreadyDecided as exc:
            self._resume_decided(store, keys, thread_id)  # the first decision goes on with the thread
            raise RunConflict(str(exc), decision=verdict(exc.decision), thread_id=thread_id) from exc
        except InvalidEdit:
            raise
        except ApprovalError as exc:
            raise NotFound(str(exc)) from None
        return self._resume_decided(store, keys, thread_id)

    def _resume_decided(self, store: Checkpointer, keys: StateKeys, thread_id: str) -> RunRecord | None:
        """Resume the stored thread as a new run once every interruption of it is decided (None
        while some still wait); the run already resumed here when there is one."""
        if thread_id in self.registry.active:
            return self.registry.active[thread_id]
        pending = pending_of_thread(store, thread_id, keys=keys)
        if not pending or any(p.decision is None for p in pending):
            return None
        decided = {p.approval.id: p.decision for p in pending if p.decision is not None}
        agent = self.registry.threads.get(thread_id) or self.registry.agent_factory()
        return self.registry.adopt(thread_id, agent, decided)

    def resume(self, thread_id: str, decisions: Mapping[str, ApprovalDecision]) -> RunRecord | None:
        """Resume a conversation its checkpoint store holds suspended for a client's tool results
        (an earlier server stopped while it waited), with `decisions` for exactly the calls it
        waits for; None when the store holds no such wait for this thread."""
        if thread_id in self.registry.active:
            return None
        agent = self.registry.threads.get(thread_id)
        fresh = agent is None
        if agent is None:
            agent = self.registry.agent_factory()
        store = agent.checkpointer
        waiting: list[PendingApproval] = []
        if store is not None:
            try:
                refuse_fresh_run(store, store.load(thread_id), keys=agent.keys)
            except ThreadSuspendedError as exc:
                waiting = exc.waiting
            except CheckpointError:
                waiting = []
        ids = {p.approval.id for p in waiting if p.approval.kind == "client_tool" and p.decision is None}
        if not ids or set(decisions) != ids:
            if fresh:
                self.registry._close_later(agent)
            return None
        return self.registry.adopt(thread_id, agent, decisions, dict(decisions))
