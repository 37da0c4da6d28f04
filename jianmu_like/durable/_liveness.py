"""Which executor ids belong to a live worker: a PostgreSQL advisory lock per executor id.

A worker holds a session-level advisory lock on its executor id for as long as it serves, on a
connection of its own. PostgreSQL releases the lock when that session ends, also when the
process dies without a word (SIGKILL, OOM, power): the database sees the connection close. So
`recover` can tell a dead worker from a live one (DBOS keeps no heartbeat), and refuses to hand
a live worker's runs to others — the run would execute twice, its in-flight call with it. The
same lock stops a second worker from starting with an executor id already in use.

A worker whose machine vanished (power, network) keeps the lock until the server notices the
connection is gone: the lock's session asks the server for TCP keepalives (`KEEPALIVES`), which
bounds that to about half a minute.
"""

from __future__ import annotations

import hashlib

import psycopg

from .._base.redact import redact_url
from ..errors import JianmuError

_NAMESPACE = "jianmu_like.durable.executor:"
KEEPALIVES = "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3"
"""Server-side TCP keepalives of the lock's session: a silent peer is dropped after ~25 s."""


class ExecutorInUseError(RuntimeError, JianmuError):
    """A live worker holds this executor id."""


def _key(executor_id: str) -> int:
    digest = hashlib.sha256((_NAMESPACE + executor_id).encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)  # pg advisory locks take a bigint


def _connect(database: str) -> psycopg.Connection[tuple[object, ...]]:
    try:
        return psycopg.connect(database, autocommit=True, connect_timeout=10, options=KEEPALIVES)
    except psycopg.Error as exc:
        raise ConnectionError(f"cannot reach the database {redact_url(database)}: {exc}") from None


class ExecutorLock:
    """The lock a live worker holds on its executor id (released by `release` or its death)."""

    def __init__(self, connection: psycopg.Connection[tuple[object, ...]], executor_id: str) -> None:
        self._connection = connection
        self.executor_id = executor_id

    @classmethod
    def acquire(cls, database: str, executor_id: str) -> ExecutorLock:
        connection = _connect(database)
        row = connection.execute("SELECT pg_try_advisory_lock(%s)", (_key(executor_id),)).fetchone()
        if not row or not row[0]:
            connection.close()
            raise ExecutorInUseError(
                f"executor id {executor_id!r} is in use by a live worker: give each worker its own "
                "--executor-id (a restarted worker reuses its id only once the old process is gone)"
            )
        return cls(connection, executor_id)

    def release(self) -> None:
        self._connection.close()  # the session ends: PostgreSQL drops its advisory locks
