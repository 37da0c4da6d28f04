"""RunRecorder: saves an agent's state and tree progress under a thread id, and loads them back.

The Agent owns one; it saves after every tick that changed the state (the runner's `on_tick`
hook) and at the end of every run, and restores a thread before a resume. Every save is a new
version of the thread whose `parent_seq` is the version the run continues: the previous save, or
for a run's first save the version its state was loaded from (an older one forks the thread). A
run or resume first *claims* the thread (a conditional save carrying this process's owner
token), every later save is conditional on the seq this recorder last saved, and the end of the
run releases the claim: so two processes never drive one thread, and a save never overwrites
what another process wrote. The recorder also puts the thread's tool journal on the state
manager (`state_manager.journal`), so the ToolExecutor records every call's outcome the moment
it is known.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import py_trees
from py_trees.common import Status
from pydantic import BaseModel

from .._keys import StateKeys
from ..bt._progress import TreeMismatchError, capture_progress, restore_progress, tree_fingerprint
from ..state._journal import JournalEntry
from ..state._manager import StateError, StateManager
from ._history import summarize
from ._owner import new_owner
from ._store import Checkpoint, Checkpointer, CheckpointError, CheckpointStatus, schema_fingerprint


class RecorderJournal:
    """The ToolJournal of whatever thread the recorder currently records (inactive without one)."""

    def __init__(self, recorder: RunRecorder) -> None:
        self.recorder = recorder

    @property
    def thread_id(self) -> str | None:
        return self.recorder.thread_id

    def entries(self) -> Mapping[str, JournalEntry]:
        rec = self.recorder
        return {} if rec.thread_id is None else rec.checkpointer.journal(rec.thread_id)

    def started(self, key: str, tool_call_id: str, tool: str) -> None:
        rec = self.recorder
        if rec.thread_id is None:
            return
        entry = JournalEntry(
            key=key, tool_call_id=tool_call_id, tool=tool, status="started", started_at=time.time()
        )
        rec.checkpointer.journal_start(rec.thread_id, entry, owner=rec.owner)

    def finished(self, key: str, outcome: dict[str, Any]) -> None:
        rec = self.recorder
        if rec.thread_id is not None:
            rec.checkpointer.journal_finish(rec.thread_id, key, outcome)


class RunRecorder:
    """Checkpoints one (tree, state manager) pair into a Checkpointer."""

    def __init__(
        self,
        root: py_trees.behaviour.Behaviour,
        state_manager: StateManager,
        checkpointer: Checkpointer,
        *,
        source: str | None = None,
        keys: StateKeys | None = None,
    ) -> None:
        self.root = root
        self.keys = keys or StateKeys()
        """Where the history summary of each version reads messages, rounds and approvals."""
        self.source = source
        """The agent file of the tree, recorded in every checkpoint (kept from the loaded one when
        this agent does not know it)."""
        self.state_manager = state_manager
        self.checkpointer = checkpointer
        self.thread_id: str | None = None
        self._seq = 0
        """The newest version of the thread this recorder loaded or saved (a save expects it)."""
        self._parent: int | None = None
        """The version the state descends from (the next save's `parent_seq`)."""
        self._saved_version = -1
        self._schema_name = f"{state_manager.schema.__module__}.{state_manager.schema.__qualname__}"
        self._schema_fp = schema_fingerprint(state_manager.schema)
        self._tree_fp = tree_fingerprint(root)
        self.owner: str | None = None
        """This process's claim on the thread while a run or resume drives it."""
        state_manager.journal = RecorderJournal(self)

    @property
    def seq(self) -> int:
        """The newest version of the current thread this recorder loaded or saved (0: none)."""
        return self._seq

    def start(
        self,
        thread_id: str,
        *,
        refuse: Callable[[Checkpoint | None], None] | None = None,
        parent: int | None = None,
    ) -> None:
        """Record into `thread_id` from now on (a fresh run): claim it, drop its old journal.
        The run's state descends from version `parent` (None: the thread's newest).

        `refuse(previous)` may raise to keep the thread as it is (a thread suspended waiting for
        approvals); the claim is conditional on the very checkpoint it looked at."""
        previous = self.checkpointer.load(thread_id)
        if refuse is not None:
            refuse(previous)
        self.thread_id = thread_id
        self._seq = previous.seq if previous is not None else 0
        self._parent = parent if parent is not None else (previous.seq if previous is not None else None)
        self.claim()
        self.checkpointer.forget(thread_id)
        self._saved_version = -1  # the first tick's progress is always saved

    def claim(self) -> None:
        """Take the thread for this process; ThreadConflictError if another live process runs
        it or saved it since this recorder last loaded or saved it."""
        self.owner = new_owner().encode()
        try:
            self.save("running")
        except BaseException:
            self.owner = None
            raise

    def release(self) -> None:
        """Give the thread up (any exit of a run); a no-op when the last save already did."""
        if self.owner is not None and self.thread_id is not None:
            owner, self.owner = self.owner, None
            self.checkpointer.release(self.thread_id, owner)

    def on_tick(self) -> None:
        """Save if the state changed since the last save."""
        if self.state_manager.version != self._saved_version:
            self.save("running")

    def save(self, status: CheckpointStatus) -> None:
        """Save (conditionally on the seq last seen); any status but "running" releases the claim."""
        if self.thread_id is None:
            return
        sm = self.state_manager
        owner = self.owner if status == "running" else None
        state, tree = sm.snapshot(), capture_progress(self.root)
        checkpoint = Checkpoint(
            thread_id=self.thread_id,
            seq=self._seq + 1,
            parent_seq=self._parent,
            status=status,
            owner=owner,
            schema_name=self._schema_name,
            schema_fingerprint=self._schema_fp,
            tree_fingerprint=self._tree_fp,
            state=state,
            tree=tree,
            summary=summarize(state, tree, self.keys),
            source=self.source,
        )
        self.checkpointer.save(checkpoint, expected_seq=self._seq, holder=self.owner)
        self._seq += 1
        self._parent = self._seq
        self._saved_version = sm.version
        if owner is None:
            self.owner = None

    def load(self, thread_id: str) -> Checkpoint:
        """Restore `thread_id` into the state manager and the (halted) tree.

        Everything is checked before anything changes: an unknown thread, another schema, another
        tree or a state that does not validate raise CheckpointError and leave the agent as it was.
        Loading does not claim the thread: `claim()` does.
        """
        checkpoint = self.fetch(thread_id)
        if checkpoint is None:
            known = ", ".join(self.checkpointer.threads()) or "none"
            raise CheckpointError(f"no checkpoint for thread {thread_id!r} (threads: {known})")
        if checkpoint.tree_fingerprint != self._tree_fp:
            raise CheckpointError(
                f"checkpoint of thread {thread_id!r} was written by a different tree "
                "(node names or structure changed); build the same tree to resume it"
            )
        sm = self.state_manager
        state = self.state_of(checkpoint)
        if self.root.status == Status.RUNNING:
            self.root.stop(Status.INVALID)
        for node in self.root.iterate():
            node.status = Status.INVALID
        sm.state = state
        sm.version += 1
        try:
            restore_progress(self.root, checkpoint.tree)
        except TreeMismatchError as exc:
            raise CheckpointError(f"checkpoint of thread {thread_id!r}: {exc}") from exc
        self.thread_id = thread_id
        self._seq = self._parent = checkpoint.seq
        self._saved_version = sm.version
        self.source = self.source or checkpoint.source
        return checkpoint

    def fetch(self, thread_id: str, seq: int | None = None) -> Checkpoint | None:
        """Version `seq` of the thread (None: its newest); see `fetch_version`."""
        return fetch_version(self.checkpointer, thread_id, seq)

    def state_of(self, checkpoint: Checkpoint) -> BaseModel:
        """The checkpoint's state as this agent's state model (CheckpointError when it was
        written with another state schema, or does not validate)."""
        tid = checkpoint.thread_id
        if checkpoint.schema_fingerprint != self._schema_fp:
            raise CheckpointError(
                f"checkpoint of thread {tid!r} was written with state schema {checkpoint.schema_name} "
                f"({checkpoint.schema_fingerprint}); this agent uses {self._schema_name} ({self._schema_fp})"
            )
        try:
            return self.state_manager.validate_snapshot(checkpoint.state)
        except StateError as exc:
            raise CheckpointError(f"checkpoint of thread {tid!r}: {exc}") from exc


def fetch_version(store: Checkpointer, thread_id: str, seq: int | None = None) -> Checkpoint | None:
    """Version `seq` of the thread (None: its newest); None for an unknown thread, and a
    CheckpointError naming the kept versions for a version the thread does not have."""
    checkpoint = store.load(thread_id, seq)
    if checkpoint is None and seq is not None:
        kept = [info.seq for info in store.history(thread_id)]
        if not kept:
            known = ", ".join(store.threads()) or "none"
            raise CheckpointError(f"no checkpoint for thread {thread_id!r} (threads: {known})")
        listed = ", ".join(str(n) for n in sorted(kept))
        raise CheckpointError(f"thread {thread_id!r} has no version {seq} (kept versions: {listed})")
    return checkpoint
