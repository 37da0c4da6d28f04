"""Distributed, durable agent runs on DBOS (the optional `durable` extra: `pip install
'jianmu_like[durable]'`).

An agent run is a DBOS workflow; every model call and every tool call is a DBOS step, recorded in
PostgreSQL, so a run interrupted by a crash is replayed from those records on any worker: no
finished step runs again. Runs are enqueued on a DBOS queue (one per agent file) and executed by
any number of `DurableWorker` processes sharing the database; a pending approval is a durable wait
(`DBOS.recv`) that any process answers through `DurableClient`.

Nothing here is imported by `import jianmu_like`: `dbos` loads only when this package is used.
"""

from .._base.extras import missing_extra

try:
    import dbos  # noqa: F401 (here, so a missing extra is named before any module of the package)
except ImportError as exc:
    raise missing_extra("durable", "jianmu_like.durable (durable runs on DBOS)", exc) from exc

from ._client import DurableClient, RunHandle
from ._naming import queue_name
from ._result import DurableRunResult, WorkflowStatus
from ._worker import DurableWorker

__all__ = ["DurableClient", "DurableRunResult", "DurableWorker", "RunHandle", "WorkflowStatus", "queue_name"]
