"""Durable runs: checkpoint stores (memory, SQLite, PostgreSQL) and the recorder that saves an
agent into them; `open_checkpointer` picks the store from a path or a `postgresql://` URL."""

from typing import TYPE_CHECKING

from ..exports import lazy_exports

if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt name is an error there
    __all__, __getattr__, __dir__ = lazy_exports(__name__)

if TYPE_CHECKING:  # the public names, one source: jianmu_like.exports reads them at run time
    from ._contract import AsyncCheckpointer as AsyncCheckpointer
    from ._contract import Checkpoint as Checkpoint
    from ._contract import Checkpointer as Checkpointer
    from ._contract import CheckpointError as CheckpointError
    from ._contract import Commit as Commit
    from ._contract import DecisionConflictError as DecisionConflictError
    from ._contract import Durability as Durability
    from ._contract import FollowUp as FollowUp
    from ._contract import ThreadConflictError as ThreadConflictError
    from ._history import CheckpointInfo as CheckpointInfo
    from ._history import CheckpointSummary as CheckpointSummary
    from ._postgres import PostgresCheckpointer as PostgresCheckpointer
    from ._recordings import RecordingRetention as RecordingRetention
    from ._recordings import StoredRecording as StoredRecording
    from ._recordings import UnknownRecordingError as UnknownRecordingError
    from ._recordings import thread_recordings as thread_recordings
    from ._store import MemoryCheckpointer as MemoryCheckpointer
    from ._store import SQLiteCheckpointer as SQLiteCheckpointer
    from ._target import is_database_url as is_database_url
    from ._target import open_checkpointer as open_checkpointer
    from ._target import store_label as store_label
    from ._threads import ThreadView as ThreadView
    from ._threads import UnknownThreadError as UnknownThreadError
    from ._threads import thread_history as thread_history
    from ._threads import thread_view as thread_view
