"""The checkpoint contract: what a store keeps (Checkpoint, StoredDecision), the errors it
raises and the `Checkpointer` protocol every store (memory, SQLite, PostgreSQL) implements.

Every save is a new version of its thread (append only: a version, once stored, never changes;
`load` returns the newest, `load(thread, seq)` any kept one, `history` lists them). Shared here
so the stores agree on one meaning of a conditional save (`check_claim`): a save with
`expected_seq` adds a version only if the newest stored one is the one the saver last loaded or
saved and no other live process owns the thread. Retention (`keep`) drops a thread's oldest
versions beyond the last N in the transaction that adds one.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from .._base.config import get_config
from ..errors import JianmuError
from ..state._journal import JournalEntry
from ._history import CheckpointInfo, CheckpointSummary, summarize
from ._owner import Owner, owner_alive

if TYPE_CHECKING:
    from ._recordings import RecordingStatus, StoredRecording

FORMAT = "jianmu_like.checkpoint/3"
"""The checkpoint record's format (also the SQLite store's format marker)."""
CheckpointStatus = Literal["running", "suspended", "success", "failure"]
Durability = Literal["sync", "async", "exit"]
"""When a run's checkpoints are written (see checkpoint._recorder; the journal is always synchronous)."""


class CheckpointError(RuntimeError, JianmuError):
    """A checkpoint cannot be read, written, or does not fit the agent restoring it."""


class ThreadConflictError(CheckpointError):
    """Another process owns the thread, or saved it since this process loaded it."""

    def __init__(self, thread_id: str, detail: str) -> None:
        super().__init__(f"thread {thread_id!r}: {detail}")
        self.thread_id = thread_id


class DecisionConflictError(CheckpointError):
    """A different decision was already stored for an approval."""


class FollowUp(BaseModel):
    """A follow-up sent to a run (`Agent.inject`) that no ReAct loop has taken yet."""

    namespace: str | None = None
    """The loop that takes it (its namespace)."""
    content: str


class Checkpoint(BaseModel):
    """Everything needed to continue a run."""

    format: str = FORMAT
    thread_id: str
    seq: int = 0
    """The version: increases with every save of the thread (a fork takes the next one too)."""
    parent_seq: int | None = None
    """The version this one continues (None for a thread's first): `seq - 1` along a run, an
    older version where a run was continued from it (`from_checkpoint`)."""
    status: CheckpointStatus = "running"
    owner: str | None = None
    """The process running the thread (see checkpoint._owner); None when nobody does."""
    schema_name: str
    schema_fingerprint: str
    tree_fingerprint: str
    state: dict[str, Any]
    tree: dict[str, dict[str, Any]] = Field(default_factory=dict)
    saved_at: float = Field(default_factory=time.time)
    summary: CheckpointSummary | None = None
    """What a history listing shows of this version (the recorder computes it on save)."""
    source: str | None = None
    """The agent file the thread's tree was built from (`load_agent`), when known: what a
    `jianmu-like resume` of the thread must be given, so the command line can say so."""
    followups: list[FollowUp] = Field(default_factory=list)
    """Follow-ups waiting for the run's next iteration boundary, saved with the state they will
    join: whichever process resumes the thread delivers them, and the save after the tick that
    lets them in has them in its state and no longer here (delivered exactly once)."""
    questions: list[dict[str, Any]] = Field(default_factory=list)
    """The questions the run's tools held open for a person when this version was saved (each a
    `tools._questions.Question` as JSON): a run saves a version when one opens and when it is
    answered, so another process (a restarted server) lists them. A question lives in the
    process that asked it (a live request of a tool call): with that process gone it cannot be
    answered, and is listed as expired (`_run.review.stored_questions`)."""


class StoredDecision(BaseModel):
    """A human decision on one approval, as stored (outside the checkpoint's state)."""

    approval_id: str
    digest: str
    """Fingerprint of the approval it answers: a later call reusing the id is a new approval."""
    decision: dict[str, Any]
    new: bool = True
    """False when `record_decision` found this decision already stored (and stored nothing)."""


_OUR_PATH = re.compile(r"(?<![\w.])jianmu_like(?:\.\w+)+")


def schema_fingerprint(schema: type[BaseModel]) -> str:
    """Identifies a state schema by its field names and types (a changed schema cannot load).

    A type's repr names its module. Module paths of this package are spelled without the private
    underscore (`models._messages.Message` as `models._messages.Message`):
    every store holds fingerprints from before the implementation modules became private, and
    moving a class between private modules is no change of schema."""
    shape = "\n".join(f"{name}:{info.annotation!r}" for name, info in schema.model_fields.items())
    shape = _OUR_PATH.sub(lambda path: path.group().replace("._", "."), shape)
    return hashlib.sha256(shape.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Commit:
    """One transaction of a run's writes to its thread: what a recorder makes durable together
    (a batch's started calls with the state saved before it; a batch's last outcome with the
    state saved after it; a claim with the forgetting of the thread's old journal), so a run
    commits at most twice per iteration. Applied in this order, all or nothing."""

    thread_id: str
    forget: bool = False
    """Drop the thread's journal and decisions first (a fresh run starts a new story)."""
    checkpoint: Checkpoint | None = None
    """A version to add (as `save` does, with `expected_seq` and `holder`)."""
    expected_seq: int | None = None
    holder: str | None = None
    started: Sequence[JournalEntry] = ()
    """Calls about to run (upserted): only while `owner` holds the thread (checked after the
    checkpoint of this commit, if any, is added), else ThreadConflictError and nothing is written."""
    owner: str | None = None
    finished: Sequence[JournalEntry] = ()
    """Outcomes (each replaces its call's started row; `finish_entry` made them from it)."""


@runtime_checkable
class Checkpointer(Protocol):
    """Stores every version of each thread's checkpoint, the thread's tool journal and decisions."""

    keep: int | None
    """Versions kept per thread (the newest N; None: all)."""

    def save(
        self, checkpoint: Checkpoint, *, expected_seq: int | None = None, holder: str | None = None
    ) -> None:
        """Store `checkpoint`; with `expected_seq`, only if the stored seq equals it (0: no
        checkpoint yet) and no live process other than `holder` (the saver's claim, if it has
        one) owns the thread, else ThreadConflictError."""
        ...

    def load(self, thread_id: str, seq: int | None = None) -> Checkpoint | None:
        """The newest version of the thread (or version `seq`); None when there is none."""
        ...

    def history(self, thread_id: str) -> list[CheckpointInfo]:
        """The thread's kept versions, newest first ([] for an unknown thread)."""
        ...

    def heads(self) -> list[CheckpointInfo]:
        """The newest version of every thread, by thread id."""
        ...

    def threads(self) -> list[str]: ...

    def delete(self, thread_id: str) -> None: ...

    def release(self, thread_id: str, owner: str) -> None:
        """Clear the thread's owner if it is still `owner`."""
        ...

    def commit(self, work: Commit) -> None:
        """Apply `work` in one transaction (see Commit); the errors of `save` and `journal_start`."""
        ...

    def journal(self, thread_id: str) -> dict[str, JournalEntry]: ...

    def journal_start(self, thread_id: str, entry: JournalEntry, *, owner: str | None = None) -> None:
        """Record a call as started; with `owner`, only while that owner holds the thread."""
        ...

    def journal_finish(self, thread_id: str, key: str, outcome: dict[str, Any]) -> None: ...

    def record_decision(
        self, thread_id: str, approval_id: str, digest: str, decision: dict[str, Any]
    ) -> StoredDecision:
        """Store a decision unless one for the same approval exists (atomically); returns the
        stored one, with `new=False` when it was there before."""
        ...

    def decisions(self, thread_id: str) -> dict[str, StoredDecision]: ...

    def forget(self, thread_id: str) -> None:
        """Drop the thread's journal and decisions (a fresh run starts a new story)."""
        ...

    # The thread's recordings (checkpoint._recordings): `delete` drops them with the thread.
    def append_recording(
        self,
        thread_id: str,
        run_id: str,
        chunk: bytes,
        *,
        status: RecordingStatus,
        truncated: bool = False,
    ) -> None:
        """Append `chunk` (whole JSON lines, may be empty) to the thread's recording of `run_id`
        and set its status, in one transaction. The first call creates it (the thread's next
        number; any other `running` recording of the thread, left by a killed process, becomes
        `incomplete`). An ended status sets `ended_at`, `running` clears it; `truncated` sticks."""
        ...

    def recordings(self, thread_id: str) -> list[StoredRecording]:
        """The thread's recordings, newest first ([] for an unknown thread)."""
        ...

    def read_recording(self, thread_id: str, run_id: str) -> bytes:
        """The recording's JSON Lines, as written (UnknownRecordingError when there is none)."""
        ...

    def delete_recording(self, thread_id: str, run_id: str) -> bool:
        """Drop one recording; False when there was none."""
        ...

    def prune_recordings(
        self,
        thread_id: str,
        *,
        max_runs: int | None = None,
        max_bytes: int | None = None,
        keep: Sequence[str] = (),
    ) -> list[str]:
        """Drop the thread's oldest recordings beyond `max_runs` or `max_bytes` in all (never those
        in `keep`), in one transaction; the run ids dropped (see `_recordings.to_prune`)."""
        ...


def check_claim(
    thread_id: str,
    stored: tuple[int, str | None] | None,
    checkpoint: Checkpoint,
    expected_seq: int,
    holder: str | None,
) -> None:
    """Raise ThreadConflictError unless `checkpoint` may follow the newest stored (seq, owner)."""
    seq, owner = stored if stored is not None else (0, None)
    if owner is not None and owner not in (holder, checkpoint.owner) and owner_alive(owner):
        running = Owner.decode(owner)
        who = running.describe() if running is not None else owner
        raise ThreadConflictError(
            thread_id, f"already being run by {who}; wait for it to finish or suspend, then resume"
        )
    if seq != expected_seq:
        raise ThreadConflictError(
            thread_id,
            f"saved by another process since this one loaded it (stored seq {seq}, expected "
            f"{expected_seq}); reload the thread (resume(thread_id=...)) to continue it",
        )


def check_owner(thread_id: str, owner: str | None, holder: str | None) -> None:
    """Raise ThreadConflictError unless the thread's owner (after the commit's save) is `owner`:
    a call must not start once another process has taken the thread over."""
    if owner is not None and holder != owner:
        raise ThreadConflictError(thread_id, "no longer owned by this process; not running the call")


def summary_of(checkpoint: Checkpoint) -> CheckpointSummary:
    """The checkpoint's summary (made from its state with the default keys when it has none)."""
    return checkpoint.summary or summarize(checkpoint.state, checkpoint.tree)


def info_from(checkpoint: Checkpoint) -> CheckpointInfo:
    """The history row of a checkpoint."""
    return CheckpointInfo(
        thread_id=checkpoint.thread_id,
        seq=checkpoint.seq,
        parent_seq=checkpoint.parent_seq,
        status=checkpoint.status,
        saved_at=checkpoint.saved_at,
        **summary_of(checkpoint).model_dump(),
    )


def check_new_version(thread_id: str, stored: tuple[int, str | None] | None, checkpoint: Checkpoint) -> None:
    """An unconditional save still never replaces a stored version: its seq must be new."""
    if stored is not None and checkpoint.seq <= stored[0]:
        raise ThreadConflictError(
            thread_id,
            f"version {checkpoint.seq} is not newer than the stored {stored[0]}; "
            "a saved version never changes",
        )


def keep_from_config(keep: int | str | None = "config") -> int | None:
    """A store's retention: `keep` as given, or the configuration's `checkpoints.keep`."""
    if keep != "config":
        if keep is not None and (not isinstance(keep, int) or keep < 1):
            raise CheckpointError(
                f"checkpoints.keep must be a number of versions >= 1 or 'all', not {keep!r}"
            )
        return keep if isinstance(keep, int) else None
    return get_config().checkpoints.keep_versions


@runtime_checkable
class ClosableCheckpointer(Checkpointer, Protocol):
    """A store that holds a file or connections: `close()` when done with it."""

    def close(self) -> None: ...


@runtime_checkable
class AsyncCheckpointer(Checkpointer, Protocol):
    """A store whose run-path calls have async forms (PostgreSQL): a run prefers them, so no
    database round trip on its path blocks the event loop and the writes of concurrent runs of
    one process share transactions (group commit: `acommit` and `arelease` return once their
    write is committed). Readers (the command line, the
    server's listings) keep the synchronous contract. A store's async connections belong to the
    event loop that opened them: each loop gets its own, opened on first use."""

    async def acommit(self, work: Commit) -> None:
        """`commit`, awaited."""
        ...

    async def aload(self, thread_id: str) -> Checkpoint | None:
        """`load(thread_id)` (the newest version), awaited."""
        ...

    async def ajournal(self, thread_id: str) -> dict[str, JournalEntry]:
        """`journal`, awaited."""
        ...

    async def arelease(self, thread_id: str, owner: str) -> None:
        """`release`, awaited."""
        ...

    async def aclose(self) -> None:
        """Close the connections of the running loop now (and `close` the rest)."""
        ...


DecisionChanges = AsyncIterator[str | None]
"""What a watched store reports, as it happens: the thread whose decisions changed, or None when
any thread may have (look at them all)."""


@runtime_checkable
class WatchableCheckpointer(Checkpointer, Protocol):
    """A store other processes write decisions into, that can tell when they do (SQLite polls
    its file's `PRAGMA data_version`; PostgreSQL `LISTEN`s for the `NOTIFY` sent in the
    transaction that stored the decision)."""

    def watch_decisions(self) -> AbstractAsyncContextManager[DecisionChanges]:
        """Watch from entering on (a decision stored after that is never missed; one stored
        before is the caller's to look for, after entering); leaving stops watching."""
        ...
