"""Talk to durable runs from any process: enqueue, await, decide approvals, watch, recover.

Uses only DBOS's `DBOSClient` (the system database; no workflow code runs here), so a laptop,
a web server or a cron job can submit runs that workers elsewhere execute.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dbos import DBOSClient, EnqueueOptions, WorkflowStatus
from dbos._utils import INTERNAL_QUEUE_NAME

from ..guard.approvals import Approval
from .naming import APP_NAME, APP_VERSION, APPROVAL_TOPIC, PENDING_EVENT, WORKFLOW_NAME, agent_key, queue_name
from .result import DurableRunResult
from .workflow import approval_message

ACTIVE = ["ENQUEUED", "PENDING", "DELAYED"]
"""DBOS statuses of runs not finished: waiting on the queue, running (or waiting for approval)."""
FINISHED = ["SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"]


class RunHandle:
    """One enqueued run: its id, status, pending approvals and (awaited) result."""

    def __init__(self, client: DurableClient, run_id: str) -> None:
        self.client = client
        self.run_id = run_id

    def status(self) -> str:
        """The DBOS status: ENQUEUED, PENDING (running or waiting), SUCCESS, ERROR, CANCELLED..."""
        return str(self.client.dbos.retrieve_workflow(self.run_id).get_status().status)

    def result(self, *, polling_interval: float = 0.1) -> DurableRunResult:
        """Wait for the run to end; its result (raises the workflow's exception if it failed)."""
        value: Any = self.client.dbos.retrieve_workflow(self.run_id).get_result(
            polling_interval_sec=polling_interval
        )
        return DurableRunResult.model_validate(value)

    async def result_async(self, *, polling_interval: float = 0.1) -> DurableRunResult:
        handle: Any = await self.client.dbos.retrieve_workflow_async(self.run_id)
        value: Any = await handle.get_result(polling_interval_sec=polling_interval)
        return DurableRunResult.model_validate(value)

    def pending_approvals(self, *, wait: float = 0.0) -> list[Approval]:
        """The tool calls this run waits on (waits up to `wait` seconds for the run to publish them)."""
        value = self.client.dbos.get_event(self.run_id, PENDING_EVENT, timeout_seconds=wait)
        return [Approval.model_validate(item) for item in value or []]


class DurableClient:
    """A connection to the DBOS system database of durable runs (`database`: postgresql://...)."""

    def __init__(self, database: str) -> None:
        self.database = database
        self.dbos = DBOSClient(system_database_url=database, application_name=APP_NAME)

    def close(self) -> None:
        self.dbos.destroy()

    def __enter__(self) -> DurableClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ runs
    def _options(self, agent_file: str | Path, run_id: str | None) -> EnqueueOptions:
        options: EnqueueOptions = {"workflow_name": WORKFLOW_NAME, "queue_name": queue_name(agent_file)}
        if run_id is not None:
            options["workflow_id"] = run_id  # submitting the same id twice attaches to the first run
        return options

    def submit(
        self,
        agent_file: str | Path,
        question: str,
        *,
        inputs: dict[str, Any] | None = None,
        run_id: str | None = None,
    ) -> RunHandle:
        """Enqueue a run of the agent file's agent; a worker serving that file executes it."""
        handle: Any = self.dbos.enqueue(
            self._options(agent_file, run_id), agent_key(agent_file), question, inputs or {}
        )
        return RunHandle(self, handle.get_workflow_id())

    async def submit_async(
        self,
        agent_file: str | Path,
        question: str,
        *,
        inputs: dict[str, Any] | None = None,
        run_id: str | None = None,
    ) -> RunHandle:
        options = self._options(agent_file, run_id)
        handle: Any = await self.dbos.enqueue_async(options, agent_key(agent_file), question, inputs or {})
        return RunHandle(self, handle.get_workflow_id())

    def run(self, run_id: str) -> RunHandle:
        return RunHandle(self, run_id)

    # ------------------------------------------------------------------ approvals
    def decide(self, run_id: str, approval_id: str, approved: bool, reason: str = "") -> None:
        """Decide a pending approval of a run; the worker executing it continues (any worker).

        The message is durable: sent before the run reaches its wait, it is received then.
        """
        self.dbos.send(run_id, approval_message(approval_id, approved, reason), APPROVAL_TOPIC)

    def approve(self, run_id: str, approval_id: str, reason: str = "") -> None:
        self.decide(run_id, approval_id, True, reason)

    def deny(self, run_id: str, approval_id: str, reason: str = "") -> None:
        self.decide(run_id, approval_id, False, reason)

    def waiting(self, agent_file: str | Path | None = None) -> dict[str, list[Approval]]:
        """Runs waiting for approvals (run id → its pending approvals)."""
        found: dict[str, list[Approval]] = {}
        for status in self.runs(agent_file, statuses=ACTIVE):  # a recovered run is ENQUEUED again
            approvals = self.run(status.workflow_id).pending_approvals()
            if approvals:
                found[status.workflow_id] = approvals
        return found

    # ------------------------------------------------------------------ watching
    def runs(
        self, agent_file: str | Path | None = None, *, statuses: Sequence[str] = ACTIVE, limit: int = 1000
    ) -> list[WorkflowStatus]:
        """Runs (of one agent, or all) in the given DBOS statuses, oldest first."""
        return self.dbos.list_workflows(
            name=WORKFLOW_NAME,
            status=list(statuses),
            queue_name=queue_name(agent_file) if agent_file is not None else None,
            limit=limit,
            load_input=False,
            load_output=False,
        )

    # ------------------------------------------------------------------ recovery
    def recover(self, executor_ids: Sequence[str]) -> list[str]:
        """Hand the runs of dead workers (by executor id) back to their queue: any live worker
        takes them and replays them from their recorded steps. What DBOS's own recovery (and its
        admin endpoint `/dbos-workflow-recovery`) does for an executor; only for executors that
        are really gone — a live one would be told to park its runs at its next step."""
        sys_db = self.dbos._sys_db  # DBOSClient exposes no recovery call: its system database does
        recovered: list[str] = []
        for executor in executor_ids:
            for pending in sys_db.get_pending_workflows(executor, APP_VERSION):
                if sys_db.reenqueue_for_recovery(
                    pending.workflow_id, list(executor_ids), INTERNAL_QUEUE_NAME
                ):
                    recovered.append(pending.workflow_id)
        return recovered
