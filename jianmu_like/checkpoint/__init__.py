"""Durable runs: checkpoint stores (memory, SQLite, PostgreSQL) and the recorder that saves an
agent into them; `open_checkpointer` picks the store from a path or a `postgresql://` URL."""

from typing import TYPE_CHECKING

from ..exports import lazy_exports

_EXPORTS = {
    ".contract": (
        "Checkpoint",
        "CheckpointError",
        "Checkpointer",
        "DecisionConflictError",
        "ThreadConflictError",
    ),
    ".history": ("CheckpointInfo", "CheckpointSummary"),
    ".postgres": ("PostgresCheckpointer",),
    ".store": (
        "MemoryCheckpointer",
        "SQLiteCheckpointer",
    ),
    ".target": (
        "is_database_url",
        "open_checkpointer",
        "store_label",
    ),
    ".threads": ("ThreadView", "UnknownThreadError", "thread_history", "thread_view"),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names for type checkers; tests/test_public_api.py checks they match
    from .contract import Checkpoint as Checkpoint
    from .contract import Checkpointer as Checkpointer
    from .contract import CheckpointError as CheckpointError
    from .contract import DecisionConflictError as DecisionConflictError
    from .contract import ThreadConflictError as ThreadConflictError
    from .history import CheckpointInfo as CheckpointInfo
    from .history import CheckpointSummary as CheckpointSummary
    from .postgres import PostgresCheckpointer as PostgresCheckpointer
    from .store import MemoryCheckpointer as MemoryCheckpointer
    from .store import SQLiteCheckpointer as SQLiteCheckpointer
    from .target import is_database_url as is_database_url
    from .target import open_checkpointer as open_checkpointer
    from .target import store_label as store_label
    from .threads import ThreadView as ThreadView
    from .threads import UnknownThreadError as UnknownThreadError
    from .threads import thread_history as thread_history
    from .threads import thread_view as thread_view
