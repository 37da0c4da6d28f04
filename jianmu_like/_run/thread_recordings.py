"""A thread's runs kept as recordings in its checkpoint store (`Agent(keep_recordings=...)`).

Each run is recorded by the one recorder (`_run.recording.RunRecording`), exactly as
`record=FILE` records it, with a `StoreSink` in place of the file: lines are buffered and
appended to the store in chunks (`Checkpointer.append_recording`) when an operation ends, when
the recorder writes its `truncated` line, and every `CHUNK` bytes in between, so a process
killed mid-run leaves the recording up to its last chunk (stored `running`; listed `incomplete`
once no live process owns the thread, stored so when the thread records again; replay refuses
it). A run that raises or is cancelled ends its recording `incomplete`. Like every recording of
a `run()`, it holds the state the run started from (the thread's conversation so far), so a
thread's later runs replay too.

One recording is one `run()` and every `resume()` that continues it (an approval's, in this
process or another): as `Agent(record=FILE)` writes them, and as replay needs them (a resume
replays on the state its run left). A resume appends to the thread's newest recording when that
one ended `suspended`; otherwise (recordings were off when the run began, or it was pruned)
the resume is not recorded. Retention (`RecordingRetention`) drops the thread's oldest
recordings when a new one begins and when it ends.
"""

from __future__ import annotations

import io
import json
import logging
from typing import Literal

from .._base.config import RecordingRetention, get_config
from ..checkpoint._contract import Checkpointer, CheckpointError
from ..checkpoint._recordings import (
    RecordingStatus,
    StoredRecording,
    UnknownRecordingError,
    thread_recordings,
    unknown_recording,
)
from .recording import RecordingError, RunRecording

logger = logging.getLogger(__name__)

CHUNK = 256 * 1024
"""Bytes buffered before they are appended to the store mid-operation."""


def retention_of(given: RecordingRetention | bool | None) -> RecordingRetention | None:
    """An agent's retention: as given (`True`: the defaults, `False`: off whatever the
    configuration says), else the configuration's `checkpoints.recordings` (None: off)."""
    if given is None:
        return get_config().checkpoints.recordings
    if given is True:
        return RecordingRetention()
    if given is False:
        return None
    return given


def check_retention(given: object) -> RecordingRetention | bool | None:
    """`keep_recordings` as `Agent` takes it; anything else is refused, naming what it got."""
    if given is None or isinstance(given, (bool, RecordingRetention)):
        return given
    raise CheckpointError(
        f"keep_recordings takes a RecordingRetention(max_runs=..., max_bytes=...), True (the "
        f"defaults) or False, not {type(given).__name__} {given!r}"
    )


class StoreSink(io.BytesIO):
    """The file a `RunRecording` writes a thread's recording into: its bytes go to the store."""

    def __init__(self, store: Checkpointer, thread_id: str, run_id: str) -> None:
        super().__init__()
        self.store = store
        self.thread_id = thread_id
        self.run_id = run_id
        self.recording: RunRecording | None = None
        """The recorder writing here (its `truncated` flag goes with every chunk)."""
        self.failed = False

    def write(self, data: bytes) -> int:  # type: ignore[override]
        written = super().write(data)
        if self.tell() >= CHUNK:
            self.push("running")
        return written

    def flush(self) -> None:
        """The recorder flushes at an operation's end (then `ThreadRecording.end` pushes the
        rest with the status, one transaction) and after its `truncated` line (pushed now)."""
        if self.tell() and self.recording is not None and self.recording.truncated:
            self.push("running")

    def close(self) -> None:
        """The recorder is done with this file; `push` the end (the owner says with which status)."""

    def discard(self) -> None:
        """Forget what was written and not pushed (the header of a recording appended to)."""
        self.seek(0)
        self.truncate()

    def push(self, status: RecordingStatus) -> None:
        """Append what is buffered, and the recording's status, in one transaction. A store that
        fails is logged and the rest of the run goes unrecorded (the run is never failed by its
        recording; the recording stays `running`, then `incomplete`)."""
        if self.failed:
            return
        chunk = self.getvalue()
        self.discard()
        truncated = self.recording is not None and self.recording.truncated
        try:
            self.store.append_recording(
                self.thread_id, self.run_id, chunk, status=status, truncated=truncated
            )
        except CheckpointError as exc:
            self.failed = True
            logger.warning("recording of run %s on thread %r stopped: %s", self.run_id, self.thread_id, exc)


class ThreadRecording:
    """One operation of a thread's run being recorded into its store (see the module)."""

    def __init__(self, recording: RunRecording, sink: StoreSink, retention: RecordingRetention) -> None:
        self.recording = recording
        self.sink = sink
        self.retention = retention

    @classmethod
    def begin(
        cls,
        store: Checkpointer,
        retention: RecordingRetention,
        *,
        op: Literal["run", "resume"],
        thread_id: str,
        run_id: str,
        agent: str | None,
    ) -> ThreadRecording | None:
        """The recording of this operation: a new one for a `run()`, the thread's suspended one
        continued for a `resume()` (None when there is none to continue, or the store fails)."""
        try:
            if op == "run":
                sink = StoreSink(store, thread_id, run_id)
                recording = RunRecording(
                    _name(thread_id, run_id), agent=agent, max_bytes=retention.max_bytes, sink=sink
                )
                sink.recording = recording
                sink.push("running")  # listed from its start on
                kept = cls(recording, sink, retention)
                kept.prune()
                return kept
            newest = next(iter(store.recordings(thread_id)), None)
            if newest is None or newest.status != "suspended":
                return None
            stored = store.read_recording(thread_id, newest.run_id)
            sink = StoreSink(store, thread_id, newest.run_id)
            recording = RunRecording(
                _name(thread_id, newest.run_id), agent=agent, max_bytes=retention.max_bytes, sink=sink
            )
            sink.discard()  # its header is the stored one's
            sink.recording = recording
            recording.written = len(stored)
            recording.model_calls = _model_calls(stored)  # a model line's `seq` goes on
            return cls(recording, sink, retention)
        except CheckpointError as exc:
            logger.warning("run %s on thread %r is not recorded: %s", run_id, thread_id, exc)
            return None

    def end(self, status: RecordingStatus) -> None:
        """The operation ended (`incomplete`: it raised or was cancelled): push the rest with
        the status, then apply the retention."""
        self.sink.push(status)
        self.prune()

    def prune(self) -> None:
        retention = self.retention
        try:
            self.sink.store.prune_recordings(
                self.sink.thread_id,
                max_runs=retention.max_runs,
                max_bytes=retention.max_thread_bytes,
                keep=(self.sink.run_id,),
            )
        except CheckpointError as exc:
            logger.warning("recordings of thread %r not pruned: %s", self.sink.thread_id, exc)


def _name(thread_id: str, run_id: str) -> str:
    """How messages name a stored recording (no file is written there)."""
    return f"thread {thread_id} run {run_id}"


def _model_calls(stored: bytes) -> int:
    """How many model calls a stored recording holds (its model lines)."""
    count = 0
    for raw in stored.splitlines():
        if b'"model"' in raw:
            try:
                count += json.loads(raw).get("kind") == "model"
            except (ValueError, AttributeError):
                continue
    return count


def replayable_recording(
    store: Checkpointer, thread_id: str, run_id: str | None = None, *, label: str
) -> tuple[StoredRecording, bytes]:
    """A thread's recording to replay (its newest when `run_id` is None) and its JSON Lines;
    a `RecordingError` saying why when it cannot be replayed (still running, stopped mid-way,
    truncated), an `UnknownRecordingError` when there is none."""
    infos = thread_recordings(store, thread_id)
    if run_id is None:
        if not infos:
            raise UnknownRecordingError(
                f"{label}: thread {thread_id!r} has no recordings (runs are kept as recordings with "
                "Agent(keep_recordings=...) or the configuration's checkpoints.recordings)"
            )
        info = infos[0]
    else:
        found = [i for i in infos if i.run_id == run_id]
        if not found:
            raise unknown_recording(thread_id, run_id, infos, label)
        info = found[0]
    name = f"{label}: thread {thread_id!r}, recording of run {info.run_id}"
    if info.truncated:
        raise RecordingError(
            f"{name}: truncated at its size limit ({info.size} bytes): it cannot be replayed; "
            "keep recordings with a larger max_bytes"
        )
    if info.status == "running":
        raise RecordingError(f"{name}: the run is still going on; replay it once it ends or suspends")
    if info.status == "incomplete":
        raise RecordingError(
            f"{name}: incomplete: its run stopped mid-way (killed, cancelled or raised) and the "
            "recording ends there; it cannot be replayed"
        )
    return info, store.read_recording(thread_id, info.run_id)
