"""RunRecorder: saves an agent's state and tree progress under a thread id, and loads them back.

The Agent owns one; it saves after every tick that changed the state (the runner's `on_tick`
hook) and at the end of every run, and restores a thread before a resume.
"""

from __future__ import annotations

import py_trees
from py_trees.common import Status

from ..bt.progress import TreeMismatchError, capture_progress, restore_progress, tree_fingerprint
from ..state.manager import StateError, StateManager
from .store import Checkpoint, Checkpointer, CheckpointError, CheckpointStatus, schema_fingerprint


class RunRecorder:
    """Checkpoints one (tree, state manager) pair into a Checkpointer."""

    def __init__(
        self, root: py_trees.behaviour.Behaviour, state_manager: StateManager, checkpointer: Checkpointer
    ) -> None:
        self.root = root
        self.state_manager = state_manager
        self.checkpointer = checkpointer
        self.thread_id: str | None = None
        self._seq = 0
        self._saved_version = -1
        self._schema_name = f"{state_manager.schema.__module__}.{state_manager.schema.__qualname__}"
        self._schema_fp = schema_fingerprint(state_manager.schema)
        self._tree_fp = tree_fingerprint(root)

    def start(self, thread_id: str) -> None:
        """Record into `thread_id` from now on (a fresh run)."""
        previous = self.checkpointer.load(thread_id)
        self._seq = previous.seq if previous is not None else 0
        self.thread_id = thread_id
        self._saved_version = -1

    def on_tick(self) -> None:
        """Save if the state changed since the last save."""
        if self.state_manager.version != self._saved_version:
            self.save("running")

    def save(self, status: CheckpointStatus) -> None:
        if self.thread_id is None:
            return
        sm = self.state_manager
        self._seq += 1
        self.checkpointer.save(
            Checkpoint(
                thread_id=self.thread_id,
                seq=self._seq,
                status=status,
                schema_name=self._schema_name,
                schema_fingerprint=self._schema_fp,
                tree_fingerprint=self._tree_fp,
                state=sm.snapshot(),
                tree=capture_progress(self.root),
            )
        )
        self._saved_version = sm.version

    def load(self, thread_id: str) -> Checkpoint:
        """Restore `thread_id` into the state manager and the (halted) tree.

        Everything is checked before anything changes: an unknown thread, another schema, another
        tree or a state that does not validate raise CheckpointError and leave the agent as it was.
        """
        checkpoint = self.checkpointer.load(thread_id)
        if checkpoint is None:
            known = ", ".join(self.checkpointer.threads()) or "none"
            raise CheckpointError(f"no checkpoint for thread {thread_id!r} (threads: {known})")
        if checkpoint.schema_fingerprint != self._schema_fp:
            raise CheckpointError(
                f"checkpoint of thread {thread_id!r} was written with state schema {checkpoint.schema_name} "
                f"({checkpoint.schema_fingerprint}); this agent uses {self._schema_name} ({self._schema_fp})"
            )
        if checkpoint.tree_fingerprint != self._tree_fp:
            raise CheckpointError(
                f"checkpoint of thread {thread_id!r} was written by a different tree "
                "(node names or structure changed); build the same tree to resume it"
            )
        sm = self.state_manager
        try:
            state = sm.validate_snapshot(checkpoint.state)
        except StateError as exc:
            raise CheckpointError(f"checkpoint of thread {thread_id!r}: {exc}") from exc
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
        self._seq = checkpoint.seq
        self._saved_version = sm.version
        return checkpoint
