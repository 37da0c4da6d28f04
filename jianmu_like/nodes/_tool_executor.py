"""ToolExecutor: run the tool calls the model asked for and hand back one observation per call.

Every call yields exactly one `tool` message, in the order of the calls, paired by
`tool_call_id` (the OpenAI protocol requires it directly after the assistant message). Nothing
the model or a tool does can crash the node: unknown tools, malformed or invalid arguments,
exceptions, timeouts and guard denials all become error observations the model can read.

Before anything runs, every call goes through the guard (`constraints`). Calls a policy marks
PENDING become `Approval`s in the state at once (listed and decidable while the other calls of the
batch run) and the node waits — RUNNING, without signalling, so the run suspends once the other
calls of the batch are done, unless every decision came meanwhile. A recorded decision (and a signal) lets the
batch continue: guards are evaluated again, approved calls run, denied ones get an observation.
A suspension never runs a finished call twice: the outcomes of the batch's finished calls are in
the state before it suspends (with a journal, each as soon as it is known). With a checkpointer
(`state_manager.journal`), the batch's calls are journaled as started (one write) before the first
runs, and each as finished with its outcome right after, inside the batch (the last one with the
checkpoint saved after the tick: see checkpoint._recorder): after a crash, finished calls are replayed from
the journal, never run again; a call that started but has no outcome runs again only if its tool
is `idempotent`, otherwise the model is told its outcome is unknown.

A call of a client tool (a tool the run's caller offered and runs itself, `nodes._client_tools`)
waits the same way, as an `Approval` of kind `client_tool`, while the batch's other calls run
here; the caller's result (the decision's `output`) becomes its observation, cut like any
output. With `parallel_tool_calls` off only a batch's first client call goes to the caller; the
others are answered with an error telling the model to call them one at a time.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Sequence
from typing import Any, Literal

from py_trees.common import Status

from ..bt._async_behaviour import AsyncBehaviour
from ..bt._node import INVALID, RUNNING, SUCCESS
from ..guard._approvals import Approval, ApprovalDecision
from ..guard._decisions import Decision
from ..guard._enforcer import GuardContext, GuardEnforcer
from ..models._construct import construct
from ..models._keys import StateKeys
from ..models._messages import Message, ToolCall
from ..models._types import Usage
from ..state._journal import ToolJournal, never_began
from ..telemetry import _interruption_events as interruption_events
from ..telemetry import events as ev
from ..telemetry.logging import get_logger
from ..tools._artifact import Artifact
from ..tools._base import Tool
from ..tools._call_context import TokenBudget, ToolCallContext, reset_current_tool_call, set_current_tool_call
from ..tools._errors import ToolArgumentsError
from ..tools._toolset import ToolSet
from ._client_tools import ClientTools, client_tools
from ._open_calls import INTERRUPTED, NO_CLIENT_RESULT, NOT_RUN_WAITING, journal_key
from ._tool_calls import ToolCallRunner, ToolRunner
from ._tool_outcome import ToolOutcome

_log = get_logger("jianmu_like.guard")

__all__ = ["ExecutionMode", "ToolExecutor", "ToolRunner"]

ExecutionMode = Literal["serial", "parallel", "auto"]
"""How a batch of tool calls runs: one after another, all at once, or `auto` (parallel when
there are several and every tool is parallel-safe)."""

OUTCOME_UNKNOWN = (
    "outcome unknown: the process stopped while this call was running; it may or may not have "
    "taken effect. Check before calling it again."
)


def call_signature(call: ToolCall) -> str:
    """What makes two calls "the same call" for the repeated-call hint: the tool and its
    arguments, whatever order the model wrote the keys in."""
    arguments = call.arguments
    if len(arguments) > 1:
        keys = list(arguments)
        ordered = sorted(keys)  # str keys: ToolCall validates them
        if keys != ordered:
            return f"{call.name}:{ {key: arguments[key] for key in ordered}!r}"
    return f"{call.name}:{arguments!r}"


class ToolExecutor(AsyncBehaviour):
    """Executes `actions` (serially, in parallel, or `auto`) after a guard preflight."""

    def __init__(
        self,
        name: str,
        tools: ToolSet,
        *,
        keys: StateKeys | None = None,
        namespace: str | None = None,
        constraints: GuardEnforcer | None = None,
        tool_runner: ToolRunner | None = None,
        execution_mode: ExecutionMode = "auto",
        default_timeout: float = 60.0,
        max_output_chars: int = 8000,
        max_budget_tokens: int | None = None,
    ) -> None:
        super().__init__(name)
        self.max_budget_tokens = max_budget_tokens
        """The run's token budget: tokens a call spends itself (MCP sampling) are checked
        against it before they are spent (`ToolCallContext.budget`)."""
        self.tools = tools
        self.keys = keys or StateKeys()
        self.namespace = namespace
        self.constraints = constraints
        self.execution_mode = execution_mode
        self.calls = ToolCallRunner(
            tools,
            emit=self.emit,
            tool_runner=tool_runner,
            default_timeout=default_timeout,
            max_output_chars=max_output_chars,
        )
        self._committed = False
        """The current batch's observations are in the history (set until the next batch)."""
        self._batch = 0
        """Length of the history when the current batch started (part of its journal keys)."""
        self._finished: dict[str, ToolOutcome] = {}
        """Outcomes of the current batch not yet in the state (runs without a journal)."""
        self._edits: set[str] = set()
        """Calls of the current batch that run with a reviewer's corrected arguments."""

    # ------------------------------------------------------------------ tick
    def update_sync(self) -> Status | None:
        sm, keys, ns = self.state_manager, self.keys, self.namespace
        if not sm.get(keys.actions, ns):
            return SUCCESS  # the model answered: nothing to run
        pending: list[Approval] = sm.get(keys.pending_approvals, ns)
        if pending:
            decisions = sm.get(keys.approval_decisions, ns)
            if not any(a.id in decisions for a in pending):
                return RUNNING  # still waiting for a human: no work, no signal
        return None

    async def update_async(self) -> Status:
        sm, keys, ns = self.state_manager, self.keys, self.namespace
        if not self.tools.ready:
            await self.tools.ensure_ready()
        self._committed = False
        actions: list[ToolCall] = list(sm.get(keys.actions, ns))
        done: dict[str, ToolOutcome] = sm.get(keys.tool_results, ns)
        journal = sm.journal if sm.journal is not None and sm.journal.thread_id is not None else None
        self._batch = len(sm.get(keys.messages, ns) or ()) if journal is not None else 0
        if journal is not None:
            replayed = await self._replay(actions, done, journal)
            if replayed:
                sm.update({keys.tool_results: replayed}, ns)
                done = sm.get(keys.tool_results, ns)
        to_run, waiting, refused = self._preflight(actions, done)
        if refused:
            sm.update({keys.tool_results: refused}, ns)
        finished: dict[str, ToolOutcome] = {}
        self._finished = finished
        if journal is not None and to_run:  # one write, durable before the first call can take effect
            # Out of the tick first (this may run eagerly inside it): the write takes along the
            # save due after the tick, and the tree is only whole between ticks.
            await asyncio.sleep(0)
            serial = len(to_run) > 1 and not self._parallel([tool for _, tool in to_run])
            await journal.started(
                [(self._journal_key(call), call.id, call.name) for call, _ in to_run], serial=serial
            )
        if waiting:  # waiting from now on, not once the batch's other calls end: listed, decidable
            self._suspend(waiting)  # (a decision meanwhile is taken when the batch is done)
        await self._execute(to_run, journal)
        if waiting:
            if finished:  # the state must hold them while the run is suspended
                sm.update({keys.tool_results: finished}, ns)
            self._finished = {}
            decisions = sm.get(keys.approval_decisions, ns)
            if any(a.id in decisions for a in waiting):  # decided while the batch ran: its
                return await self.update_async()  # signal found this task busy, so go on now
            return RUNNING
        outcomes: dict[str, ToolOutcome] = sm.get(keys.tool_results, ns)
        self._commit(actions, {**outcomes, **finished} if outcomes else finished)
        return SUCCESS

    def stop(self, new_status: Status) -> None:
        if new_status is INVALID and self.status is RUNNING and not self._committed:
            # Halted mid-batch (run cancelled or abandoned while suspended, a Parallel sibling
            # failed...): answer every call anyway, so the history never holds tool calls
            # without results (the chat API rejects such a history).
            self._commit_unfinished()
        super().stop(new_status)

    def reset_run(self) -> None:
        super().reset_run()
        self._committed = False
        self._batch = 0
        self._finished = {}

    def on_clone(self) -> None:
        """A clone gets its own call runner, emitting as itself (bt._clone)."""
        calls = copy.copy(self.calls)
        calls.emit = self.emit
        self.calls = calls
        self._finished = {}
        self._edits = set()

    # ------------------------------------------------------------------ guard
    def _preflight(
        self, actions: Sequence[ToolCall], done: dict[str, ToolOutcome]
    ) -> tuple[list[tuple[ToolCall, Tool]], list[Approval], dict[str, ToolOutcome]]:
        """Split the calls without an outcome into: run now, wait for approval, refused."""
        sm, keys, ns = self.state_manager, self.keys, self.namespace
        to_run: list[tuple[ToolCall, Tool]] = []
        waiting: list[Approval] = []
        refused: dict[str, ToolOutcome] = {}
        context: GuardContext | None = None
        if self._edits:
            self._edits = set()
        previous: dict[str, Approval] = {}
        decisions: dict[str, ApprovalDecision] = {}
        client = client_tools(sm, keys, ns)
        # Waiting calls exist only where a guard can ask for approvals, or a client runs tools.
        if self.constraints is not None or client is not None:
            if self.constraints is not None:
                context = self._guard_context(len(done))
            pending: list[Approval] = sm.get(keys.pending_approvals, ns)
            previous = {a.id: a for a in pending} if pending else {}
            decisions = sm.get(keys.approval_decisions, ns)
        sent_to_client = False
        for call in actions:
            if call.id in done:
                continue
            if client is not None and call.name in client.names():
                answer = self._client_verdict(call, client, previous, decisions, sent_to_client)
                if isinstance(answer, Approval):
                    sent_to_client = True
                    waiting.append(answer)
                else:
                    refused[call.id] = answer
                continue
            verdict = self._verdict(call, context, previous, decisions)
            if isinstance(verdict, ToolOutcome):
                refused[call.id] = verdict
            elif isinstance(verdict, Approval):
                waiting.append(verdict)
            elif isinstance(verdict, tuple):  # approved with corrected arguments
                to_run.append(verdict)
            else:
                to_run.append((call, verdict))
        return to_run, waiting, refused

    def _verdict(
        self,
        call: ToolCall,
        context: GuardContext | None,
        previous: dict[str, Approval],
        decisions: dict[str, ApprovalDecision],
    ) -> Tool | tuple[ToolCall, Tool] | Approval | ToolOutcome:
        """The tool to run now (with the corrected call when a reviewer edited it), the approval
        to wait for, or the outcome of a refused call."""
        tool = self.tools.get(call.name)
        early = self.calls.precheck(call, tool)
        if early is not None or tool is None:
            return early or self.calls.fail(call, "unknown tool")
        enforcer = self.constraints
        if enforcer is None or context is None:
            return tool
        verdict = enforcer.check(call, tool, context)
        if verdict.decision is Decision.DENY:
            _log.warning("tool call denied", tool=call.name, call_id=call.id, reason=verdict.reason)
            return self.calls.fail(call, f"denied by policy: {verdict.reason}", denied=True)
        if verdict.decision is Decision.PENDING:
            decision = decisions.get(call.id)
            if decision is None:
                return previous.get(call.id) or Approval(
                    id=call.id,
                    tool=call.name,
                    arguments=call.arguments,
                    reason=verdict.reason,
                    policy=verdict.policy,
                    namespace=self.namespace,
                    parameters=tool.parameters,
                )
            self._decided(call, "approval", decision)
            if not decision.approved:
                why = f": {decision.reason}" if decision.reason else ""
                return self.calls.fail(call, f"denied by a human reviewer{why}", denied=True)
            if decision.arguments is not None:
                return self._edited(call, tool, decision.arguments, context)
        enforcer.allowed(call, context)
        context.calls_this_run += 1
        return tool

    def _client_verdict(
        self,
        call: ToolCall,
        client: ClientTools,
        previous: dict[str, Approval],
        decisions: dict[str, ApprovalDecision],
        one_sent: bool,
    ) -> Approval | ToolOutcome:
        """A client tool's call: the wait for the client's result, or the outcome it gave."""
        decision = decisions.get(call.id)
        if decision is None:
            if call.arguments_error is not None:  # the client could not read it either
                return self.calls.fail(call, f"invalid arguments: {call.arguments_error}")
            if one_sent and not client.parallel:
                return self.calls.fail(
                    call,
                    "not sent: this client takes one tool call at a time (parallel_tool_calls is "
                    "false); call it again once the earlier call's result is in",
                )
            spec = next((t for t in client.tools if t.name == call.name), None)
            return previous.get(call.id) or Approval(
                id=call.id,
                tool=call.name,
                arguments=call.arguments,
                reason="a client tool: the client runs it and sends its result",
                namespace=self.namespace,
                parameters=spec.parameters if spec is not None else None,
                kind="client_tool",
            )
        self._decided(call, "client_tool", decision)
        if not decision.approved or decision.output is None:
            why = f": {decision.reason}" if decision.reason else ""
            return self.calls.fail(call, f"the client did not run this call{why}", denied=True)
        return ToolOutcome(content=self.calls.truncate(decision.output))

    def _decided(self, call: ToolCall, kind: str, decision: ApprovalDecision) -> None:
        """The run takes a waiting call's answer: `interruption.decided` (every kind's event;
        the deprecated `approval.resolved` goes out beside it, from the same place)."""
        answer = decision.model_dump(mode="json")
        interruption_events.decided(
            self.emit, id=call.id, kind=kind, tool_call=(call.name, call.id), answer=answer
        )

    def _edited(
        self, call: ToolCall, tool: Tool, arguments: dict[str, Any], context: GuardContext
    ) -> tuple[ToolCall, Tool] | ToolOutcome:
        """A call a reviewer approved with corrected arguments: the tool's validation and the
        guard see the corrected call as if the model had made it (a rule that denies it still
        denies it; its approval is the reviewer's), then it runs with them."""
        edited = call.model_copy(update={"arguments": arguments, "raw_arguments": None})
        try:
            tool.validate_arguments(arguments)
        except ToolArgumentsError as exc:
            return self.calls.fail(call, f"the arguments a human reviewer approved are invalid: {exc}")
        enforcer = self.constraints
        assert enforcer is not None  # only a guard asks for approvals
        verdict = enforcer.check(edited, tool, context)
        if verdict.decision is Decision.DENY:
            return self.calls.fail(call, f"denied by policy: {verdict.reason}", denied=True)
        enforcer.allowed(edited, context)
        context.calls_this_run += 1
        self._edits.add(call.id)
        return edited, tool

    def _guard_context(self, finished_in_batch: int) -> GuardContext:
        sm, keys, ns = self.state_manager, self.keys, self.namespace
        counts: dict[str, int] = sm.get(keys.call_counts, ns) or {}
        return GuardContext(
            state=sm.state,
            namespace=ns,
            tool_effects=list(sm.get(keys.tool_effects, ns) or ()),
            calls_this_run=sum(counts.values()) + finished_in_batch,
            round=sm.get(keys.rounds, ns) or 0,
        )

    def _suspend(self, waiting: list[Approval]) -> None:
        sm, keys, ns = self.state_manager, self.keys, self.namespace
        known = {a.id for a in sm.get(keys.pending_approvals, ns)}
        sm.set(keys.pending_approvals, waiting, ns)
        for approval in waiting:
            if approval.id not in known:
                interruption_events.requested(
                    self.emit,
                    id=approval.id,
                    kind=approval.kind,
                    tool_call=(approval.tool, approval.id),
                    request=approval.model_dump(mode="json"),
                )

    # ------------------------------------------------------------------ journal
    def _journal_key(self, call: ToolCall) -> str:
        """Identifies a call within its thread (`open_calls.journal_key`)."""
        return journal_key(self.namespace, self._batch, call)

    async def _replay(
        self, actions: Sequence[ToolCall], done: dict[str, ToolOutcome], journal: ToolJournal
    ) -> dict[str, ToolOutcome]:
        """Outcomes the journal already holds for calls of this batch (a crash came between)."""
        entries = dict(journal.entries())  # as found: the replay below adds outcomes to the journal
        if not entries:
            return {}
        replayed: dict[str, ToolOutcome] = {}
        for call in actions:
            entry = entries.get(self._journal_key(call)) if call.id not in done else None
            if entry is None:
                continue
            if entry.status == "finished" and entry.outcome is not None:
                replayed[call.id] = ToolOutcome.model_validate(entry.outcome)
                continue
            tool = self.tools.get(call.name)
            if (tool is not None and tool.idempotent) or never_began(entry, entries):
                continue  # safe to run (again)
            outcome = self.calls.fail(call, OUTCOME_UNKNOWN)
            await journal.finished(entry.key, outcome.model_dump(mode="json"))
            replayed[call.id] = outcome
        return replayed

    # ------------------------------------------------------------------ execution
    async def _execute(self, to_run: list[tuple[ToolCall, Tool]], journal: ToolJournal | None) -> None:
        budget: TokenBudget | None = None
        limit = self.max_budget_tokens
        if limit is not None:  # one budget for the batch's calls: what the run spent so far
            usage = self.state_manager.get(self.keys.usage, self.namespace)
            budget = TokenBudget(limit, usage.total_tokens if usage is not None else 0)
        if len(to_run) == 1:  # the usual batch: nothing to decide
            call, tool = to_run[0]
            await self._run_and_record(call, tool, journal, budget)
            return
        if not to_run:
            return
        if self._parallel([tool for _, tool in to_run]):
            await asyncio.gather(*(self._run_and_record(c, t, journal, budget) for c, t in to_run))
        else:
            for call, tool in to_run:
                await self._run_and_record(call, tool, journal, budget)

    async def _run_and_record(
        self, call: ToolCall, tool: Tool, journal: ToolJournal | None, budget: TokenBudget | None
    ) -> None:
        key = self._journal_key(call) if journal is not None else ""
        context = construct(
            ToolCallContext,
            {
                "call_id": call.id,
                "tool": call.name,
                "idempotency_key": f"{journal.thread_id}/{key}" if journal is not None else call.id,
                "final_answer": None,
                "artifacts": [],
                "usage": None,
                "budget": budget,
                "emit": self.emit,
            },
        )
        token = set_current_tool_call(context)
        try:
            outcome = await self.calls.run(call, tool)
        finally:
            reset_current_tool_call(token)
        if self._edits and call.id in self._edits:  # the model must know what actually ran
            edited = json.dumps(call.arguments, ensure_ascii=False, default=str)
            note = f"[a human reviewer approved this call with corrected arguments: {edited}]"
            outcome = outcome.model_copy(update={"content": f"{note}\n{outcome.content}"})
        if context.final_answer is not None and not outcome.failed:  # the tool called finish()
            outcome = outcome.model_copy(update={"final_answer": context.final_answer})
        if context.artifacts and not outcome.failed:  # kept out of the observation (tools._artifact)
            outcome = outcome.model_copy(update={"artifacts": context.artifacts})
        if context.usage is not None:  # spent even when the call failed afterwards
            outcome = outcome.model_copy(update={"usage": context.usage})
        if journal is not None:
            await journal.finished(key, outcome.model_dump(mode="json"))
            self.state_manager.update({self.keys.tool_results: {call.id: outcome}}, self.namespace)
        else:
            # Without a journal nothing can restore this batch: the outcome waits in the batch's
            # own dict and reaches the state only if the batch suspends (see update_async).
            self._finished[call.id] = outcome

    def _parallel(self, tools: Sequence[Tool]) -> bool:
        if len(tools) < 2 or self.execution_mode == "serial":
            return False
        return self.execution_mode == "parallel" or all(t.parallel_safe for t in tools)

    # ------------------------------------------------------------------ results
    def _commit(self, actions: Sequence[ToolCall], outcomes: dict[str, ToolOutcome]) -> None:
        """Append one observation per call (in call order), record effects, repeats and the
        count of failed calls in a row, and clear the batch's bookkeeping."""
        sm, keys, ns = self.state_manager, self.keys, self.namespace
        counts: dict[str, int] = sm.get(keys.call_counts, ns)  # updated in place: no per-batch copy
        messages: list[Message] = []
        known_effects: set[str] | None = None  # read only when a call reports effects
        new_effects: list[str] = []
        final: str | None = None
        artifacts: list[tuple[ToolCall, Artifact]] = []
        spent: Usage | None = None  # model tokens the calls spent themselves (MCP sampling)
        # Failed calls in a row; a batch whose calls all failed counts once (the model saw none
        # of those errors before making them).
        failed = True
        for call in actions:
            outcome = outcomes[call.id]
            if final is None:
                final = outcome.final_answer
            if outcome.artifacts:
                artifacts.extend((call, artifact) for artifact in outcome.artifacts)
            if outcome.usage is not None:
                spent = outcome.usage if spent is None else spent + outcome.usage
            if not outcome.failed:
                failed = False
            content = outcome.content
            signature = call_signature(call)
            seen = counts.get(signature, 0)
            counts[signature] = seen + 1
            if seen:
                content += (
                    f"\n\n[note: you already made this exact call {seen} time(s) in this run; "
                    "do not repeat it: use the earlier result, change the arguments, or answer]"
                )
            messages.append(
                construct(
                    Message,
                    {
                        "role": "tool",
                        "content": content,
                        "tool_calls": None,
                        "tool_call_id": call.id,
                        "name": call.name,
                        "reasoning_content": None,
                        "id": None,
                    },
                )
            )
            if outcome.effect_tags:
                if known_effects is None:
                    known_effects = set(sm.get(keys.tool_effects, ns) or ())
                for tag in outcome.effect_tags:
                    if tag not in known_effects:
                        known_effects.add(tag)
                        new_effects.append(tag)
        failures = (sm.get(keys.tool_failures, ns) or 0) + 1 if failed else 0
        updates: dict[str, Any] = {
            keys.messages: messages,
            keys.call_counts: counts,
            keys.tool_failures: failures,
        }
        if new_effects:
            updates[keys.tool_effects] = [*sm.get(keys.tool_effects, ns), *new_effects]
        if final is not None:  # a tool ended the loop (state contract: the executor writes these)
            updates[keys.done] = True
            updates[keys.final_answer] = final
        if artifacts:
            updates[keys.artifacts] = [artifact for _, artifact in artifacts]
        if spent is not None:  # the usage reducer adds it to the run's (budget included)
            updates[keys.usage] = spent
        sm.update(updates, ns)
        for call, artifact in artifacts:
            self.emit(ev.ArtifactProduced, tool=call.name, call_id=call.id, artifact=artifact.model_dump())
        sm.clear((keys.tool_results, keys.approval_decisions, keys.pending_approvals), ns)
        self._committed = True

    def _commit_unfinished(self) -> None:
        sm, keys, ns = self.state_manager, self.keys, self.namespace
        actions: list[ToolCall] = list(sm.get(keys.actions, ns) or ())
        if not actions:
            return
        outcomes = {**sm.get(keys.tool_results, ns), **self._finished}
        self._finished = {}
        waiting = {a.id: a for a in sm.get(keys.pending_approvals, ns)}
        for call in actions:
            if call.id in outcomes:
                continue
            if call.id in waiting and waiting[call.id].kind == "client_tool":
                text = NO_CLIENT_RESULT  # the rule of nodes._open_calls
            else:
                text = NOT_RUN_WAITING if call.id in waiting else INTERRUPTED
            outcomes[call.id] = ToolOutcome(content=text, failed=True)
        self._commit(actions, outcomes)
