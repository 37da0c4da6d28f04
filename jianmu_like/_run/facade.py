"""The public methods an `Agent` and a `Conversation` share, each forwarding to their run core.

Both classes hold a `RunCore` (composition) and differ only in where their trees come from and
in what they refuse (a `Conversation` keeps its suspended run in memory: no checkpointer). This
base writes each forward once, so the two can never drift apart: the same input rules, the same
`accepts`, the same errors for bad input, the same approvals and follow-ups.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, Self

import py_trees
from pydantic import BaseModel

from ..bt._runner import ReactiveRunner
from ..checkpoint._contract import Durability
from ..checkpoint._history import CheckpointInfo
from ..checkpoint._recorder import RunRecorder
from ..checkpoint._store import Checkpointer
from ..guard._approvals import Approval, ApprovalDecision
from ..guard._interruptions import Interruption
from ..models._keys import StateKeys
from ..nodes._interrupts import InterruptBox
from ..state._manager import StateManager
from ..telemetry._hub import TelemetryHub
from ..telemetry.events import AnyEvent
from ..tools._questions import Action as QuestionAction
from ..tools._questions import Question
from ..tools._toolset import ToolSet
from .breakpoints import Breakpoints
from .core import RunCore
from .recording import RunRecording
from .result import AgentResult
from .substitutions import Substitutions


class RunFacade:
    """What a caller does with an agent or a conversation (see `Agent`, `Conversation`)."""

    _core: RunCore

    # ------------------------------------------------------------------ what it holds
    @property
    def keys(self) -> StateKeys:
        """Where the run's answer, usage, approvals... live in the state."""
        return self._core.keys

    @property
    def state_manager(self) -> StateManager:
        """The state of the current thread, read and written through the reducers."""
        return self._core.state_manager

    @property
    def state(self) -> BaseModel:
        """The current thread's state model, live (`AgentResult.state` is a detached copy)."""
        return self._core.state_manager.state

    @property
    def namespace(self) -> str | None:
        """Where plain input keys are written (default: the root's namespace)."""
        return self._core.namespace

    @property
    def output_namespace(self) -> str | None:
        """Where the result's answer, output and termination are read."""
        return self._core.output_namespace

    @property
    def inputs(self) -> tuple[str, ...]:
        """Plain input keys taken even though no node reads them (an agent file's inputs)."""
        return self._core.inputs

    @property
    def telemetry(self) -> TelemetryHub:
        """The hub every event of this agent's runs goes through (subscribe to it)."""
        return self._core.telemetry

    @property
    def interrupts(self) -> InterruptBox:
        """Follow-ups injected while a run is in progress (`inject`), until a loop takes them."""
        return self._core.interrupts.box

    @property
    def tree(self) -> py_trees.behaviour.Behaviour:
        """The tree runs tick: an Agent's root; a Conversation's template's prototype, the shape
        of every tree it borrows (names, nodes, the keys they read)."""
        return self._core.trees.tree

    @property
    def runner(self) -> ReactiveRunner | None:
        """The runner of the tree in hand (a Conversation holds none between runs)."""
        return self._core.trees.runner

    @property
    def breakpoints(self) -> Breakpoints:
        """Where this agent's runs pause before a node ticks (`set([...])`; see `_run.breakpoints`):
        a pause is a pending approval of kind `breakpoint`, decided and resumed like one."""
        return self._core.breakpoints

    @property
    def substitutions(self) -> Substitutions:
        """Rules that force a node's result or script a model's reply or a tool's output in this
        agent's runs and replays (`set([{"node": ..., "status": "SUCCESS"}, {"node": ...,
        "reply": "..."}, {"tool": ..., "output": ...}])`; see `_run.substitutions`)."""
        return self._core.substitutions

    @property
    def recorder(self) -> RunRecorder | None:
        """What saves runs into the checkpointer (None: no checkpointer)."""
        return self._core.recorder

    @property
    def checkpointer(self) -> Checkpointer | None:
        """The store runs are saved in (None: threads kept in memory)."""
        recorder = self._core.recorder
        return recorder.checkpointer if recorder is not None else None

    @property
    def thread_id(self) -> str | None:
        """The thread of the current (or last) run: the one checkpointed under, or without a
        checkpointer the in-memory thread (None: the default one)."""
        return self._core.thread_id

    @property
    def suspended(self) -> bool:
        """The last run is waiting (for approvals); `resume()` continues it."""
        return self._core.trees.suspended

    # ------------------------------------------------------------------ threads
    def use_checkpointer(self, checkpointer: Checkpointer) -> None:
        """Save runs into `checkpointer` (after every tick that changed the state); a
        `Conversation` has none (a ConversationError)."""
        self._core.use_checkpointer(checkpointer)

    def history(self, thread_id: str | None = None) -> list[CheckpointInfo]:
        """The saved versions of `thread_id` (default: the current thread), newest first: seq,
        parent_seq (a fork where it is not seq - 1), time, status, running node, rounds,
        message count and pending approvals. [] for an unknown thread."""
        return self._core.history(thread_id)

    def state_at(self, thread_id: str, seq: int) -> BaseModel:
        """The state saved as version `seq` of `thread_id` (a CheckpointError names the kept
        versions when it has no such version)."""
        return self._core.state_at(thread_id, seq)

    # ------------------------------------------------------------------ running
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
        record: str | Path | None = None,
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

        `durability` ("sync", "async" or "exit") says when this run's checkpoints are written
        (default: the agent's, else the configuration's `checkpoints.durability`; see the
        threads guide for what each gives up). Tool-call journal entries are always written
        before the run goes on.

        `input_data` keys go to the agent's namespace, `"<namespace>.<key>"` to that namespace;
        a key no node of the tree reads raises InputError before anything runs.

        `record` writes this run to a new recording file there (JSON Lines: every model call,
        tool call and event, see `jianmu_like.replay` and the "Debug with replay" guide);
        `Agent(record=...)` records every run and resume of the agent into one file instead.
        """
        recording = RunRecording(record, agent=self._core.source) if record is not None else None
        try:
            return await self._core.run(
                input_data,
                max_ticks=max_ticks,
                thread_id=thread_id,
                checkpointer=checkpointer,
                from_checkpoint=from_checkpoint,
                deps=deps,
                durability=durability,
                record=recording,
            )
        finally:
            if recording is not None:
                recording.close()

    def run_sync(self, input_data: Mapping[str, Any] | None = None, **kwargs: Any) -> AgentResult:
        """`run()` for scripts: runs it to the end like `asyncio.run` (`kwargs` as for `run`).

        Successive calls share one event loop of this agent (an `asyncio.Runner`), so pooled
        HTTP connections of its model client stay usable between runs. Inside a running event
        loop (async code, Jupyter) `await agent.run(...)` instead: this raises RuntimeError."""
        return self._core.run_sync(lambda: self.run(input_data, **kwargs))

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
        return await self._core.resume(
            decisions,
            thread_id=thread_id,
            checkpointer=checkpointer,
            max_ticks=max_ticks,
            deps=deps,
            durability=durability,
        )

    async def stream(
        self, input_data: Mapping[str, Any] | None = None, *, max_ticks: int = 100_000
    ) -> AsyncIterator[AnyEvent]:
        """Run and yield telemetry events as they happen; the last one is `run.completed`."""
        async for event in self._core.stream(lambda: self.run(input_data, max_ticks=max_ticks)):
            yield event

    def accepts(self, key: str) -> bool:
        """Whether `run()` takes the input key `key` (a node of the tree reads it, or it is one of
        the agent's declared `inputs`): lets a caller that serves many kinds of agents (the HTTP
        server) send only what the tree will read."""
        return self._core.accepts(key)

    def inject(self, content: str, *, namespace: str | None = None, timeout: float = 30.0) -> None:
        """Send a follow-up to the run in progress (running, or suspended for an approval).

        It waits until the ReAct loop's next iteration boundary (after the tool results of the
        current one) and enters as one pinned `[USER INTERRUPT]` user message with any others
        waiting; a final answer of the iteration it arrived in is held back so the model
        addresses it (`nodes._interrupts`). `namespace` picks the loop (default: the agent's, or
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
        self._core.inject(content, namespace, timeout)

    # ------------------------------------------------------------------ interruptions
    def pending_interruptions(self, *, thread_id: str | None = None) -> list[Interruption]:
        """Everything the run waits for someone to answer, as one list: the tool calls waiting
        for a decision (`approval`) or for the client's result (`client_tool`), across every
        namespace of the state, then the questions its tools hold open (`question`: an MCP
        server's elicitation, a sampling request put to a person, a remote agent's question),
        oldest first. Answer any of them with `decide(id, answer)`.

        `thread_id` (with a checkpointer): what that thread of the store waits for when no run
        of this agent holds it (after a restart): its suspended run's undecided calls and the
        questions its last run held open — each marked `expired` when the process that asked it
        has ended (a tool's question does not survive its process: resume the thread)."""
        return self._core.pending_interruptions(thread_id)

    def pending_approvals(self) -> list[Approval]:
        """Approvals waiting for a decision, across every namespace of the state (the
        `approval` and `client_tool` entries of `pending_interruptions()`)."""
        return self._core.pending_approvals()

    def approve(self, approval_id: str, reason: str = "", *, arguments: dict[str, Any] | None = None) -> None:
        """Approve a pending tool call; `resume()` (or a run still in progress) then runs it —
        with `arguments` instead of the model's when given (checked against the tool's schema
        now: `InvalidEdit` if they do not match; the guard checks the corrected call again)."""
        self.decide(approval_id, ApprovalDecision(approved=True, reason=reason, arguments=arguments))

    def deny(self, approval_id: str, reason: str = "") -> None:
        """Deny a pending tool call; the model reads "denied by a human reviewer: <reason>"."""
        self.decide(approval_id, ApprovalDecision(approved=False, reason=reason))

    def decide(self, interruption_id: str, decision: Any) -> Interruption:
        """Answer one of `pending_interruptions()`, whatever its kind, and wake what waits on it;
        the interruption answered.

        An approval takes an `ApprovalDecision` or its shorthand (True / "approve", False /
        "deny", ("deny", reason)); a client tool's call an `ApprovalDecision` with `output`; a
        question a `QuestionAnswer`, `{"action": ..., "content": ...}` or the action alone
        ("accept" with content valid against its schema, "decline", "cancel":
        `ElicitationError` otherwise, and the question stays open). An id nothing waits on is
        an ApprovalError naming what does.

        With a checkpointer an approval's decision is stored first, in its own row. An approval
        is decided once: a second decision (here or by another process) is `AlreadyDecided` (an
        ApprovalError) naming the decision that stands.
        """
        return self._core.decide(interruption_id, decision)

    # ------------------------------------------------------------------ tools and closing
    def toolsets(self) -> list[ToolSet]:
        """Tool sets used by nodes of the tree (each listed once)."""
        return self._core.trees.toolsets()

    def pending_elicitations(self) -> list[Question]:
        """The questions of `pending_interruptions()` (kind `question`): those the agent's MCP
        servers put to a person while a tool call waits (`elicitation: ask`, and the sampling
        requests of `sampling: ask`), oldest first."""
        return self._core.interruptions.questions()

    def respond_elicitation(
        self, request_id: str, action: QuestionAction, content: Mapping[str, Any] | None = None
    ) -> Question:
        """Answer one of `pending_elicitations()` (as `decide(request_id, {"action": action,
        "content": content})` does): `accept` (with content valid against its schema),
        `decline` or `cancel`; `UnknownElicitation` / `ElicitationError` otherwise."""
        return self._core.interruptions.respond(request_id, action, content)

    async def aclose(self) -> None:
        """Halt the tree and close tool providers (e.g. MCP server sessions)."""
        await self._core.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
