"""The durable workflow of one agent run: build the agent, run it with model and tool calls as
steps, wait durably for approvals, return a `DurableRunResult`.

A recovered workflow runs this function again from the top on whichever worker took it over:
a fresh agent, the same inputs, and every step already recorded answered from the database.
Its first step records the agent's fingerprint, so a worker whose agent file changed since the
run started fails the run before replaying anything (durable._fingerprint); the steps after it
start in their recorded order (durable._steps.StepOrder), and DBOS checks each replayed step's
name against the record, so a diverging tree is an error, not a silent wrong answer. Nothing
else is kept: the DBOS record *is* the run's journal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dbos import DBOS

from .._run.protocol import AgentLike
from ..errors import JianmuError
from ..guard._approvals import Approval, ApprovalDecision
from ..models._hooks import use_model_call_hook
from ..models._messages import human
from ..tools._hooks import use_tool_call_hook
from ..tools._questions import close_human_channel
from ._fingerprint import check_fingerprint
from ._naming import (
    APPROVAL_TOPIC,
    FINGERPRINT_STEP,
    PENDING_EVENT,
    THREAD_LOAD_STEP,
    THREAD_SAVE_STEP,
    WORKFLOW_NAME,
)
from ._old_paths import install as _install_old_paths
from ._result import DurableRunResult
from ._steps import StepOrder, durable_model_call, durable_tool_call, use_step_order
from ._threads import continue_thread, load_thread, save_thread

AgentFactory = Callable[[], AgentLike]
"""Builds a fresh agent for one run (a worker's agent file, loaded again)."""


@dataclass(frozen=True)
class ServedAgent:
    """An agent a worker serves: how to build it per run, and its fingerprint (durable._fingerprint)."""

    factory: AgentFactory
    fingerprint: str
    database: str = ""
    """The durable database, whose checkpoint tables hold the threads of threaded runs."""


_install_old_paths()  # records of older workers name their classes by the old module paths

_served: dict[str, ServedAgent] = {}

APPROVAL_WAIT = 3600.0
"""Seconds of one durable wait for a decision; the run waits again after each (unbounded)."""


class UnknownAgentError(RuntimeError, JianmuError):
    """A run reached a worker that does not serve its agent."""


def register_agent(key: str, factory: AgentFactory, fingerprint: str, database: str = "") -> None:
    """Serve runs of the agent `key` (its queue's name) in this process (the worker does this
    before launching); `database` keeps the threads of threaded runs."""
    _served[key] = ServedAgent(factory, fingerprint, database)


async def _fingerprint_step(fingerprint: str, ran: list[bool]) -> str:
    ran.append(True)  # not replayed: this execution is the run's first to get this far
    return fingerprint


def approval_message(approval_id: str, decision: ApprovalDecision) -> dict[str, Any]:
    """The message that decides one pending approval of a run (sent on APPROVAL_TOPIC)."""
    return {"approval_id": approval_id, **decision.model_dump(mode="json")}


@DBOS.workflow(name=WORKFLOW_NAME)
async def agent_run(
    agent: str, question: str, inputs: dict[str, Any], thread_id: str | None = None
) -> dict[str, Any]:
    """Run the agent `agent` on `question` (plus extra `inputs`) to its end; with `thread_id`,
    continuing that conversation and appending the run's end to it (durable._threads)."""
    served = _served.get(agent)
    if served is None:
        known = ", ".join(sorted(_served)) or "none"
        raise UnknownAgentError(f"this worker does not serve agent {agent!r} (it serves: {known})")
    run_id = DBOS.workflow_id or ""
    # First, before any other step: the agent this run started with must be this worker's.
    ran: list[bool] = []
    recorded = await DBOS.run_step_async(
        {"name": FINGERPRINT_STEP}, _fingerprint_step, served.fingerprint, ran
    )
    check_fingerprint(run_id, recorded, served.fingerprint)
    loaded: dict[str, Any] | None = None
    if thread_id is not None:
        if not served.database:
            raise UnknownAgentError(
                f"this worker keeps no threads (run {run_id!r} names thread {thread_id!r})"
            )
        loaded = await DBOS.run_step_async(
            {"name": THREAD_LOAD_STEP}, load_thread, served.database, thread_id
        )
    # A replay starts its steps in recorded order. When the fingerprint step ran just now, no
    # step after it can have a record (each starts after it was recorded): nothing to read.
    order = StepOrder({}) if ran else await StepOrder.load(run_id)
    use_step_order(order)
    instance = served.factory()
    toolsets = getattr(instance, "toolsets", None)
    if callable(toolsets):  # no person at a worker: a tool's question is declined at once
        close_human_channel(toolsets())  # (as `jianmu-like run` does), never held for its timeout
    try:
        parent = continue_thread(instance, thread_id, loaded) if thread_id is not None else None
        with use_model_call_hook(durable_model_call), use_tool_call_hook(durable_tool_call):
            data: dict[str, Any] = {"messages": [human(question)], **inputs}
            if instance.accepts("task"):  # agent files take the question as `task` too (as `run`)
                data.setdefault("task", question)
            result = await instance.run(data)
            waited = False
            while result.status == "suspended":
                waited = True
                await DBOS.set_event_async(PENDING_EVENT, _dump(result.pending_approvals))
                decisions = await _next_decisions(result.pending_approvals)
                if decisions:
                    remaining = [a for a in result.pending_approvals if a.id not in decisions]
                    await DBOS.set_event_async(PENDING_EVENT, _dump(remaining))  # not while it runs on
                    result = await instance.resume(decisions)
            if waited:
                await DBOS.set_event_async(PENDING_EVENT, [])
        if thread_id is not None:
            await order.run(
                THREAD_SAVE_STEP,
                save_thread,
                served.database,
                thread_id,
                parent,
                instance,
                result,
                served.fingerprint,
                run_id,
            )
        return DurableRunResult.of(run_id, result, _messages(instance)).model_dump(mode="json")
    finally:
        await instance.aclose()


async def _next_decisions(pending: list[Approval]) -> dict[str, ApprovalDecision]:
    """Wait for the next message deciding a pending approval (messages for ids that are not
    pending, or malformed ones, are dropped: a stale click must not fail the run)."""
    ids = {approval.id for approval in pending}
    message = await DBOS.recv_async(APPROVAL_TOPIC, timeout_seconds=APPROVAL_WAIT)
    if not isinstance(message, dict) or message.get("approval_id") not in ids:
        if message is not None:
            DBOS.logger.warning(f"ignored an approval message for no pending approval: {message!r}")
        return {}
    arguments = message.get("arguments")
    decision = ApprovalDecision(
        approved=bool(message.get("approved")),
        reason=str(message.get("reason") or ""),
        arguments=arguments if isinstance(arguments, dict) and message.get("approved") else None,
    )
    return {str(message["approval_id"]): decision}


def _dump(approvals: list[Approval]) -> list[dict[str, Any]]:
    return [approval.model_dump(mode="json") for approval in approvals]


def _messages(agent: AgentLike) -> list[dict[str, Any]]:
    messages = agent.state_manager.get(agent.keys.messages, agent.output_namespace, None) or []
    return [m.model_dump(mode="json") if hasattr(m, "model_dump") else m for m in messages]
