"""Runs served over HTTP: each run's event log, its agent, and the approvals it waits for.

A run is an asyncio task owned by the registry, never by a request: a client that disconnects
stops reading, the run goes on. Every message a run publishes is kept in its log, so a client
that connects late replays the log (from `Last-Event-ID`) and then follows the live tail.
Each conversation (`thread_id`) has its own agent, built by the app's agent factory, kept so a
follow-up continues the conversation (with a checkpoint store, `Agent.run(thread_id=...)`
continues a conversation an earlier server saved, like any other caller). Memory stays bounded:
finished runs are evicted after a time to live and beyond a maximum count (`Retention`), a
conversation with its last run; a run in progress or suspended never is.

Approvals have one truth. An approval is named by its id (the tool call's id, as in the agent's
state, the checkpoint store and `jianmu-like approvals`) within its conversation (`thread_id`).
Every decision goes through one function (`RunRegistry._apply`), whoever made it: over the API
(stored first, atomically, when the agent has a store) or by an operator writing into the
server's store (`jianmu-like approvals approve|deny`; the registry watches the store while runs
wait on it, see `watch`). An approval is decided once: the second decider gets "already decided"
(409) and the run goes on with the first decision.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from .._base.redact import redact
from .._run.protocol import AgentLike
from .._run.result import AgentResult
from .._run.review import (
    PendingApproval,
    ThreadSuspendedError,
    refuse_fresh_run,
    stored_decisions,
)
from ..checkpoint._contract import WatchableCheckpointer
from ..checkpoint._recorder import fetch_version
from ..checkpoint._store import Checkpointer, CheckpointError
from ..errors import JianmuError
from ..guard._approvals import AlreadyDecided, ApprovalDecision, ApprovalError, InvalidEdit, verdict
from ..models._messages import Message, human
from ._run_record import (
    NotFound,
    Retention,
    RunConflict,
    RunRecord,
    all_decided,
)
from ._stored_threads import StoredThreads
from ._watch import DecisionWatch, log

AgentFactory = Callable[[], AgentLike]
"""Builds the agent of a new conversation: an `Agent`, or a `Conversation` of a template."""
_API_HINT = (
    "decide them first (POST /api/approvals/{id}; the run resumes by itself), or run on another thread"
)


class RunRegistry:
    """Every run and conversation of one server."""

    def __init__(
        self,
        agent_factory: AgentFactory,
        *,
        max_ticks: int = 100_000,
        retention: Retention | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.agent_factory = agent_factory
        self.max_ticks = max_ticks
        self.runs: dict[str, RunRecord] = {}
        self.threads: dict[str, AgentLike] = {}
        self.active: dict[str, RunRecord] = {}
        """The unfinished run of each busy thread."""
        self.retention = retention if retention is not None else Retention()
        self.clock = clock
        self._finished: OrderedDict[str, float] = OrderedDict()
        """Finished runs still kept (run id -> when it finished), oldest first."""
        self._latest: dict[str, str] = {}
        """Each conversation's latest run: evicting that run evicts the idle conversation."""
        self._evicted: OrderedDict[str, str] = OrderedDict()
        """Recently evicted run and conversation ids (`thread:<id>`) -> why."""
        self._closing: set[asyncio.Task[None]] = set()
        self._watches: dict[int, DecisionWatch] = {}
        """The stores watched for outside decisions (by `id(store)`), while runs wait on them."""
        self.stored = StoredThreads(self)
        """The threads the store holds suspended that no run here holds (an earlier server
        left them), offered to list and decide."""

    def get(self, run_id: str) -> RunRecord:
        self.evict()
        try:
            return self.runs[run_id]
        except KeyError:
            why = self._evicted.get(run_id)
            if why is not None:
                raise NotFound(f"run {run_id!r} was evicted ({why}; {self.retention.describe()})") from None
            raise NotFound(f"no run {run_id!r}") from None

    def start(
        self,
        question: str,
        thread_id: str | None = None,
        *,
        history: Sequence[Message] = (),
        from_checkpoint: int | None = None,
        inputs: Mapping[str, Any] | None = None,
        check: Callable[[AgentLike], None] | None = None,
    ) -> RunRecord:
        """Start a run as a task; `thread_id` continues that conversation (or names a new one).
        `history` (messages before the question) starts a new conversation; a conversation the
        server (or its store) already holds has its own, and `history` is not used.
        `from_checkpoint` continues the thread's version of that `seq` instead of its newest (a
        fork, `Agent.run(from_checkpoint=)`): a RunConflict without a checkpoint store, NotFound
        for a version the store does not keep, both before anything runs. `inputs` are more run
        inputs (the agent must take them: `check(agent)` says so, raising a JianmuError to refuse
        the run before anything runs)."""
        if thread_id is not None and thread_id in self.active:
            busy = self.active[thread_id]
            if busy.status == "suspended" and busy.result is not None:
                waiting = [
                    PendingApproval(thread_id=thread_id, approval=a, decision=busy.decisions.get(a.id))
                    for a in busy.result.pending_approvals
                ]
                raise RunConflict(str(ThreadSuspendedError(thread_id, waiting, hint=_API_HINT)))
            raise RunConflict(
                f"thread {thread_id!r} is busy with run {busy.run_id!r} ({busy.status}); "
                "wait for it to finish, or send a follow-up with POST /api/runs/{run_id}/inject"
            )
        self.evict()
        tid = thread_id or secrets.token_hex(8)
        agent = self.threads.get(tid)
        fresh = agent is None
        restored = False
        if agent is None:
            agent = self.agent_factory()
        if check is not None:
            try:
                check(agent)
            except JianmuError:
                if fresh:
                    self._close_later(agent)
                raise
        if thread_id is not None:
            self._refuse_suspended(agent, thread_id, close=fresh)
            if from_checkpoint is not None:
                self._check_fork(agent, thread_id, from_checkpoint, close=fresh)
        if fresh:
            if thread_id is not None:  # a store's thread is continued by `run` itself
                store = agent.checkpointer
                restored = store is not None and store.load(thread_id) is not None
                self._refuse_lost_conversation(agent, thread_id)
            self.threads[tid] = agent
        record = RunRecord(secrets.token_hex(8), tid, agent, question)
        self.runs[record.run_id] = record
        self.active[tid] = record
        self._latest[tid] = record.run_id
        earlier = list(history) if fresh and not restored else []
        offered: dict[str, Any] = {"task": question, "messages": [*earlier, human(question)]}
        data = {key: value for key, value in offered.items() if agent.accepts(key)}
        data.update(inputs or {})
        if not data:
            raise RunConflict("this agent reads neither `task` nor `messages`: it cannot take a question")
        self._launch(
            record,
            lambda: agent.run(data, max_ticks=self.max_ticks, thread_id=tid, from_checkpoint=from_checkpoint),
        )
        return record

    def adopt(
        self,
        thread_id: str,
        agent: AgentLike,
        decided: Mapping[str, ApprovalDecision],
        decisions: dict[str, ApprovalDecision] | None = None,
    ) -> RunRecord:
        """Resume a thread its store holds suspended as a new run of this registry (`decided`:
        what it was decided with, so a second decision is "already decided"); the resume claims
        the thread, so two servers on one store never drive it twice."""
        self.threads[thread_id] = agent
        record = RunRecord(secrets.token_hex(8), thread_id, agent, "")
        self.runs[record.run_id] = record
        self.active[thread_id] = record
        self._latest[thread_id] = record.run_id
        record.decided.update(decided)
        self._launch(
            record,
            lambda: agent.resume(decisions, thread_id=thread_id, max_ticks=self.max_ticks),
        )
        return record

    def decide_anywhere(
        self, approval_id: str, decision: ApprovalDecision, thread_id: str | None = None
    ) -> RunRecord | None:
        """Decide over HTTP: an interruption a run here waits for (`decide`), else one a thread
        of the store waits for (`StoredThreads.decide`: None while that thread still waits for others).
        NotFound names what the runs here wait for."""
        try:
            return self.decide(
                approval_id,
                decision.approved,
                decision.reason,
                thread_id,
                arguments=decision.arguments,
                output=decision.output,
            )
        except NotFound as missing:
            try:
                return self.stored.decide(approval_id, decision, thread_id)
            except NotFound:
                raise missing from None

    def _check_fork(self, agent: AgentLike, thread_id: str, seq: int, *, close: bool) -> None:
        """A fork needs the store to keep version `seq` of the thread (refused before the run)."""
        store = agent.checkpointer
        refusal: JianmuError | None = None
        if store is None:
            refusal = RunConflict(
                "from_checkpoint continues a saved version, and this server keeps no checkpoint "
                "store: serve with --checkpoint STORE"
            )
        else:
            try:
                fetch_version(store, thread_id, seq)
            except CheckpointError as exc:
                refusal = NotFound(str(exc))
        if refusal is not None:
            if close:
                self._close_later(agent)
            raise refusal

    def replay(
        self, agent: AgentLike, name: str, play: Callable[[RunRecord], Awaitable[AgentResult]]
    ) -> RunRecord:
        """Serve `play(record)`, the replay of recording `name` on `agent` (`server._recordings`),
        as a run of its own: followed, listed and read like any run, in a thread of its own that
        nothing continues (no follow-up, no decision reaches it); `agent` is closed at its end."""
        self.evict()
        run_id = secrets.token_hex(8)
        record = RunRecord(run_id, f"replay-{run_id}", agent, f"replay of {name}")
        record.replay = name
        self.runs[run_id] = record

        async def start() -> AgentResult:
            try:
                return await play(record)
            finally:
                self._close_later(agent)

        self._launch(record, start)
        return record

    def _launch(self, record: RunRecord, start: Callable[[], Awaitable[AgentResult]]) -> None:
        async def body() -> None:
            try:
                await record.drive(start)
            finally:
                if record.finished:
                    self.active.pop(record.thread_id, None)
                    self._finished[record.run_id] = self.clock()
                    self.evict()
                elif record.status == "suspended":
                    record.suspended_at = self.clock()
                    self._watch(record)

        record.task = asyncio.create_task(body(), name=f"run-{record.run_id}")

    def inject(self, run_id: str, content: str) -> RunRecord:
        """Queue a follow-up for the run's next iteration boundary (`Agent.inject`; its `inject`
        events reach the stream as queued, applied or dropped)."""
        record = self.get(run_id)
        finished = RunConflict(
            f"run {run_id!r} has finished ({record.status}); continue the conversation with "
            f'POST /api/runs {{"input": ..., "thread_id": "{record.thread_id}"}}'
        )
        if record.finished:
            raise finished
        if record.replay is not None:  # it would make the replay differ from its recording
            raise RunConflict(f"run {run_id!r} replays recording {record.replay!r}: it takes no follow-ups")
        try:
            record.agent.inject(content)
        except CheckpointError as exc:  # the store refused to keep it (resumed elsewhere since)
            raise RunConflict(f"run {run_id!r}: {exc}") from exc
        except RuntimeError as exc:  # ended between the check and the call
            raise finished from exc
        except ValueError as exc:
            raise RunConflict(f"run {run_id!r} takes no follow-ups: {exc}") from exc
        return record

    def cancel(self, run_id: str) -> RunRecord:
        """Cancel a running run (`RunRecord.cancel`); a finished one, or one waiting for
        approvals (deny them to end it), is a RunConflict saying so."""
        record = self.get(run_id)
        if record.finished:
            raise RunConflict(f"run {run_id!r} has already finished ({record.status})")
        if record.status == "suspended":
            ids = ", ".join(record.waiting()) or "none"
            raise RunConflict(
                f"run {run_id!r} is not running: it waits for approvals ({ids}); deny them to end it "
                '(POST /api/approvals/{id} {"decision": "deny", "reason": ...})'
            )
        record.cancel()
        return record

    def listing(self, status: str | None = None, thread_id: str | None = None) -> list[dict[str, Any]]:
        """The summaries of the runs kept, oldest first, of `status` and `thread_id` if given."""
        self.evict()
        return [
            record.summary()
            for record in self.runs.values()
            if (status is None or record.status == status)
            and (thread_id is None or record.thread_id == thread_id)
        ]

    def approvals(self) -> list[dict[str, Any]]:
        """What waits for a human (a client tool's call waits for its client, which answers it
        with its next request: not listed)."""
        held = [item for record in self.runs.values() for item in record.pending()]
        stored = [
            {
                "id": p.approval.id,
                "run_id": None,  # no run yet: deciding it resumes the thread as a new run
                "thread_id": p.thread_id,
                "call_id": p.approval.id,
                "tool": p.approval.tool,
                "arguments": redact(p.approval.arguments),
                "reason": p.approval.reason,
                "policy": p.approval.policy,
                "decided": p.decision is not None,
                "kind": p.approval.kind,
            }
            for p in self.stored.pending()
        ]
        return [item for item in held + stored if item["kind"] != "client_tool"]

    def decide(
        self,
        approval_id: str,
        approved: bool,
        reason: str,
        thread_id: str | None = None,
        *,
        arguments: dict[str, Any] | None = None,
        output: str | None = None,
    ) -> RunRecord:
        """Decide an approval over the API (`output`: a client tool call's result). With a store
        the decision is stored first (one atomic row): if an operator decided first, theirs
        stands, reaches the run, and this is a RunConflict saying "already decided". Corrected
        `arguments` that do not match the tool's schema are `InvalidEdit`, and nothing is
        recorded."""
        record, call_id = self._locate(approval_id, thread_id)
        decision = ApprovalDecision(approved=approved, reason=reason, arguments=arguments, output=output)
        try:
            record.agent.decide(call_id, decision)
        except InvalidEdit:
            raise
        except AlreadyDecided as exc:
            self._sync(record)  # the first decision (made elsewhere) goes on with the run
            raise RunConflict(str(exc), decision=verdict(exc.decision), thread_id=record.thread_id) from exc
        except ApprovalError as exc:
            raise RunConflict(str(exc)) from exc
        self._apply(record, call_id, decision, by="api")
        return record

    def _locate(self, approval_id: str, thread_id: str | None) -> tuple[RunRecord, str]:
        """The run waiting for `approval_id` (in `thread_id`, if given). The legacy form
        `<run_id>.<approval id>` is accepted too. A decided one is a RunConflict."""
        records = [r for r in self.runs.values() if thread_id is None or r.thread_id == thread_id]
        found = [r for r in records if approval_id in r.waiting()]
        run_id, dot, call_id = approval_id.partition(".")
        legacy = self.runs.get(run_id) if dot and not found else None
        if legacy is not None and legacy in records:
            records, approval_id = [legacy], call_id
            found = [legacy] if call_id in legacy.waiting() else []
        if len(found) > 1:
            threads = ", ".join(sorted(r.thread_id for r in found))
            raise RunConflict(
                f"approval {approval_id!r} is pending in several conversations ({threads}); "
                'name one: {"decision": ..., "thread_id": ...}'
            )
        if found:
            return found[0], approval_id
        for record in reversed(records):
            earlier = record.decided.get(approval_id)
            if earlier is not None:
                done = AlreadyDecided(approval_id, earlier, record.thread_id)
                raise RunConflict(str(done), decision=verdict(earlier), thread_id=record.thread_id)
        known = ", ".join(f"{item['id']} (thread {item['thread_id']})" for item in self.approvals()) or "none"
        where = f" in thread {thread_id!r}" if thread_id is not None else ""
        raise NotFound(f"no pending approval {approval_id!r}{where} (pending: {known})")

    def _apply(self, record: RunRecord, call_id: str, decision: ApprovalDecision, *, by: str) -> None:
        """Give a suspended run one decision, whoever made it (`by`: "api", or "store" for an
        operator's decision found in the store); once each pending call is decided, resume it.
        The agent finds the decision in its state (API) or in its store (`resume()` merges it)."""
        items = {item["call_id"]: item for item in record.pending()}
        edited = None if decision.arguments is None else redact(decision.arguments)
        record.decisions[call_id] = decision
        record.decided[call_id] = decision
        record.publish(
            "approval",
            {
                "status": "decided",
                "approvals": [
                    {
                        **items[call_id],
                        "decided": True,
                        "decision": "approve" if decision.approved else "deny",
                        "decision_reason": decision.reason,
                        "decision_arguments": edited,
                        "decided_by": by,
                    }
                ],
                "interruptions": [
                    {
                        "id": call_id,
                        "kind": items[call_id].get("kind", "approval"),
                        "state": "decided",
                        "answer": {
                            "decision": "approve" if decision.approved else "deny",
                            "reason": decision.reason,
                            "arguments": edited,
                        },
                        "decided_by": by,
                    }
                ],
            },
        )
        if record.status == "suspended" and all_decided(items, record.decisions):  # a running one
            agent = record.agent  # takes its decision itself (a parallel sibling still works)
            record.status = "running"
            self._launch(record, lambda: agent.resume(max_ticks=self.max_ticks))
            self._unwatch_idle()

    def _sync(self, record: RunRecord) -> None:
        """Apply the decisions stored for a suspended run that it has not taken yet."""
        store = record.store
        if store is None or record.status != "suspended" or record.result is None:
            return
        pending = record.result.pending_approvals
        try:
            stored = stored_decisions(store, record.thread_id, pending)
        except CheckpointError as exc:
            log.warning("cannot read decisions", thread_id=record.thread_id, error=str(exc))
            return
        for approval in pending:
            decision = stored.get(approval.id)
            if decision is not None and approval.id in record.waiting():
                self._apply(record, approval.id, decision, by="store")

    def _watch(self, record: RunRecord) -> None:
        """A run just suspended: take what its store already holds, and watch the store."""
        store = record.store
        if isinstance(store, WatchableCheckpointer):
            watch = self._watches.get(id(store))
            if watch is None:
                watch = self._watches[id(store)] = DecisionWatch(store, lambda tid: self._check(store, tid))
            watch.start()
        self._sync(record)

    def _check(self, store: Checkpointer, thread_id: str | None) -> None:
        """The store changed (for `thread_id`, or any thread): sync the runs waiting on it."""
        for record in list(self.runs.values()):
            if record.store is store and (thread_id is None or record.thread_id == thread_id):
                self._sync(record)
        self._unwatch_idle()

    def _unwatch_idle(self) -> None:
        """Stop watching stores no run waits on any more."""
        waiting = {id(r.store) for r in self.runs.values() if r.status == "suspended"}
        for key in [key for key in self._watches if key not in waiting]:
            self._watches.pop(key).stop()

    def _refuse_suspended(self, agent: AgentLike, thread_id: str, *, close: bool) -> None:
        """A new run on a thread its store holds suspended (by an earlier server, or a command
        line run) would discard the approvals it waits for: a RunConflict naming them."""
        store = agent.checkpointer
        if store is None:
            return
        try:
            refuse_fresh_run(store, store.load(thread_id), keys=agent.keys)
        except CheckpointError as exc:
            if close:
                self._close_later(agent)
            raise RunConflict(str(exc)) from exc

    async def aclose(self) -> None:
        """Cancel unfinished runs and close every agent (tool providers, stores)."""
        for watch in self._watches.values():
            await watch.aclose()
        self._watches.clear()
        tasks = [r.task for r in self.runs.values() if r.task is not None and not r.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*self._closing, return_exceptions=True)
        for agent in self.threads.values():
            await agent.aclose()

    # ------------------------------------------------------------------ retention
    def evict(self) -> None:
        """Drop the finished runs past their time to live or beyond the maximum count, oldest
        first, and each conversation whose latest run goes with them (unless it is busy). A run
        that waits only for a client's tool results (OpenAI client tools) for longer than the
        time to live ends first, as a failure: a client that never answers holds nothing forever."""
        self._expire_client_waits()
        retention, finished = self.retention, self._finished
        deadline = self.clock() - retention.ttl if retention.ttl is not None else None
        while finished:
            run_id, ended = next(iter(finished.items()))
            if retention.max_runs is not None and len(finished) > retention.max_runs:
                why = f"more than {retention.max_runs} runs finished after it"
            elif deadline is not None and ended <= deadline:
                why = f"it finished more than {retention.ttl:g} s ago"
            else:
                break
            del finished[run_id]
            self._drop(run_id, why)

    def _expire_client_waits(self) -> None:
        ttl = self.retention.ttl
        if ttl is None:
            return
        now = self.clock()
        expired = False
        for record in list(self.active.values()):
            since = record.suspended_at
            if since is None or now - since < ttl or not record.waits_for_client():
                continue
            expired = True
            record.expire(
                f"the client never sent the results of its tool calls ({', '.join(record.waiting())}) "
                f"within {ttl:g} s"
            )
            self.active.pop(record.thread_id, None)
            self._finished[record.run_id] = now
        if expired:
            self._unwatch_idle()

    def _drop(self, run_id: str, why: str) -> None:
        record = self.runs.pop(run_id, None)
        self._remember(run_id, why)
        if record is None:
            return
        tid = record.thread_id
        if self._latest.get(tid) != run_id or tid in self.active:
            return
        del self._latest[tid]
        agent = self.threads.pop(tid, None)
        self._remember(f"thread:{tid}", f"its last run {run_id!r} was evicted: {why}")
        if agent is not None:
            self._close_later(agent)

    def _close_later(self, agent: AgentLike) -> None:
        task = asyncio.get_running_loop().create_task(agent.aclose())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def _remember(self, key: str, why: str) -> None:
        evicted = self._evicted
        evicted[key] = why
        while len(evicted) > self.retention.remembered:
            evicted.popitem(last=False)

    def _refuse_lost_conversation(self, agent: AgentLike, thread_id: str) -> None:
        """A follow-up to an evicted conversation that no checkpoint store kept is refused: it
        would silently start over without its history."""
        why = self._evicted.get(f"thread:{thread_id}")
        if why is None or agent.checkpointer is not None:
            return
        self._close_later(agent)
        raise NotFound(
            f"conversation {thread_id!r} was evicted ({why}; {self.retention.describe()}) and no "
            "checkpoint store kept it; start a new conversation (omit thread_id), or serve with "
            "--checkpoint to keep conversations across evictions"
        )
