"""Agent: run a behaviour tree to an answer, with a result object and a live event stream."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import time
import uuid
import weakref
from collections.abc import AsyncIterator, Iterable, Mapping
from pathlib import Path
from typing import Any

import py_trees
from py_trees.common import Status
from pydantic import BaseModel, ConfigDict, Field

from ._config import get_config
from ._keys import StateKeys
from ._results import AgentOutcome, all_artifacts, read_key, reading, total_usage, tree_outcomes
from ._review import refuse_fresh_run, store_decision, stored_decisions
from .bt._fault import NodeFault
from .bt._node import walk
from .bt._runner import EndStatus, ReactiveRunner, RunOutcome
from .checkpoint._contract import ClosableCheckpointer, Durability
from .checkpoint._history import CheckpointInfo
from .checkpoint._recorder import RunRecorder
from .checkpoint._store import Checkpoint, Checkpointer, CheckpointError
from .checkpoint._target import open_checkpointer
from .guard._approvals import (
    AlreadyDecided,
    Approval,
    ApprovalDecision,
    ApprovalError,
    check_edit,
    parse_decision,
)
from .models._types import Usage
from .nodes._interrupts import InterruptBox, InterruptGate
from .state._contract import check_contract
from .state._inputs import InputError, TreeInputs
from .state._manager import StateManager
from .state._schema import schema_spec
from .telemetry import events as ev
from .telemetry._hub import TelemetryHub, structlog_sink
from .telemetry.events import Event
from .tools._artifact import Artifact
from .tools._run_context import RunContext, enter_run, leave_run
from .tools._toolset import ToolSet

_LOOP_GONE = (
    "inject(): the agent's event loop is not running (stopped or closed), so the run can never "
    "take this follow-up; it was not queued"
)


class AgentResult(BaseModel):
    """The outcome of one `Agent.run()`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    status: EndStatus
    final_answer: str | None = None
    fallback_answer: str | None = None
    """When a ReAct run stopped without an answer (status "failure", termination reason
    "max_iterations", "budget_exhausted" or "tool_failures"): why, and which tools ran with
    what results. `final_answer` stays None: it is only set on success."""
    output: Any = None
    """The validated structured answer (a pydantic instance) of an agent with an `output_type`."""
    artifacts: list[Artifact] = Field(default_factory=list)
    """Documents the run's tools produced (whole; the model saw placeholders): the top level's,
    then every namespace's."""
    state: Any = None
    """A detached copy of the state model at the end of the run."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens spent by the whole tree: the top level plus every namespace."""
    agents: dict[str, AgentOutcome] = Field(default_factory=dict)
    """Per namespace of a tree: its answer, usage, termination and status (`agents["a"]`)."""
    output_namespace: str | None = None
    """The namespace `final_answer`, `output` and `termination` were read from (None: top level)."""
    termination: dict[str, Any] | None = None
    """Why the run ended: {"reason": "completed" | "max_iterations" | "budget_exhausted" |
    "model_error" | "node_error" | "provider_error" | ..., "iterations": n, ...}; a node
    exception adds "failed_node" (its path) and "error"."""
    pending_approvals: list[Approval] = Field(default_factory=list)
    """Tool calls waiting for a human (status "suspended"); decide with approve()/deny()."""
    thread_id: str | None = None
    """The thread (conversation) of the run: its id in the checkpoint store, or without a
    checkpointer the `thread_id` it was given (None: the agent's default thread)."""
    error: str | None = None
    """Why a failed run failed, e.g. "RuntimeError: kaput" or the model error's message."""
    fault: NodeFault | None = None
    """The node exception that ended the run: node path, kind, exception type and message."""
    ticks: int = 0
    elapsed: float = 0.0
    run_id: str = ""


class Agent:
    """Owns a tree, its StateManager, runner and telemetry hub.

    A thread is a conversation: successive `run()` calls on one `thread_id` continue it
    (persistent state such as `messages` is kept, run-scoped Ephemeral fields are reset), and a
    new thread id starts from the initial state. With a checkpointer the thread lives in the
    store (every save a version: `history`, `state_at`, `run(..., from_checkpoint=seq)`);
    without one the agent keeps one state per thread id in memory. `thread_id=None` is the
    agent's default thread. `namespace` selects where the input is written
    and the result's keys are read (defaults to the root's namespace, so a namespaced ReAct root
    just works); `output_namespace` reads the result elsewhere (e.g. a pipeline's last agent).

    Input for another namespace is addressed as `"<namespace>.<key>"` (`{"a.messages": [...]}`).
    Input that no node of the tree reads (per the nodes' `StateContract.reads`) is an
    `InputError` before anything runs; `inputs` names plain keys to accept anyway.
    """

    _conversation: str | None = None
    """The `thread_id` the current run was given, told to telemetry (`gen_ai.conversation.id`)
    even without a checkpointer."""

    def __init__(
        self,
        root: py_trees.behaviour.Behaviour,
        state_schema: type[BaseModel] | None = None,
        *,
        initial_state: BaseModel | Mapping[str, Any] | None = None,
        keys: StateKeys | None = None,
        namespace: str | None = None,
        output_namespace: str | None = None,
        telemetry: TelemetryHub | None = None,
        log_events: bool | None = None,
        checkpointer: Checkpointer | str | Path | None = None,
        inputs: Iterable[str] = (),
        source: str | None = None,
        durability: Durability | None = None,
    ) -> None:
        """`checkpointer` is a store, or where one lives (a SQLite path or a `postgresql://`
        URL: opened here, closed by `aclose()`); `durability` says when its checkpoints are
        written (default: the configuration's `checkpoints.durability`; `run()` can override
        it). `source` names the agent file the tree was built from (`load_agent` sets it);
        checkpoints record it. `state_schema` and `keys`
        default to what the preset that built the tree says (`results.ResultReader`: a
        `create_react_node` root runs on `ReActState` with its config's keys); a tree no preset
        built needs `state_schema`."""
        self.root = root
        self.source = source
        self.durability = durability
        read = reading(root, state_schema, keys)  # a given schema completed from the preset's
        self.keys = read.keys
        # a schema that cannot hold the tree's keys fails here
        check_contract(read.state_schema, root, hint=read.schema_hint)
        if isinstance(initial_state, BaseModel) and not isinstance(initial_state, read.state_schema):
            initial_state = dict(initial_state)  # the user's schema's instance, completed
        self.state_manager = StateManager(read.state_schema, initial_state)
        self._init_threads(initial_state)
        self.namespace = namespace if namespace is not None else getattr(root, "namespace", None)
        self.output_namespace = output_namespace if output_namespace is not None else self.namespace
        self.inputs = tuple(inputs)
        self.telemetry = telemetry or TelemetryHub()
        if log_events is None:
            log_events = get_config().logging.level.upper() in ("DEBUG", "INFO")
        if log_events:
            self.telemetry.subscribe(structlog_sink())
        self.runner = ReactiveRunner(root, self.state_manager, telemetry=self.telemetry)
        self._init_interrupts()
        self._bind_interrupts(root)
        self.recorder: RunRecorder | None = None
        self._opened_store: ClosableCheckpointer | None = None
        if isinstance(checkpointer, (str, Path)):
            checkpointer = self._opened_store = open_checkpointer(checkpointer)
        self._sync_runner: asyncio.Runner | None = None
        if checkpointer is not None:
            self.use_checkpointer(checkpointer)

    def use_checkpointer(self, checkpointer: Checkpointer) -> None:
        """Save runs into `checkpointer` (after every tick that changed the state)."""
        if self.recorder is None or self.recorder.checkpointer is not checkpointer:
            self.recorder = RunRecorder(
                self.root, self.state_manager, checkpointer, source=self.source, keys=self.keys
            )
            self.runner.on_tick = self.recorder.on_tick

    @property
    def thread_id(self) -> str | None:
        """The thread of the current (or last) run: the one checkpointed under, or without a
        checkpointer the in-memory thread (None: the default one)."""
        return self.recorder.thread_id if self.recorder is not None else self._current_thread

    # ------------------------------------------------------------------ threads
    def _init_threads(self, initial_state: BaseModel | Mapping[str, Any] | None) -> None:
        self._initial_state = initial_state
        self._current_thread: str | None = None
        """The in-memory thread whose state the state manager holds (without a checkpointer)."""
        self._parked: dict[str | None, BaseModel] = {}
        """The states of the other in-memory threads, by thread id (None: the default one)."""
        self._default_thread: str | None = None
        """The store's thread id of `thread_id=None` (made at its first run)."""
        self._ran = False
        """Whether a run has used the state manager's state (before, it is the initial state:
        the first thread run takes it as is, nothing to park)."""

    def _fresh_state(self) -> BaseModel:
        """The state a new thread starts from (the constructor's `initial_state`)."""
        initial, schema = self._initial_state, self.state_manager.schema
        if initial is None:
            return schema()
        if isinstance(initial, BaseModel):
            return initial.model_copy(deep=True)
        return schema.model_validate(initial)

    def _switch_memory_thread(self, thread_id: str | None) -> None:
        """Hold `thread_id`'s in-memory state (parking the current one)."""
        if thread_id == self._current_thread:
            return
        if not self._ran and thread_id not in self._parked:
            self._current_thread = thread_id  # the untouched initial state is the new thread's
            return
        sm = self.state_manager
        self._parked[self._current_thread] = sm.state
        parked = self._parked.pop(thread_id, None)
        sm.state = parked if parked is not None else self._fresh_state()
        sm.version += 1
        self._current_thread = thread_id

    def _thread_base(
        self, recorder: RunRecorder, thread_id: str, newest: Checkpoint | None, from_checkpoint: int | None
    ) -> tuple[Checkpoint | None, BaseModel | None]:
        """(the version a run on `thread_id` continues, its state): None for the state when the
        state manager already holds that version (this agent saved it last)."""
        base = newest if from_checkpoint is None else recorder.fetch(thread_id, from_checkpoint)
        if base is None:
            return None, self._fresh_state()
        if from_checkpoint is None and recorder.thread_id == thread_id and recorder.seq == base.seq:
            return base, None
        return base, recorder.state_of(base)

    def _store(self, what: str) -> RunRecorder:
        if self.recorder is None:
            raise CheckpointError(
                f"{what} needs a checkpointer (Agent(..., checkpointer=...): a SQLite path, a "
                "postgresql:// URL or MemoryCheckpointer()): without one no versions are kept"
            )
        return self.recorder

    def history(self, thread_id: str | None = None) -> list[CheckpointInfo]:
        """The saved versions of `thread_id` (default: the current thread), newest first: seq,
        parent_seq (a fork where it is not seq - 1), time, status, running node, rounds,
        message count and pending approvals. [] for an unknown thread."""
        recorder = self._store("history()")
        tid = thread_id if thread_id is not None else recorder.thread_id
        return [] if tid is None else recorder.checkpointer.history(tid)

    def state_at(self, thread_id: str, seq: int) -> BaseModel:
        """The state saved as version `seq` of `thread_id` (a CheckpointError names the kept
        versions when it has no such version)."""
        recorder = self._store("state_at()")
        checkpoint = recorder.fetch(thread_id, seq)
        if checkpoint is None:
            known = ", ".join(recorder.checkpointer.threads()) or "none"
            raise CheckpointError(f"no checkpoint for thread {thread_id!r} (threads: {known})")
        return recorder.state_of(checkpoint)

    @property
    def state(self) -> BaseModel:
        return self.state_manager.state

    async def run(
        self,
        input_data: Mapping[str, Any] | None = None,
        *,
        max_ticks: int = 100_000,
        thread_id: str | None = None,
        checkpointer: Checkpointer | None = None,
        from_checkpoint: int | None = None,
        deps: Any = None,
        durability: Durability | None = None,
    ) -> AgentResult:
        """Start a fresh run on the conversation `thread_id`: its state (persistent keys kept,
        run-scoped ones reset), `input_data` merged through the reducers; tick the tree until
        it finishes or suspends (waiting for approvals). An unknown thread starts from the
        initial state; `thread_id=None` is the agent's default thread.

        With a checkpointer (here or in the constructor) the run continues the thread's newest
        saved version, in this process or another, and saves new versions (never overwriting
        one) so `resume()` can continue it; `from_checkpoint=seq` continues version `seq`
        instead (a fork: the versions after it stay). The run claims the thread:
        ThreadConflictError if another live process is running it, and ThreadSuspendedError
        (naming them) if the thread is suspended waiting for approvals: a new run would discard
        them, so decide them and `resume()` first.

        `deps` (a database handle, the user's id...) reaches the run's tools: a parameter
        annotated `RunContext[T]` receives it as `.deps`, and so does `current_run().deps`. It
        is never saved in a checkpoint: `resume()` takes `deps=` again.

        `input_data` keys go to the agent's namespace, `"<namespace>.<key>"` to that namespace;
        a key no node of the tree reads raises InputError before anything runs.
        """
        sm = self.state_manager
        routed = self._route(input_data) if input_data else {}
        if checkpointer is not None:
            self.use_checkpointer(checkpointer)
        recorder = self.recorder
        self._conversation = thread_id
        base: Checkpoint | None = None
        state: BaseModel | None = None
        if recorder is not None:  # before anything changes: a refused run leaves the agent as it was
            if thread_id is None:
                self._default_thread = self._default_thread or uuid.uuid4().hex
            tid = thread_id or self._default_thread or ""
            store, keys = recorder.checkpointer, self.keys

            def refuse(previous: Checkpoint | None) -> None:
                refuse_fresh_run(store, previous, keys=keys)

            newest = store.load(tid)
            refuse(newest)
            base, state = self._thread_base(recorder, tid, newest, from_checkpoint)
        elif from_checkpoint is not None:
            self._store("run(from_checkpoint=...)")
        if state is not None:
            sm.state = state
            sm.version += 1
        elif recorder is None:
            self._switch_memory_thread(thread_id)
        self._ran = True
        if self.root.status != Status.INVALID:
            self.root.stop(Status.INVALID)
        self._drop_interrupts()  # follow-ups of an abandoned suspended run
        sm.reset_for_run()
        for namespace, values in routed.items():
            sm.update(values, namespace)
        if recorder is not None:
            recorder.durability = self._durability(durability)
            # checked again on what the claim rests on
            recorder.start(tid, refuse=refuse, parent=base.seq if base is not None else None)
        try:
            return await self._drive(max_ticks, event=ev.RUN_STARTED, deps=deps)
        finally:
            if recorder is not None:
                recorder.release()

    def run_sync(
        self,
        input_data: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> AgentResult:
        """`run()` for scripts: runs it to the end like `asyncio.run` (`kwargs` as for `run`).

        Successive calls share one event loop of this agent (an `asyncio.Runner`), so pooled
        HTTP connections of its model client stay usable between runs. Inside a running event
        loop (async code, Jupyter) `await agent.run(...)` instead: this raises RuntimeError."""
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
        return self._sync_runner.run(self.run(input_data, **kwargs))

    async def resume(
        self,
        decisions: Mapping[str, Any] | None = None,
        *,
        thread_id: str | None = None,
        checkpointer: Checkpointer | None = None,
        max_ticks: int = 100_000,
        deps: Any = None,
        durability: Durability | None = None,
    ) -> AgentResult:
        """Continue a suspended run exactly where it stopped (`deps` as for `run()`: never
        saved, so given again here).

        `thread_id` loads that thread's checkpoint first (e.g. in a new process; the agent must
        be built with the same tree and state schema). `decisions` maps approval ids to True /
        "approve", False / "deny" or ("deny", reason). No model call is repeated: the tree
        continues at the node that was waiting.

        With a checkpointer the resume claims the thread (ThreadConflictError when another live
        process runs it, or saved it since this agent last did) and merges the decisions other
        processes stored for it; a decision here that contradicts a stored one is an ApprovalError.
        """
        if checkpointer is not None:
            self.use_checkpointer(checkpointer)
        recorder = self.recorder
        if thread_id is not None:
            # Always reload: another process may have written since.
            if recorder is None:
                raise CheckpointError("resume(thread_id=...) needs a checkpointer")
            recorder.load(thread_id)
        if self.root.status != Status.RUNNING:
            raise RuntimeError(
                "nothing to resume: the last run is not suspended "
                f"(tree status {self.root.status.name}); start a new one with run()"
            )
        if recorder is not None and recorder.thread_id is not None:
            recorder.durability = self._durability(durability)
            recorder.claim()
        try:
            for approval_id, decision in (decisions or {}).items():
                self.decide(approval_id, decision)
            self._merge_stored_decisions()
            return await self._drive(max_ticks, event=ev.RUN_RESUMED, deps=deps)
        finally:
            if recorder is not None:
                recorder.release()

    def _durability(self, given: Durability | None) -> Durability:
        """The run's durability: the run's, else the agent's, else the configuration's."""
        return given or self.durability or get_config().checkpoints.durability

    def accepts(self, key: str) -> bool:
        """Whether `run()` takes the input key `key` (a node of the tree reads it, or it is one of
        the agent's declared `inputs`): lets a caller that serves many kinds of agents (the HTTP
        server) send only what the tree will read."""
        return self._accepts(key, self.root)

    def _accepts(self, key: str, root: py_trees.behaviour.Behaviour) -> bool:
        try:
            self._route({key: None}, root)
        except InputError:
            return False
        return True

    def _route(
        self, input_data: Mapping[str, Any], root: py_trees.behaviour.Behaviour | None = None
    ) -> dict[str | None, dict[str, Any]]:
        spec = schema_spec(self.state_manager.schema)
        tree = TreeInputs.of(root if root is not None else self.root, spec)
        return tree.route(input_data, self.namespace, spec, getattr(self, "inputs", ()))

    # ------------------------------------------------------------------ interrupts
    def _init_interrupts(self) -> None:
        self.interrupts = InterruptBox()
        """Follow-ups injected while a run is in progress (`inject`), until a loop takes them."""
        self._interrupt_points: set[str | None] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._running = False

    def _bind_interrupts(self, root: py_trees.behaviour.Behaviour) -> None:
        """Give the tree's interrupt points (the ReAct loops' done checks) this agent's box."""
        self._bind_gates(interrupt_gates(root))

    def _bind_gates(self, gates: Iterable[InterruptGate]) -> None:
        for node in gates:
            node.interrupts = self.interrupts
            self._interrupt_points.add(node.namespace)

    def _in_progress(self) -> bool:
        """A run is under way or suspended (waiting for approvals)."""
        return self._running or self.root.status == Status.RUNNING

    def inject(self, content: str, *, namespace: str | None = None, timeout: float = 30.0) -> None:
        """Send a follow-up to the run in progress (running, or suspended for an approval).

        It waits until the ReAct loop's next iteration boundary (after the tool results of the
        current one) and enters as one pinned `[USER INTERRUPT]` user message with any others
        waiting; a final answer of the iteration it arrived in is held back so the model
        addresses it (`nodes.interrupts`). `namespace` picks the loop (default: the agent's, or
        the tree's only ReAct loop). Callable from another task, and from another thread (it is
        handed to the run's event loop, and returns once queued). An `inject` event reports it
        queued, applied, or dropped (the run ended first).

        Without a run in progress it raises RuntimeError: a follow-up queued for some later run
        would silently join an unrelated question; send it as that run's input instead. From
        another thread it never waits forever: when the run's event loop is stopped or closed
        (the run can never take the follow-up), or stops before taking it, it raises
        RuntimeError at once; when the loop is busy for longer than `timeout` seconds, it raises
        TimeoutError. Either way the follow-up was not queued.
        """
        if not isinstance(content, str) or not content.strip():
            raise ValueError("inject() needs a non-empty message")
        loop = self._loop
        try:
            current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        if loop is None or current is loop:
            self._queue_interrupt(content, namespace)
            return
        if not loop.is_running():
            if self._running:  # its loop stopped under the run: nothing will ever take it
                raise RuntimeError(_LOOP_GONE)
            self._queue_interrupt(content, namespace)  # suspended: the next resume takes it
            return
        self._hand_to_loop(loop, content, namespace, timeout)

    def _hand_to_loop(
        self, loop: asyncio.AbstractEventLoop, content: str, namespace: str | None, timeout: float
    ) -> None:
        """Queue a follow-up on the run's loop from another thread, within a bounded wait:
        a hand-over the loop never takes (it stopped, or stayed busy) is withdrawn, so it
        cannot be queued later behind the caller's back."""
        queued: concurrent.futures.Future[None] = concurrent.futures.Future()

        def on_loop() -> None:
            if not queued.set_running_or_notify_cancel():
                return  # the caller gave up waiting
            try:
                self._queue_interrupt(content, namespace)
            except BaseException as exc:
                queued.set_exception(exc)
            else:
                queued.set_result(None)

        try:
            loop.call_soon_threadsafe(on_loop)
        except RuntimeError:  # closed meanwhile
            raise RuntimeError(_LOOP_GONE) from None
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            done, _ = concurrent.futures.wait([queued], timeout=max(0.0, min(0.05, left)))
            if done:
                break
            stopped = not loop.is_running()
            if (stopped or left <= 0) and queued.cancel():
                if stopped:
                    raise RuntimeError(_LOOP_GONE)
                raise TimeoutError(
                    f"inject(): the agent's event loop did not take the follow-up within {timeout:g} s "
                    "(it is blocked); the follow-up was not queued"
                )
        queued.result()

    def _queue_interrupt(self, content: str, namespace: str | None) -> None:
        if not self._in_progress():
            raise RuntimeError(
                "no run in progress to inject into: start one with run() and send this message as its input"
            )
        target = self._interrupt_target(namespace)
        self.interrupts.put(target, content)
        if self.telemetry.active:
            self.telemetry.emit(
                ev.INJECT, node=self._root_name(), namespace=target, status="queued", content=content
            )

    def _interrupt_target(self, namespace: str | None) -> str | None:
        points = self._interrupt_points
        if namespace is not None or self.namespace in points:
            target = namespace if namespace is not None else self.namespace
            if target in points:
                return target
        elif len(points) == 1:
            return next(iter(points))
        known = ", ".join(repr(ns) for ns in points) or "none"
        raise ValueError(
            f"no ReAct loop of this tree takes follow-ups in namespace {namespace!r} "
            f"(loops with interrupt points: {known}); pass namespace=..."
        )

    def _root_name(self) -> str | None:
        root = getattr(self, "root", None)  # a suspended Conversation holds no tree
        return root.name if root is not None else None

    def _drop_interrupts(self) -> None:
        """Report follow-ups no loop took (the run ended first) as dropped."""
        for ns, content in self.interrupts.drain():
            if self.telemetry.active:
                self.telemetry.emit(
                    ev.INJECT, node=self._root_name(), namespace=ns, status="dropped", content=content
                )

    # ------------------------------------------------------------------ approvals
    def pending_approvals(self) -> list[Approval]:
        """Approvals waiting for a decision, across every namespace of the state."""
        return [approval for _, approval in self._approvals()]

    def approve(self, approval_id: str, reason: str = "", *, arguments: dict[str, Any] | None = None) -> None:
        """Approve a pending tool call; `resume()` (or a run still in progress) then runs it —
        with `arguments` instead of the model's when given (checked against the tool's schema
        now: `InvalidEdit` if they do not match; the guard checks the corrected call again)."""
        self.decide(approval_id, ApprovalDecision(approved=True, reason=reason, arguments=arguments))

    def deny(self, approval_id: str, reason: str = "") -> None:
        """Deny a pending tool call; the model reads "denied by a human reviewer: <reason>"."""
        self.decide(approval_id, ApprovalDecision(approved=False, reason=reason))

    def decide(self, approval_id: str, decision: Any) -> None:
        """Record a decision for one approval and wake the tree.

        With a checkpointer the decision is stored first, in its own row. An approval is
        decided once: a second decision (here or by another process) is `AlreadyDecided` (an
        ApprovalError) naming the decision that stands.
        """
        parsed = parse_decision(decision)
        found = {approval.id: (ns, approval) for ns, approval in self._approvals()}
        if approval_id not in found:
            pending = ", ".join(found) or "none"
            raise ApprovalError(f"unknown approval id {approval_id!r} (pending: {pending})")
        ns, approval = found[approval_id]
        check_edit(approval, parsed)
        sm, keys = self.state_manager, self.keys
        previous = sm.get(keys.approval_decisions, ns).get(approval_id)
        if previous is not None:
            raise AlreadyDecided(approval_id, previous, self.thread_id)
        recorder = self.recorder
        if recorder is not None and recorder.thread_id is not None:
            parsed = store_decision(recorder.checkpointer, recorder.thread_id, approval, parsed)
        sm.update({keys.approval_decisions: {approval_id: parsed}}, ns)
        sm.signal()

    def _merge_stored_decisions(self) -> bool:
        """Take the decisions stored for pending approvals (by any process) into the state; the
        store wins over the state. True when a decision was new to the state."""
        recorder = self.recorder
        if recorder is None or recorder.thread_id is None:
            return False
        waiting = self._approvals()
        if not waiting:
            return False
        stored = stored_decisions(recorder.checkpointer, recorder.thread_id, [a for _, a in waiting])
        sm, keys = self.state_manager, self.keys
        changed = False
        for ns, approval in waiting:
            decision = stored.get(approval.id)
            if decision is None:
                continue
            current = sm.get(keys.approval_decisions, ns).get(approval.id)
            if current is None or current.approved != decision.approved:
                sm.update({keys.approval_decisions: {approval.id: decision}}, ns)
                changed = True
        return changed

    def _approvals(self) -> list[tuple[str | None, Approval]]:
        sm, key = self.state_manager, self.keys.pending_approvals
        found: list[tuple[str | None, Approval]] = []
        namespaces = sorted(sm.namespaces()) if sm.state.__pydantic_extra__ else ()
        for ns in (None, *namespaces):
            try:
                approvals = sm.get(key, ns) or []
            except KeyError:
                continue
            found.extend((ns, approval) for approval in approvals)
        return found

    # ------------------------------------------------------------------ running
    async def _drive(self, max_ticks: int, *, event: str, deps: Any = None) -> AgentResult:
        run_id = os.urandom(6).hex()  # secrets.token_hex(6) without its wrappers
        # The caller's deps reach the tools through a context variable, never the state.
        context = enter_run(RunContext(deps, run_id=run_id, thread_id=self.thread_id))
        self.telemetry.run_id = run_id
        hub = self.telemetry
        if hub.active:
            thread_id = self.thread_id or self._conversation
            hub.emit(event, node=self.root.name, namespace=self.namespace, thread_id=thread_id)
        started = time.perf_counter()
        ticks = 0
        self._loop = asyncio.get_running_loop()
        self._running = True
        try:
            while True:
                outcome = await self.runner.run(max_ticks=max_ticks - ticks)
                ticks += outcome.ticks
                # Suspended, but an operator may have decided meanwhile (stored, not yet in the state).
                if outcome.status != "suspended" or not self._merge_stored_decisions():
                    break
        finally:
            self._running = False
            leave_run(context)
        outcome.ticks = ticks
        result = self._result(outcome, time.perf_counter() - started, run_id)
        if self.recorder is not None:
            self.recorder.save(result.status)
        if result.status != "suspended":
            self._drop_interrupts()
        if hub.active:
            hub.emit(
                ev.RUN_COMPLETED,
                node=self.root.name,
                namespace=self.namespace,
                status=result.status,
                final_answer=result.final_answer,
                termination=result.termination,
                usage=result.usage.model_dump(),
                error=result.error,
            )
        return result

    async def stream(
        self, input_data: Mapping[str, Any] | None = None, *, max_ticks: int = 100_000
    ) -> AsyncIterator[Event]:
        """Run and yield telemetry events as they happen; the last one is `run.completed`."""
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        unsubscribe = self.telemetry.subscribe(queue.put_nowait)
        task = asyncio.create_task(self.run(input_data, max_ticks=max_ticks))
        task.add_done_callback(lambda _t: queue.put_nowait(None))
        try:
            while True:
                event = await queue.get()
                if event is None:
                    break
                yield event
            task.result()  # surface an exception of the run
        finally:
            unsubscribe()
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    def toolsets(self) -> list[ToolSet]:
        """Tool sets used by nodes of the tree (each listed once)."""
        found: dict[int, ToolSet] = {}
        for node in self.root.iterate():
            tools = getattr(node, "tools", None)
            if isinstance(tools, ToolSet):
                found[id(tools)] = tools
        return list(found.values())

    async def aclose(self) -> None:
        """Halt the tree and close tool providers (e.g. MCP server sessions)."""
        self.runner.halt()
        for toolset in self.toolsets():
            await toolset.aclose()
        if self._opened_store is not None:
            self._opened_store.close()
            self._opened_store = None

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _result(self, outcome: RunOutcome, elapsed: float, run_id: str) -> AgentResult:
        sm, keys, ns = self.state_manager, self.keys, self.output_namespace
        status, ticks, fault = outcome.status, outcome.ticks, outcome.fault
        agents = tree_outcomes(sm, keys, TreeInputs.of(self.root, schema_spec(sm.schema)).namespaces)
        termination = _read(sm, keys.termination, ns, None)
        if outcome.max_ticks_reached:
            agent_status: EndStatus = "failure"
            error: str | None = f"stopped after max_ticks={ticks} ticks"
        elif fault is not None:
            agent_status, error = "failure", fault.error
            if not isinstance(termination, dict) or termination.get("failed_node") != fault.node:
                # No loop of the output namespace recorded it (a plain tree, another agent).
                termination = {"reason": fault.kind, "failed_node": fault.node, "error": fault.error}
        else:
            agent_status = status
            error = _read(sm, keys.error, ns, None)
        final = _read(sm, keys.final_answer, ns, None) if agent_status == "success" else None
        output = _read(sm, keys.output, ns, None) if agent_status == "success" else None
        fallback = _read(sm, keys.fallback_answer, ns, None) if agent_status == "failure" else None
        return AgentResult(
            status=agent_status,
            final_answer=final,
            fallback_answer=fallback,
            output=output,
            artifacts=all_artifacts(sm, keys, agents.values()),
            state=sm.copy_state(),
            usage=total_usage(sm, keys, agents.values()),
            agents=agents,
            output_namespace=ns,
            termination=termination,
            pending_approvals=self.pending_approvals(),
            thread_id=self.thread_id,
            error=error,
            fault=fault,
            ticks=ticks,
            elapsed=elapsed,
            run_id=run_id,
        )


_read = read_key


def interrupt_gates(root: py_trees.behaviour.Behaviour) -> list[InterruptGate]:
    """The interrupt points of a tree (a walk of the whole tree)."""
    return [node for node in walk(root) if isinstance(node, InterruptGate)]
