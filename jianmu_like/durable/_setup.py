"""DBOS's system tables, created by whoever reaches the database first.

A worker's `DBOS.launch()` creates the system database and its tables; a `submit` that came
first (docs/guides/durable.md starts workers with `&` and submits at once) used to fail with `relation
"dbos.workflow_status" does not exist`. A client now runs the same migrations — with the
LISTEN/NOTIFY triggers workers use, DBOS's default, so what a client creates is what a worker
would have — and a run submitted before any worker waits on its queue for the first one.
"""

from __future__ import annotations

from dbos._serialization import DefaultSerializer
from dbos._sys_db import SystemDatabase


def ensure_system_database(database: str) -> None:
    """Create the system database and migrate its tables unless a worker already has (idempotent;
    DBOS serialises concurrent migrations with an advisory lock)."""
    system = SystemDatabase.create(
        system_database_url=database,
        engine_kwargs={"pool_size": 2, "max_overflow": 2, "pool_pre_ping": True},  # lock + migration
        engine=None,
        schema="dbos",
        serializer=DefaultSerializer(),
        executor_id=None,
        use_listen_notify=True,
    )
    try:
        system.run_migrations()
    finally:
        system.destroy()
