"""`RunCore`: one run of a tree to an answer, the same for an `Agent` and a `Conversation`.

The core holds everything a run needs besides the tree: the state manager and its threads, the
telemetry hub, the follow-ups (`Interrupts`), the approvals, the checkpoint recorder and the
building of the result. Where the tree comes from is its `TreeSource` (`trees`): an Agent's own
tree, or one a Conversation borrows per run. So every input rule (`accepts`, routing,
`InputError`), every thread rule and every approval rule is written once, here, and both public
classes forward to it.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Mapping
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import Any

import py_trees
from py_trees.common import Status
from pydantic import BaseModel

from .._base.config import RecordingRetention, get_config
from ..bt._runner import ReactiveRunner
from ..checkpoint._contract import AsyncCheckpointer, ClosableCheckpointer, Durability, ThreadConflictError
from ..checkpoint._history import CheckpointInfo
from ..checkpoint._recorder import RunRecorder
from ..checkpoint._store import Checkpoint, Checkpointer, CheckpointError
from ..guard._approvals import Approval
from ..guard._interruptions import Interruption, from_approval, from_question
from ..models._keys import StateKeys
from ..nodes._results import ResultReader, reading
from ..state._contract import check_contract
from ..state._inputs import InputError, TreeInputs
from ..state._journal import JournalEntry
from ..state._manager import StateManager
from ..state._schema import schema_spec
from ..telemetry import events as ev
from ..telemetry._hub import TelemetryHub, structlog_sink
from ..telemetry.events import AnyEvent
from ..tools._run_context import RunContext, enter_run, leave_run
from .approvals import Approvals
from .breakpoints import Breakpoints
from .errors import ConversationError
from .interruptions import Interruptions
from .interrupts import Interrupts
from .open_calls import repair_open_calls
from .recording import RunRecording, flush_every_tick
from .result import AgentResult, build_result
from .review import pending_of_thread, refuse_fresh_run, stored_questions
from .substitutions import Substitutions
from .thread_recordings import ThreadRecording, retention_of
from .threads import Threads, needs_store, version_number
from .trees import TreeSource


def random_run_id() -> str:
    """A fresh run id: 12 hex digits (`secrets.token_hex(6)` without its wrappers)."""
    return os.urandom(6).hex()


RecordOp = Callable[[RunRecording, str], None]
"""Writes what the caller did (a run with its input, a resume with its decisions) under a run id."""


def read_tree(
    root: py_trees.behaviour.Behaviour, state_schema: type[BaseModel] | None, keys: StateKeys | None
) -> ResultReader:
    """How runs of `root` are read (`results.reading`: the preset's schema and keys unless
    given), checked now: a schema that cannot hold the tree's keys fails here. The tree's inputs
    are read now too, from the tree as built (cached on it, shared by its clones)."""
    read = reading(root, state_schema, keys)
    check_contract(read.state_schema, root, hint=read.schema_hint)
    TreeInputs.of(root, schema_spec(read.state_schema))
    return read


def default_namespace(root: py_trees.behaviour.Behaviour, namespace: str | None) -> str | None:
    """The namespace input goes to: the one given, else the root's (a namespaced ReAct root)."""
    return namespace if namespace is not None else getattr(root, "namespace", None)


def logs_events(log_events: bool | None) -> bool:
    """Whether a hub logs its events (None: when the configured log level is DEBUG or INFO)."""
    if log_events is None:
        return get_config().logging.level.upper() in ("DEBUG", "INFO")
    return log_events


def make_hub(telemetry: TelemetryHub | None, log_events: bool) -> TelemetryHub:
    hub = telemetry or TelemetryHub()
    if log_events:
        hub.subscribe(structlog_sink())
    return hub


class RunCore:
    """Runs of one state over trees from `trees` (see the module). The facades' docstrings
    (`Agent.run`, ...) describe each operation; the core does it."""

    def __init__(
        self,
        trees: TreeSource,
        state_schema: type[BaseModel],
        keys: StateKeys,
        *,
        telemetry: TelemetryHub,
        initial_state: BaseModel | Mapping[str, Any] | None = None,
        namespace: str | None = None,
        output_namespace: str | None = None,
        inputs: Iterable[str] = (),
        thread_id: str | None = None,
        source: str | None = None,
        conversation: bool = False,
        durability: Durability | None = None,
    ) -> None:
        """`conversation`: the core of a `Conversation`, bound to its current thread (`run()`
        without a `thread_id` continues it, not the default thread) and without a checkpointer
        (its suspended run lives in memory, on whichever pooled tree the resume borrows)."""
        if isinstance(initial_state, BaseModel) and not isinstance(initial_state, state_schema):
            initial_state = dict(initial_state)  # the user's schema's instance, completed
        self.trees = trees
        self.keys = keys
        self.state_manager = sm = StateManager(state_schema, initial_state)
        self.threads = Threads(sm, initial_state, current=thread_id)
        self.namespace = namespace
        self.output_namespace = output_namespace if output_namespace is not None else namespace
        self.inputs = tuple(inputs)
        self.telemetry = telemetry
        self.source = source
        self.conversation = conversation
        self.durability = durability
        self.interrupts = Interrupts(telemetry, namespace=namespace, node=trees.tree.name)
        self.approvals = Approvals(sm, keys)
        self.interruptions = Interruptions(self.approvals, trees.toolsets)  # no cycle back to self
        self.breakpoints = Breakpoints(sm, keys, telemetry, trees.tree)
        """Where runs pause before a node ticks (`_run.breakpoints`); none by default."""
        self.substitutions = Substitutions(trees.tree, telemetry)
        """Nodes forced and tool outputs scripted (`_run.substitutions`); none by default."""
        self.recorder: RunRecorder | None = None
        self.recording: RunRecording | None = None
        """Where every run and resume is recorded (`Agent(record=...)`; None: not recorded)."""
        self.keep_recordings: RecordingRetention | bool | None = None
        """Keep each run of a thread as a recording in the store (`Agent(keep_recordings=...)`;
        None: as the configuration's `checkpoints.recordings` says)."""
        self.new_run_id: Callable[[], str] = random_run_id
        """Where run ids come from (replay gives the recorded ones back)."""
        self._repaired: list[dict[str, Any]] = []
        """Tool calls the current run's thread had left without results, answered at its start
        (`open_calls`): said in a `thread.repaired` event right after `run.started`."""
        self._opened_store: ClosableCheckpointer | None = None
        self._sync_runner: asyncio.Runner | None = None
        trees.attach(sm, telemetry, self.interrupts)

    # ------------------------------------------------------------------ store
    def open_store(self, where: Checkpointer | str | Path) -> None:
        """Save runs into a store, or into the one at `where` (opened here, closed by `aclose`)."""
        if isinstance(where, (str, Path)):
            from ..checkpoint._target import open_checkpointer

            where = self._opened_store = open_checkpointer(where)
        self.use_checkpointer(where)

    def use_checkpointer(self, checkpointer: Checkpointer) -> None:
        if self.conversation:
            raise ConversationError(
                "a Conversation keeps a suspended run in memory and has no checkpointer; "
                "use Agent(root, checkpointer=...) for runs that must survive the process"
            )
        if self.recorder is None or self.recorder.checkpointer is not checkpointer:
            self.recorder = RunRecorder(
                self.trees.tree, self.state_manager, checkpointer, source=self.source, keys=self.keys
            )
            self.trees.on_tick = self.recorder.on_tick
            self.recorder.followups = self.interrupts.saved
            self.recorder.questions = self.interruptions.saved_questions

    @property
    def thread_id(self) -> str | None:
        return self.recorder.thread_id if self.recorder is not None else self.threads.current

    def history(self, thread_id: str | None) -> list[CheckpointInfo]:
        recorder = needs_store(self.recorder, "history()")
        tid = thread_id if thread_id is not None else recorder.thread_id
        return [] if tid is None else recorder.checkpointer.history(tid)

    def state_at(self, thread_id: str, seq: int) -> BaseModel:
        recorder = needs_store(self.recorder, "state_at()")
        checkpoint = recorder.fetch(thread_id, version_number(seq, "seq"))
        if checkpoint is None:
            known = ", ".join(recorder.checkpointer.threads()) or "none"
            raise CheckpointError(f"no checkpoint for thread {thread_id!r} (threads: {known})")
        return recorder.state_of(checkpoint)

    # ------------------------------------------------------------------ input
    def accepts(self, key: str) -> bool:
        try:
            self.route({key: None})
        except InputError:
            return False
        return True

    def route(self, input_data: Mapping[str, Any]) -> dict[str | None, dict[str, Any]]:
        """Input grouped by namespace; InputError naming every key no node of the tree reads."""
        spec = schema_spec(self.state_manager.schema)
        return TreeInputs.of(self.trees.tree, spec).route(input_data, self.namespace, spec, self.inputs)

    # ------------------------------------------------------------------ running
    def in_progress(self) -> bool:
        """A run is under way or suspended (waiting for approvals)."""
        return self.interrupts.running or self.trees.suspended

    async def run(
        self,
        input_data: Mapping[str, Any] | None,
        *,
        max_ticks: int,
        thread_id: str | None,
        checkpointer: Checkpointer | None,
        from_checkpoint: int | None,
        deps: Any,
        durability: Durability | None = None,
        record: RunRecording | None = None,
    ) -> AgentResult:
        sm = self.state_manager
        if from_checkpoint is not None:
            from_checkpoint = version_number(from_checkpoint, "from_checkpoint")
        routed = self.route(input_data) if input_data else {}  # bad input changes nothing
        if checkpointer is not None:
            self.use_checkpointer(checkpointer)
        if self.recorder is None and self.keep_recordings not in (None, False):
            raise CheckpointError(
                "keep_recordings keeps a thread's runs in its checkpoint store: give the agent a "
                "checkpointer (Agent(checkpointer=...) or run(checkpointer=...)), or record=FILE"
            )
        if thread_id is None and self.conversation:
            thread_id = self.threads.current  # a conversation continues its own thread
        root, runner = self.trees.acquire(self.threads.current)
        try:
            recorder = self.recorder
            threads = self.threads
            base: Checkpoint | None = None
            state: BaseModel | None = None
            entries: Mapping[str, JournalEntry] = {}
            if recorder is not None:  # before anything changes: a refused run leaves the core as it was
                if thread_id is None:
                    threads.stored_default = threads.stored_default or uuid.uuid4().hex
                tid = thread_id or threads.stored_default or ""
                store, keys = recorder.checkpointer, self.keys

                def refuse(previous: Checkpoint | None) -> None:
                    refuse_fresh_run(store, previous, keys=keys)

                newest = await recorder.newest(tid)
                refuse(newest)
                base, state = threads.stored_base(recorder, tid, newest, from_checkpoint)
                if newest is not None and newest.status == "running" and base is newest:
                    # Its last run stopped mid-way (cancelled, killed): the outcomes of the calls
                    # it left open, read before the claim below drops them.
                    entries = await recorder.stored_journal(tid)
            elif from_checkpoint is not None:
                needs_store(recorder, "run(from_checkpoint=...)")
            threads.given = thread_id
            if state is not None:
                sm.state = state
                sm.version += 1
            elif recorder is None:
                threads.switch(thread_id)
            threads.ran()
            if root.status != Status.INVALID:
                root.stop(Status.INVALID)  # a suspended run in hand answers its own batch here
            # Calls a stopped run (another process, an older version) left without results are
            # answered before the new input (see open_calls).
            self._repaired = repair_open_calls(sm, self.keys, entries, thread_id=thread_id or self.thread_id)
            self.interrupts.drop()  # follow-ups of an abandoned suspended run
            # What the run starts from (the thread's state so far), for its recordings: a replay
            # restores it before the run, so a thread's later runs replay too.
            start = sm.snapshot() if self._recorded(record) else None
            sm.reset_for_run()
            for namespace, values in routed.items():
                sm.update(values, namespace)
            if recorder is not None:
                recorder.durability = self.durability_of(durability)
                # checked again on what the claim rests on
                await recorder.start(tid, refuse=refuse, parent=base.seq if base is not None else None)

            def note(recording: RunRecording, run_id: str) -> None:
                recording.record_run(input_data, thread_id, run_id)
                if start is not None:
                    recording.write({"kind": "state", "state": start}, ("state",))

            try:
                return await self._drive(
                    root, runner, max_ticks, event=ev.RunStarted, deps=deps, record=(record, note)
                )
            finally:
                if recorder is not None:
                    await recorder.release()
        finally:
            self.trees.release()

    async def resume(
        self,
        decisions: Mapping[str, Any] | None,
        *,
        thread_id: str | None,
        checkpointer: Checkpointer | None,
        max_ticks: int,
        deps: Any,
        durability: Durability | None = None,
    ) -> AgentResult:
        if self.conversation and (checkpointer is not None or thread_id is not None):
            raise ConversationError(
                "a Conversation resumes its own suspended run (no thread_id or checkpointer); "
                "use Agent(root, checkpointer=...).resume(thread_id=...) for saved threads"
            )
        if checkpointer is not None:
            self.use_checkpointer(checkpointer)
        root, runner = self.trees.acquire(self.threads.current)
        try:
            recorder = self.recorder
            never_ticked = False
            loaded: Checkpoint | None = None
            if thread_id is not None:
                # Always reload: another process may have written since.
                if recorder is None:
                    raise CheckpointError("resume(thread_id=...) needs a checkpointer")
                loaded = await recorder.load(thread_id)
                never_ticked = claimed_before_first_save(loaded, root)
            if root.status != Status.RUNNING and not never_ticked:
                raise RuntimeError(
                    "nothing to resume: the last run is not suspended "
                    f"(tree status {root.status.name}); start a new one with run()"
                )
            if loaded is not None:
                self.interrupts.restore(loaded.followups)
            if recorder is not None and recorder.thread_id is not None:
                recorder.durability = self.durability_of(durability)
                await recorder.claim()
            try:
                for approval_id, decision in (decisions or {}).items():
                    self.decide(approval_id, decision)
                self.approvals.merge_stored(recorder)

                def note(recording: RunRecording, run_id: str) -> None:
                    recording.record_resume(decisions, thread_id, run_id)

                return await self._drive(
                    root, runner, max_ticks, event=ev.RunResumed, deps=deps, record=(None, note)
                )
            finally:
                if recorder is not None:
                    await recorder.release()
        finally:
            self.trees.release()

    def durability_of(self, given: Durability | None) -> Durability:
        """A run's durability: the run's, else the agent's, else the configuration's
        (`checkpoints.durability`)."""
        return given or self.durability or get_config().checkpoints.durability

    def inject(self, content: str, namespace: str | None, timeout: float) -> None:
        self.interrupts.inject(content, namespace, timeout, self.in_progress, self._keep_followups)

    def _keep_followups(self) -> None:
        """Save a suspended run's follow-ups (a new version of its thread, conditional on the one
        it suspended in): another process resuming the thread delivers them. A thread saved
        since by someone else (resumed elsewhere) is a ThreadConflictError, nothing queued."""
        recorder = self.recorder
        if recorder is None or recorder.thread_id is None:
            return  # in memory only: the follow-up lives as long as the suspended run does
        tid = recorder.thread_id
        try:
            recorder.save_idle("suspended")
        except ThreadConflictError as exc:
            detail = str(exc).removeprefix(f"thread {tid!r}: ")
            raise ThreadConflictError(tid, f"the follow-up was not queued: {detail}") from exc
        except CheckpointError as exc:
            raise CheckpointError(f"inject(): the follow-up was not queued: {exc}") from exc

    def decide(self, interruption_id: str, decision: Any) -> Interruption:
        return self.interruptions.decide(
            interruption_id, decision, recorder=self.recorder, thread_id=self.thread_id
        )

    def pending_approvals(self) -> list[Approval]:
        return self.approvals.pending()

    def pending_interruptions(self, thread_id: str | None = None) -> list[Interruption]:
        """This run's interruptions, or those the store holds for `thread_id` (see the facade)."""
        if thread_id is None or (thread_id == self.thread_id and self.in_progress()):
            return self.interruptions.pending()
        store = needs_store(self.recorder, "pending_interruptions(thread_id=...)").checkpointer
        waiting = [
            from_approval(p.approval)
            for p in pending_of_thread(store, thread_id, keys=self.keys)
            if p.decision is None
        ]
        asked = [from_question(s.question, s.expired) for s in stored_questions(store, thread_id=thread_id)]
        return waiting + asked

    async def _drive(
        self,
        root: py_trees.behaviour.Behaviour,
        runner: ReactiveRunner,
        max_ticks: int,
        *,
        event: type[ev.RunStarted | ev.RunResumed],
        deps: Any = None,
        record: tuple[RunRecording | None, RecordOp] | None = None,
    ) -> AgentResult:
        run_id = self.new_run_id()
        hub = self.telemetry
        recordings = [r for r in ((record[0], self.recording) if record else ()) if r is not None]
        kept = await self._kept_recording(event, run_id) if record else None
        if kept is not None:
            recordings.append(kept.recording)
        rules = self.substitutions
        if not recordings:
            with rules.model(), rules.tools():
                return await self._drive_run(root, runner, max_ticks, event, deps, run_id)
        try:
            with ExitStack() as stack:
                first = runner.ticks_now
                stack.enter_context(flush_every_tick(runner, recordings))
                for recording in recordings:
                    recording.tick = lambda: runner.ticks_now - first
                    recording.substitutions = [r.model_dump(exclude_none=True) for r in rules.items]
                    record[1](recording, run_id)  # type: ignore[index]
                    stack.enter_context(recording.recording(hub))
                # Scripted replies and tool outputs answer inside the recorders' hooks: a recording
                # holds no call for them, only their events, and a replay applies the rules its run
                # lines keep.
                stack.enter_context(rules.model())
                stack.enter_context(rules.tools())
                result = await self._drive_run(root, runner, max_ticks, event, deps, run_id)
        except BaseException:
            if kept is not None:
                kept.end("incomplete")  # cancelled or raised mid-way: replay refuses it
            raise
        for recording in recordings:
            recording.record_result(result.status, result.final_answer)
        if kept is not None:  # off the loop: a database round trip (PostgreSQL) blocks no other run
            await asyncio.to_thread(kept.end, result.status)
        return result

    def _recorded(self, record: RunRecording | None) -> bool:
        """Whether the next run is recorded (a file, the agent's recording, or the thread's)."""
        if record is not None or self.recording is not None:
            return True
        return self.recorder is not None and retention_of(self.keep_recordings) is not None

    async def _kept_recording(
        self, event: type[ev.RunStarted | ev.RunResumed], run_id: str
    ) -> ThreadRecording | None:
        """This operation's recording in the thread's store, when recordings are kept (see
        `_run.thread_recordings`)."""
        recorder = self.recorder
        if recorder is None or recorder.thread_id is None:
            return None
        retention = retention_of(self.keep_recordings)
        if retention is None:
            return None
        return await asyncio.to_thread(
            ThreadRecording.begin,
            recorder.checkpointer,
            retention,
            op="run" if event is ev.RunStarted else "resume",
            thread_id=recorder.thread_id,
            run_id=run_id,
            agent=self.source,
        )

    async def _drive_run(
        self,
        root: py_trees.behaviour.Behaviour,
        runner: ReactiveRunner,
        max_ticks: int,
        event: type[ev.RunStarted | ev.RunResumed],
        deps: Any,
        run_id: str,
    ) -> AgentResult:
        # The caller's deps reach the tools through a context variable, never the state.
        context = enter_run(RunContext(deps, run_id=run_id, thread_id=self.thread_id))
        hub = self.telemetry
        hub.run_id = run_id
        self.interruptions.run_id = run_id
        repaired, self._repaired = self._repaired, []
        if hub.active:
            thread_id = self.thread_id or self.threads.given
            hub.emit(event, node=root.name, namespace=self.namespace, thread_id=thread_id)
            if repaired:
                hub.emit(
                    ev.ThreadRepaired,
                    node=root.name,
                    namespace=self.namespace,
                    thread_id=thread_id,
                    calls=repaired,
                )
        started = time.perf_counter()
        ticks = 0
        self.breakpoints.install(root)
        self.substitutions.install(root)
        self.interruptions.watch(self._questions_changed)
        interrupts = self.interrupts
        interrupts.loop = asyncio.get_running_loop()
        interrupts.running = True
        try:
            while True:
                outcome = await runner.run(max_ticks=max_ticks - ticks)
                ticks += outcome.ticks
                # Suspended, but an operator may have decided meanwhile (stored, not yet in the state).
                if outcome.status != "suspended" or not self.approvals.merge_stored(self.recorder):
                    break
        finally:
            interrupts.running = False
            self.interruptions.cancel_open()
            leave_run(context)
        outcome.ticks = ticks
        result = build_result(
            self.state_manager,
            self.keys,
            root,
            self.output_namespace,
            outcome,
            pending=self.approvals.pending(),
            thread_id=self.thread_id,
            elapsed=time.perf_counter() - started,
            run_id=run_id,
        )
        if self.recorder is not None:
            await self.recorder.save(result.status)
        if result.status != "suspended":
            interrupts.drop()
        if hub.active:
            hub.emit(
                ev.RunCompleted,
                node=root.name,
                namespace=self.namespace,
                status=result.status,
                final_answer=result.final_answer,
                termination=result.termination,
                usage=result.usage.model_dump(),
                error=result.error,
            )
        return result

    async def _questions_changed(self) -> None:
        """A tool's question opened or was answered: with a store, save it with the thread now
        (another process lists what the run waits on); a failed save fails the run's next write."""
        recorder = self.recorder
        if recorder is not None and self.interrupts.running:
            with suppress(CheckpointError):  # kept by the recorder: its next write raises it
                await recorder.save_questions()

    def run_sync(self, start: Callable[[], Coroutine[Any, Any, AgentResult]]) -> AgentResult:
        """Run `start()` (a `run()`) to its end on this core's own event loop (one for all the
        calls, so pooled HTTP connections of the model client stay usable between runs)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError(
                "Agent.run_sync() cannot run inside a running event loop (async code, Jupyter): "
                "use `await agent.run(...)` there"
            )
        if self._sync_runner is None:
            self._sync_runner = asyncio.Runner()
            weakref.finalize(self, self._sync_runner.close)
        return self._sync_runner.run(start())

    async def stream(self, start: Callable[[], Coroutine[Any, Any, AgentResult]]) -> AsyncIterator[AnyEvent]:
        """Run `start()` (a `run()`) and yield its telemetry events as they happen."""
        queue: asyncio.Queue[AnyEvent | None] = asyncio.Queue()
        unsubscribe = self.telemetry.subscribe(queue.put_nowait)
        task = asyncio.create_task(start())
        task.add_done_callback(lambda _t: queue.put_nowait(None))
        try:
            while True:
                item = await queue.get()
                if item is None:
                    break
                yield item
            task.result()  # surface an exception of the run
        finally:
            unsubscribe()
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    async def aclose(self) -> None:
        await self.trees.aclose()
        if self.recording is not None:
            self.recording.close()
        store, self._opened_store = self._opened_store, None
        if isinstance(store, AsyncCheckpointer):
            await store.aclose()  # its connections of this loop say goodbye on it
        elif store is not None:
            store.close()


def claimed_before_first_save(checkpoint: Checkpoint, root: py_trees.behaviour.Behaviour) -> bool:
    """Whether `checkpoint` is a run's claim and nothing after it: the process stopped (SIGKILL,
    a crash) before the run's first save, which waits for the first batch (a model call in
    flight). Its state is the run's input, so a resume starts the tree again from the top: the
    run as it was asked for, no step of it lost (nothing was journaled before its first save)."""
    return checkpoint.status == "running" and root.status == Status.INVALID
