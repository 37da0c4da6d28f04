"""Talk to durable runs from any process: enqueue, await, decide approvals, watch, recover.

Uses only DBOS's `DBOSClient` (the system database; no workflow code runs here), so a laptop,
a web server or a cron job can submit runs that workers elsewhere execute.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dbos import DBOSClient, EnqueueOptions, WorkflowStatus
from dbos._utils import INTERNAL_QUEUE_NAME

from .._run.review import store_decision, unknown_approval
from ..checkpoint._postgres import PostgresCheckpointer
from ..guard._approvals import (
    AlreadyDecided,
    Approval,
    ApprovalDecision,
    ApprovalError,
    check_edit,
    parse_decision,
)
from ..guard._interruptions import Interruption, InterruptionError, from_approval
from ..tools._questions import QuestionAnswer
from ._liveness import ExecutorInUseError, ExecutorLock
from ._naming import APP_NAME, APP_VERSION, APPROVAL_TOPIC, PENDING_EVENT, WORKFLOW_NAME, queue_name
from ._result import DurableRunResult
from ._setup import ensure_system_database
from ._workflow import approval_message

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

    def interruptions(self, *, wait: float = 0.0) -> list[Interruption]:
        """What this run waits for, as interruptions: its pending approvals (a worker has no
        person to ask, so it declines a tool's question at once: a durable run never waits on
        one); answer one with `DurableClient.answer` (waits up to `wait` seconds, as
        `pending_approvals`)."""
        return [from_approval(approval) for approval in self.pending_approvals(wait=wait)]


class DurableClient:
    """A connection to the DBOS system database of durable runs (`database`: postgresql://...)."""

    def __init__(self, database: str) -> None:
        self.database = database
        ensure_system_database(database)  # a run may be submitted before any worker has started
        self.dbos = DBOSClient(system_database_url=database, application_name=APP_NAME)
        self._decisions: PostgresCheckpointer | None = None

    def close(self) -> None:
        if self._decisions is not None:
            self._decisions.close()
        self.dbos.destroy()

    def __enter__(self) -> DurableClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ runs
    def _options(self, queue: str, run_id: str | None) -> EnqueueOptions:
        options: EnqueueOptions = {"workflow_name": WORKFLOW_NAME, "queue_name": queue}
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
        queue: str | None = None,
        thread_id: str | None = None,
    ) -> RunHandle:
        """Enqueue a run of the agent file's agent on the file's own queue (`queue`: the name
        its workers were given instead, see naming.queue_name); a worker serving it executes it.
        `thread_id` continues that conversation (kept in this database's checkpoint tables:
        `jianmu-like threads history postgresql://... T` lists its versions)."""
        name = queue_name(agent_file, queue)
        args = (name, question, inputs or {}, *((thread_id,) if thread_id is not None else ()))
        handle: Any = self.dbos.enqueue(self._options(name, run_id), *args)
        return RunHandle(self, handle.get_workflow_id())

    async def submit_async(
        self,
        agent_file: str | Path,
        question: str,
        *,
        inputs: dict[str, Any] | None = None,
        run_id: str | None = None,
        queue: str | None = None,
        thread_id: str | None = None,
    ) -> RunHandle:
        name = queue_name(agent_file, queue)
        args = (name, question, inputs or {}, *((thread_id,) if thread_id is not None else ()))
        handle: Any = await self.dbos.enqueue_async(self._options(name, run_id), *args)
        return RunHandle(self, handle.get_workflow_id())

    def run(self, run_id: str) -> RunHandle:
        return RunHandle(self, run_id)

    # ------------------------------------------------------------------ approvals
    def _decision_store(self) -> PostgresCheckpointer:
        """Decisions are rows of the checkpoint store's decision table in this database (run id
        as thread id): one atomic insert each, so of two processes deciding one approval exactly
        one wins, as with checkpoint threads (jianmu_like._run.review)."""
        if self._decisions is None:
            self._decisions = PostgresCheckpointer(self.database, pool_size=1)
        return self._decisions

    def decide(
        self,
        run_id: str,
        approval_id: str,
        approved: bool,
        reason: str = "",
        *,
        arguments: dict[str, Any] | None = None,
    ) -> ApprovalDecision:
        """Decide a pending approval of a run; the worker executing it continues (any worker).

        An approval is decided once: a second decision on it, from any process, is an
        ApprovalError naming the verdict that stands ("was already approved (at ...)"), and so is
        an id the run does not wait for ("unknown approval id"). The decision is stored first
        (the winner of a race is whoever stores it), then sent to the run as a durable message
        with an idempotency key: a decider that died between the two is completed by the next
        attempt, which re-sends the stored decision (delivered once) before saying it stands.
        `arguments` approves the call with corrected arguments (checked against the tool's
        schema here, `InvalidEdit` if they do not match; the run's guard checks them again).
        """
        where = f"run {run_id!r}"
        store = self._decision_store()
        found = self.dbos.list_workflows(workflow_ids=[run_id], load_input=False, load_output=False)
        if not found:
            raise ApprovalError(f"no durable run {run_id!r}")
        active = found[0].status in ACTIVE
        earlier = store.decisions(run_id).get(approval_id)
        if earlier is not None:
            kept = ApprovalDecision.model_validate(earlier.decision)
            if active:
                self._deliver(run_id, approval_id, kept)
            raise AlreadyDecided(approval_id, kept, where=where)
        if not active:
            raise ApprovalError(f"run {run_id!r} is not waiting for approvals (status {found[0].status})")
        pending = {approval.id: approval for approval in self.run(run_id).pending_approvals()}
        approval = pending.get(approval_id)
        if approval is None:
            raise unknown_approval(approval_id, where, list(pending))
        decision = ApprovalDecision(approved=approved, reason=reason, arguments=arguments)
        check_edit(approval, decision)
        kept = store_decision(store, run_id, approval, decision, where=where)
        self._deliver(run_id, approval_id, kept)
        return kept

    def answer(self, run_id: str, interruption_id: str, answer: Any) -> ApprovalDecision:
        """Answer one of `RunHandle.interruptions()` in the forms `Agent.decide` takes (an
        `ApprovalDecision`, True / "approve", False / "deny", ("deny", reason)): `decide`, with
        its guarantees (stored first, decided once). A question's answer (accept, decline,
        cancel) is an `InterruptionError` saying why no durable run waits on one."""
        if _answers_a_question(answer):
            raise InterruptionError(
                f"run {run_id!r}: {interruption_id!r} cannot be answered as a question: a durable run "
                "never waits on one (a worker has no person to ask, and declines a tool's question "
                "at once, as `jianmu-like run` does); its interruptions are approvals: approve or deny"
            )
        decision = parse_decision(answer)
        if decision.output is not None:
            raise ApprovalError(f"run {run_id!r}: a durable run has no client tools; an output answers none")
        return self.decide(
            run_id, interruption_id, decision.approved, decision.reason, arguments=decision.arguments
        )

    def _deliver(self, run_id: str, approval_id: str, decision: ApprovalDecision) -> None:
        """The message that wakes the run (durable; the key makes a re-send a no-op)."""
        message = approval_message(approval_id, decision)
        self.dbos.send(run_id, message, APPROVAL_TOPIC, idempotency_key=f"{run_id}/{approval_id}")

    def approve(
        self, run_id: str, approval_id: str, reason: str = "", *, arguments: dict[str, Any] | None = None
    ) -> ApprovalDecision:
        return self.decide(run_id, approval_id, True, reason, arguments=arguments)

    def deny(self, run_id: str, approval_id: str, reason: str = "") -> ApprovalDecision:
        return self.decide(run_id, approval_id, False, reason)

    def waiting(
        self, agent_file: str | Path | None = None, *, queue: str | None = None
    ) -> dict[str, list[Approval]]:
        """Runs waiting for approvals (run id → its pending approvals)."""
        found: dict[str, list[Approval]] = {}
        for status in self.runs(
            agent_file, statuses=ACTIVE, queue=queue
        ):  # a recovered run is ENQUEUED again
            approvals = self.run(status.workflow_id).pending_approvals()
            if approvals:
                found[status.workflow_id] = approvals
        return found

    # ------------------------------------------------------------------ watching
    def runs(
        self,
        agent_file: str | Path | None = None,
        *,
        statuses: Sequence[str] = ACTIVE,
        limit: int = 1000,
        queue: str | None = None,
    ) -> list[WorkflowStatus]:
        """Runs (of one agent, or all) in the given DBOS statuses, oldest first."""
        return self.dbos.list_workflows(
            name=WORKFLOW_NAME,
            status=list(statuses),
            queue_name=queue_name(agent_file, queue) if agent_file is not None else None,
            limit=limit,
            load_input=False,
            load_output=False,
        )

    # ------------------------------------------------------------------ recovery
    def recover(self, executor_ids: Sequence[str]) -> list[str]:
        """Hand the runs of dead workers (by executor id) back to their queue: any live worker
        takes them and replays them from their recorded steps. What DBOS's own recovery (and its
        admin endpoint `/dbos-workflow-recovery`) does for an executor.

        Only for executors that are really gone: a live one (its worker holds its executor lock,
        durable._liveness) is an ExecutorInUseError and nothing is recovered — its runs would
        execute twice, the call in flight with them. The dead ones' locks are held while their
        runs are handed over, so a worker restarting with such an id cannot take them meanwhile.
        """
        sys_db = self.dbos._sys_db  # DBOSClient exposes no recovery call: its system database does
        locks: list[ExecutorLock] = []
        try:
            live: list[str] = []
            for executor in dict.fromkeys(executor_ids):
                try:
                    locks.append(ExecutorLock.acquire(self.database, executor))
                except ExecutorInUseError:
                    live.append(executor)
            if live:
                raise ExecutorInUseError(
                    f"executor(s) {', '.join(map(repr, live))} belong to a live worker: recover only the "
                    "ids of workers that are gone (stop the worker first); nothing was recovered"
                )
            recovered: list[str] = []
            for executor in executor_ids:
                for pending in sys_db.get_pending_workflows(executor, APP_VERSION):
                    if sys_db.reenqueue_for_recovery(
                        pending.workflow_id, list(executor_ids), INTERNAL_QUEUE_NAME
                    ):
                        recovered.append(pending.workflow_id)
            return recovered
        finally:
            for lock in locks:
                lock.release()


def _answers_a_question(answer: Any) -> bool:
    """Whether `answer` is in a question's form (an action, or a mapping with one)."""
    if isinstance(answer, QuestionAnswer):
        return True
    if isinstance(answer, str):
        return answer in ("accept", "decline", "cancel")
    return isinstance(answer, Mapping) and "action" in answer
