"""A thread is a conversation: which state a run on thread T starts from.

Without a checkpointer the run core keeps one state per thread id in memory: the state manager
holds the current thread's, the others are parked, and a new id starts from the initial state
(`thread_id=None` is the default thread). With a checkpointer the thread lives in the store: a
run continues its newest version, or the version it names (a fork).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from ..checkpoint._recorder import RunRecorder
from ..checkpoint._store import Checkpoint, CheckpointError
from ..state._inputs import InputError
from ..state._manager import StateManager


class Threads:
    """The states of a run core's threads (see the module)."""

    def __init__(
        self,
        state_manager: StateManager,
        initial_state: BaseModel | Mapping[str, Any] | None,
        current: str | None = None,
    ) -> None:
        self._sm = state_manager
        self._initial_state = initial_state
        self.current = current
        """The in-memory thread whose state the state manager holds (without a checkpointer)."""
        self.given: str | None = None
        """The `thread_id` the current run was given, told to telemetry (`gen_ai.conversation.id`)
        even without a checkpointer."""
        self.stored_default: str | None = None
        """The store's thread id of `thread_id=None` (made at its first run)."""
        self._parked: dict[str | None, BaseModel] = {}
        """The states of the other in-memory threads, by thread id (None: the default one)."""
        self._ran = False
        """Whether a run has used the state manager's state (before, it is the initial state:
        the first thread run takes it as is, nothing to park)."""

    def fresh(self) -> BaseModel:
        """The state a new thread starts from (the constructor's `initial_state`)."""
        initial, schema = self._initial_state, self._sm.schema
        if initial is None:
            return schema()
        if isinstance(initial, BaseModel):
            return initial.model_copy(deep=True)
        return schema.model_validate(initial)

    def ran(self) -> None:
        """A run now uses the state manager's state."""
        self._ran = True

    def switch(self, thread_id: str | None) -> None:
        """Hold `thread_id`'s in-memory state (parking the current one)."""
        if thread_id == self.current:
            return
        if not self._ran and thread_id not in self._parked:
            self.current = thread_id  # the untouched initial state is the new thread's
            return
        sm = self._sm
        self._parked[self.current] = sm.state
        parked = self._parked.pop(thread_id, None)
        sm.state = parked if parked is not None else self.fresh()
        sm.version += 1
        self.current = thread_id

    def stored_base(
        self, recorder: RunRecorder, thread_id: str, newest: Checkpoint | None, from_checkpoint: int | None
    ) -> tuple[Checkpoint | None, BaseModel | None]:
        """(the version a run on `thread_id` continues, its state): None for the state when the
        state manager already holds that version (this core saved it last)."""
        base = newest if from_checkpoint is None else recorder.fetch(thread_id, from_checkpoint)
        if base is None:
            return None, self.fresh()
        if from_checkpoint is None and recorder.thread_id == thread_id and recorder.seq == base.seq:
            return base, None
        return base, recorder.state_of(base)


def version_number(value: object, name: str) -> int:
    """`value` as a checkpoint version (`seq`): an int, never a bool (`True == 1` in Python, so
    `from_checkpoint=True` would fork version 1) nor a string that looks like one; InputError
    saying what was given otherwise, before anything runs."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{name} must be a version number (an int, as `history()` lists), not {value!r}")
    if value < 0:
        raise InputError(f"{name} must be a version number (an int >= 0), not {value!r}")
    return value


def needs_store(recorder: RunRecorder | None, what: str) -> RunRecorder:
    """`recorder`, or a CheckpointError saying `what` needs a checkpointer."""
    if recorder is None:
        raise CheckpointError(
            f"{what} needs a checkpointer (Agent(..., checkpointer=...): a SQLite path, a "
            "postgresql:// URL or MemoryCheckpointer()): without one no versions are kept"
        )
    return recorder
