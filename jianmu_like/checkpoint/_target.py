"""Where a checkpoint store lives: a SQLite file path or a PostgreSQL URL, one string everywhere.

The command line (`--checkpoint`, `approvals`), `Agent(checkpointer=...)` and scripts all pass
the same kind of target to `open_checkpointer`, so switching a deployment from a local file to a
shared database changes a string, not code.
"""

from __future__ import annotations

import re
from pathlib import Path

from .._base.redact import redact_url
from ._contract import CheckpointError, ClosableCheckpointer
from ._store import SQLiteCheckpointer

DATABASE_SCHEMES = ("postgresql://", "postgres://")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
POSTGRES_EXTRA = "pip install 'jianmu_like[postgres]'"


def is_database_url(target: str | Path) -> bool:
    """Whether `target` names a PostgreSQL database rather than a SQLite file."""
    return isinstance(target, str) and target.lower().startswith(DATABASE_SCHEMES)


def store_label(target: str | Path) -> str:
    """The target as it may be shown: a path, or a URL without its credentials."""
    return redact_url(str(target)) if is_database_url(target) else str(target)


def open_checkpointer(
    target: str | Path, *, readonly: bool = False, keep: int | str | None = "config"
) -> ClosableCheckpointer:
    """Open the store at `target`: `postgresql://...` / `postgres://...` a PostgreSQL database
    (tables created or migrated on first use), anything else a SQLite file. `readonly` never
    creates or changes a store (and refuses one that does not exist). `keep`: versions kept per
    thread (an int, None for all; default: the configuration's `checkpoints.keep`)."""
    scheme = _SCHEME.match(target) if isinstance(target, str) else None
    if scheme is not None and not is_database_url(target):
        raise CheckpointError(
            f"{redact_url(str(target))}: unsupported checkpoint store URL scheme {scheme.group(1)!r} "
            "(use a SQLite file path or postgresql://...)"
        )
    if not is_database_url(target):
        return SQLiteCheckpointer(target, readonly=readonly, keep=keep)
    try:
        from ._postgres import PostgresCheckpointer
    except ImportError as exc:
        raise CheckpointError(
            f"{redact_url(str(target))}: a PostgreSQL checkpoint store needs psycopg and psycopg-pool "
            f"({exc}); install them with {POSTGRES_EXTRA}"
        ) from exc
    return PostgresCheckpointer(str(target), readonly=readonly, keep=keep)
