"""A thread's recordings in its checkpoint store: the contract's shapes and its one pruning rule.

With `Agent(checkpointer=..., keep_recordings=...)` (or `checkpoints.recordings` in the
configuration) every run of a thread is recorded as `record=FILE` would record it (the JSON
Lines of `_run.recording`, already redacted) and the bytes go to the thread's store instead of
a file: appended in chunks while the run goes on (`append_recording`, one transaction each), so
a process killed mid-run leaves the recording up to its last chunk, listed with the status it
had (`running`) until the thread runs again (then `incomplete`). One recording holds a `run()`
and every `resume()` that continues it (an approval's), as one file would: it is keyed by the
run id of its `run()`.

The store keeps the bytes and a listing row (`StoredRecording`); what a recording holds is the
recorder's business, never the store's. Retention (`prune_recordings`, the rule `to_prune`):
the oldest recordings of a thread go first, never the one being written.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel

from .._base.config import RecordingRetention
from ._contract import Checkpointer, CheckpointError
from ._owner import owner_alive

__all__ = [
    "RecordingRetention",
    "RecordingStatus",
    "StoredRecording",
    "UnknownRecordingError",
    "thread_recordings",
    "to_prune",
]

RecordingStatus = Literal["running", "suspended", "success", "failure", "incomplete"]
"""Where a stored recording stands: `running` while its run writes it (or its process was killed
and nobody ran the thread since), the status its last operation ended with (`suspended`,
`success`, `failure`), or `incomplete`: its run stopped mid-way (cancelled, raised, killed) and
the recording cannot be replayed."""
ENDED: frozenset[str] = frozenset({"suspended", "success", "failure", "incomplete"})
"""The statuses an operation ends a recording with (`ended_at` is set)."""
REPLAYABLE: frozenset[str] = frozenset({"suspended", "success", "failure"})


class StoredRecording(BaseModel):
    """One stored recording of a thread, as listings show it."""

    thread_id: str
    run_id: str
    """The run id of the `run()` the recording starts with (its key in the thread)."""
    number: int
    """The recording's place among the thread's (one more than the newest held when it began)."""
    started_at: float
    ended_at: float | None = None
    """When its last operation ended (None while one runs)."""
    status: RecordingStatus
    size: int
    """Bytes of JSON Lines stored."""
    truncated: bool = False
    """It reached its size limit: the rest of the run was not recorded (it cannot be replayed)."""

    @property
    def replayable(self) -> bool:
        """Whether replay can play it: every operation ended, and nothing was cut."""
        return self.status in REPLAYABLE and not self.truncated


class UnknownRecordingError(CheckpointError, LookupError):
    """The store holds no recording of that run on that thread (the message names those it holds)."""


def unknown_recording(
    thread_id: str, run_id: str, held: Iterable[StoredRecording], label: str
) -> UnknownRecordingError:
    known = ", ".join(info.run_id for info in held) or "none"
    return UnknownRecordingError(
        f"{label}: thread {thread_id!r} has no recording of run {run_id!r} (recordings: {known})"
    )


def to_prune(
    infos: Sequence[StoredRecording],
    *,
    max_runs: int | None = None,
    max_bytes: int | None = None,
    keep: Iterable[str] = (),
) -> list[str]:
    """The run ids a thread's retention drops: the oldest first (by `number`), until at most
    `max_runs` recordings and `max_bytes` bytes remain; the runs in `keep` (the one being
    written) are never dropped, even when they alone pass a limit."""
    kept = set(keep)
    count = len(infos)
    total = sum(info.size for info in infos)
    dropped: list[str] = []
    for info in sorted(infos, key=lambda i: i.number):
        over_runs = max_runs is not None and count > max_runs
        over_bytes = max_bytes is not None and total > max_bytes
        if not (over_runs or over_bytes):
            break
        if info.run_id in kept:
            continue
        dropped.append(info.run_id)
        count -= 1
        total -= info.size
    return dropped


def thread_recordings(store: Checkpointer, thread_id: str) -> list[StoredRecording]:
    """The thread's recordings as an operator should see them (newest first): a `running` one
    whose thread no live process owns lost its process mid-run (SIGKILL, a crash) and is shown
    `incomplete` (the store marks it so itself when the thread records again)."""
    infos = store.recordings(thread_id)
    if any(info.status == "running" for info in infos) and not thread_running(store, thread_id):
        for info in infos:
            if info.status == "running":
                info.status = "incomplete"
    return infos


def thread_running(store: Checkpointer, thread_id: str) -> bool:
    """Whether a live process owns the thread (runs it now)."""
    head = store.load(thread_id)
    return head is not None and head.owner is not None and owner_alive(head.owner)
