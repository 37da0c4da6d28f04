"""A worker process: executes the runs of one agent file from its DBOS queue.

Start any number of them, on any machines, against one PostgreSQL database. Each is a DBOS
executor with its own `executor_id`: give a worker a stable id (a pod or host name plus a slot)
and, restarted, it recovers the runs it was executing; a worker gone for good has its runs
handed to the others by `DurableClient.recover([its id])` (`jianmu-like recover ID`).
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from dbos import DBOS, DBOSConfig

from .._base.redact import redact_url
from .._run.protocol import AgentLike
from .._run.template import AgentTemplate
from ..agentfile._loader import load_agent, validate_agent_file
from ._fingerprint import agent_fingerprint
from ._liveness import ExecutorLock
from ._naming import APP_NAME, APP_VERSION, queue_name
from ._workflow import register_agent

DEFAULT_WORKER_CONCURRENCY = 16
"""Runs one worker executes at once (runs waiting for an approval count: they hold a slot)."""


def default_executor_id() -> str:
    """`<host>-<pid>`: unique, but not stable across restarts (pass a stable one to recover)."""
    return f"{socket.gethostname()}-{os.getpid()}"


class DurableWorker:
    """Serves one agent file's queue in this process until `stop()` (or SIGTERM/SIGINT)."""

    def __init__(
        self,
        agent_file: str | Path,
        database: str,
        *,
        executor_id: str | None = None,
        worker_concurrency: int = DEFAULT_WORKER_CONCURRENCY,
        global_concurrency: int | None = None,
        polling_interval: float = 0.1,
        allow_modules: Sequence[str] = (),
        agent_factory: Callable[[], AgentLike] | None = None,
        queue: str | None = None,
    ) -> None:
        """`agent_factory` builds the agent instead of loading `agent_file` (whose path still
        names the queue); `queue` names the queue instead (see naming.queue_name);
        `global_concurrency` caps runs across all workers of the queue."""
        self.agent_file = Path(agent_file)
        self.database = database
        self.executor_id = executor_id or default_executor_id()
        self.queue = queue_name(agent_file, queue)
        self.worker_concurrency = worker_concurrency
        self.global_concurrency = global_concurrency
        self.polling_interval = polling_interval
        self.allow_modules = tuple(allow_modules)
        self._spec: dict[str, Any] | None = None
        if agent_factory is None:  # fail before serving
            spec = validate_agent_file(self.agent_file, allow_modules=self.allow_modules)
            self._spec = spec.model_dump(mode="json")
        self._factory = agent_factory
        self._stopped = threading.Event()
        self._lock: ExecutorLock | None = None

    def _served(self) -> tuple[Callable[[], AgentLike], str]:
        """How runs build their agent, and its fingerprint (durable._fingerprint)."""
        if self._factory is not None:
            probe = self._factory()
            return self._factory, agent_fingerprint(None, probe.tree)
        return self._conversations()

    def _conversations(self) -> tuple[Callable[[], AgentLike], str]:
        """One conversation of an `AgentTemplate` per run: the file is loaded once and its tree
        cloned (loading it per run cost more CPU than the run's own steps)."""
        first = load_agent(self.agent_file, allow_modules=self.allow_modules)
        fingerprint = agent_fingerprint(self._spec, first.root)
        template = AgentTemplate.from_agent(first, log_events=False)
        return template.conversation, fingerprint

    def config(self) -> DBOSConfig:
        return {
            "name": APP_NAME,
            "system_database_url": self.database,
            "executor_id": self.executor_id,
            "application_version": APP_VERSION,
            "log_level": os.environ.get("JIANMU_DBOS_LOG_LEVEL", "WARNING"),
            "notification_listener_polling_interval_sec": 0.1,
        }

    def start(self) -> None:
        """Launch DBOS and start taking runs from the queue (returns at once). Another live
        worker with this executor id is an ExecutorInUseError (see durable._liveness)."""
        self._lock = ExecutorLock.acquire(self.database, self.executor_id)
        try:
            factory, fingerprint = self._served()
            register_agent(self.queue, factory, fingerprint, self.database)
            DBOS(config=self.config())
            DBOS.listen_queues([self.queue])
            DBOS.launch()
        except BaseException:
            self._release()
            raise
        DBOS.register_queue(
            self.queue,
            worker_concurrency=self.worker_concurrency,
            global_concurrency=self.global_concurrency,
            polling_interval_sec=self.polling_interval,
            on_conflict="always_update",
        )

    def stop(self) -> None:
        self._stopped.set()

    def serve(self, on_ready: Callable[[], None] | None = None) -> None:
        """`start()`, then block until `stop()`, SIGTERM or SIGINT; then shut DBOS down (runs in
        progress stay PENDING: this worker, restarted with its id, or `recover` resumes them)."""
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, self._on_signal)
        self.start()
        try:
            if on_ready is not None:
                on_ready()
            while not self._stopped.wait(0.5):
                pass
        finally:
            DBOS.destroy(destroy_registry=False)
            self._release()

    def _release(self) -> None:
        """Give up the executor id (recover may hand its runs over from now on)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stop()

    def describe(self) -> dict[str, Any]:
        return {
            "executor_id": self.executor_id,
            "queue": self.queue,
            "database": redact_url(self.database),
            "worker_concurrency": self.worker_concurrency,
            "pid": os.getpid(),
        }
