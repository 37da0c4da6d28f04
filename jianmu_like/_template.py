"""AgentTemplate and Conversation: build an agent's tree once, serve many conversations.

An `Agent` is one conversation bound to one tree, so serving N conversations at once used to
mean N agents, each built through its preset. A template keeps a pool of trees instead; a
`Conversation` holds only its state (a StateManager) and borrows a tree for the duration of each
`run()`/`resume()`, returning it — reset — when the run ends or suspends. A suspended run's tree
progress is kept with the conversation (bt.progress), so the tree can serve others meanwhile and
the resume continues at the node that was waiting. Trees come from a factory, or are cloned from
a prototype (bt.clone: tools, schemas, configs, prompts and the model client are shared).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import py_trees
from py_trees.common import Status
from pydantic import BaseModel

from ._agent import Agent, AgentResult, interrupt_gates
from ._config import get_config
from ._keys import StateKeys
from ._results import reading
from .bt._clone import clone_tree, reset_tree
from .bt._node import walk
from .bt._progress import capture_progress, restore_progress
from .bt._runner import ReactiveRunner
from .checkpoint._contract import Durability
from .checkpoint._store import Checkpointer
from .errors import JianmuError
from .nodes._interrupts import InterruptGate
from .state._contract import check_contract
from .state._manager import StateManager
from .telemetry._hub import TelemetryHub, structlog_sink
from .tools._toolset import ToolSet

TreeFactory = Callable[[], py_trees.behaviour.Behaviour]


class ConversationError(RuntimeError, JianmuError):
    """A conversation used in a way it cannot serve (two runs at once, a checkpointer)."""


class AgentTemplate:
    """A pool of identical trees behind any number of conversations.

    `AgentTemplate(factory)` builds trees by calling `factory()`; `AgentTemplate.from_prototype(root)`
    clones `root` (fast, shares everything the nodes were built with; for trees of jianmu_like
    nodes and presets). Trees are built on demand, so N concurrent runs use N trees; finished runs
    hand theirs back (at most `max_idle` are kept).
    """

    def __init__(
        self,
        factory: TreeFactory,
        state_schema: type[BaseModel] | None = None,
        *,
        keys: StateKeys | None = None,
        namespace: str | None = None,
        output_namespace: str | None = None,
        log_events: bool | None = None,
        max_idle: int | None = None,
    ) -> None:
        self.factory = factory
        first = factory()
        read = reading(first, state_schema, keys)  # as Agent: the preset's by default
        self.state_schema, self.keys = read.state_schema, read.keys
        check_contract(
            read.state_schema, first, hint=read.schema_hint
        )  # as Agent does: a schema that cannot hold the keys fails here
        self.prototype = first
        """The first tree built (kept in the pool; its shape names every conversation's tree)."""
        self.namespace = namespace if namespace is not None else getattr(first, "namespace", None)
        self.output_namespace = output_namespace if output_namespace is not None else self.namespace
        if log_events is None:
            log_events = get_config().logging.level.upper() in ("DEBUG", "INFO")
        self.log_events = log_events
        self.max_idle = max_idle
        self.trees_built = 1
        self._idle: list[py_trees.behaviour.Behaviour] = [first]

    @classmethod
    def from_prototype(
        cls, root: py_trees.behaviour.Behaviour, state_schema: type[BaseModel] | None = None, **options: Any
    ) -> AgentTemplate:
        """A template whose trees are clones of `root` (bt.clone). `root` itself serves too."""
        handed = [root]

        def factory() -> py_trees.behaviour.Behaviour:
            return handed.pop() if handed else clone_tree(root)

        return cls(factory, state_schema, **options)

    def conversation(
        self, thread_id: str | None = None, *, initial_state: BaseModel | Mapping[str, Any] | None = None
    ) -> Conversation:
        """A new conversation (its own state; no tree until it runs)."""
        return Conversation(self, thread_id, initial_state=initial_state)

    def reserve(self, trees: int) -> None:
        """Build trees up front until `trees` wait in the pool (e.g. the expected concurrency at
        start-up, so the first burst of runs does not build them)."""
        while len(self._idle) < trees:
            self.trees_built += 1
            self._idle.append(self.factory())

    @property
    def idle(self) -> int:
        """Trees waiting in the pool."""
        return len(self._idle)

    def borrow(self) -> py_trees.behaviour.Behaviour:
        """A reset tree for one run (from the pool, else newly built)."""
        if self._idle:
            return self._idle.pop()
        self.trees_built += 1
        return self.factory()

    def give_back(self, root: py_trees.behaviour.Behaviour) -> None:
        """Reset `root` (bt.clone.reset_tree) and pool it."""
        reset_tree(root)
        if self.max_idle is None or len(self._idle) < self.max_idle:
            self._idle.append(root)

    def toolsets(self) -> list[ToolSet]:
        """Tool sets used by the template's trees (each listed once)."""
        found: dict[int, ToolSet] = {}
        for node in walk(self.prototype):
            tools = getattr(node, "tools", None)
            if isinstance(tools, ToolSet):
                found[id(tools)] = tools
        return list(found.values())

    async def aclose(self) -> None:
        """Close tool providers (e.g. MCP server sessions) of the template's trees."""
        for toolset in self.toolsets():
            await toolset.aclose()


_GATES_ATTR = "_jianmu_interrupt_gates"


def _pooled_gates(root: py_trees.behaviour.Behaviour) -> list[InterruptGate]:
    """The interrupt points of a pooled tree, found once per tree: every run of a conversation
    binds them, and a template's trees never change shape. Kept on the root with the root
    itself, since a clone of the tree copies its attributes (and must find its own nodes)."""
    cached = root.__dict__.get(_GATES_ATTR)
    if cached is not None and cached[0] is root:
        gates: list[InterruptGate] = cached[1]
        return gates
    gates = interrupt_gates(root)
    root.__dict__[_GATES_ATTR] = (root, gates)
    return gates


class Conversation(Agent):
    """One conversation over an `AgentTemplate`: the `Agent` API, with a borrowed tree.

    Between runs it holds its state, its telemetry hub and — when suspended — the progress of its
    tree, nothing else. A conversation runs one run at a time; different conversations of one
    template run concurrently, each on its own tree.
    """

    def __init__(
        self,
        template: AgentTemplate,
        thread_id: str | None = None,
        *,
        initial_state: BaseModel | Mapping[str, Any] | None = None,
    ) -> None:
        # Not Agent.__init__: no tree, runner or recorder until a run borrows a tree.
        self.template = template
        schema = template.state_schema
        if isinstance(initial_state, BaseModel) and not isinstance(initial_state, schema):
            initial_state = dict(initial_state)  # the user's schema's instance, completed
        self.state_manager = StateManager(schema, initial_state)
        self._init_threads(initial_state)
        self._current_thread = thread_id
        self.keys = template.keys
        self.namespace = template.namespace
        self.output_namespace = template.output_namespace
        self.telemetry = TelemetryHub()
        if template.log_events:
            self.telemetry.subscribe(structlog_sink())
        self.recorder = None
        self._progress: dict[str, dict[str, Any]] | None = None
        self._busy = False
        self._init_interrupts()

    @property
    def conversation_id(self) -> str | None:
        """The thread this conversation runs now (`run(thread_id=...)` switches threads; each
        thread keeps its own state)."""
        return self._current_thread

    @property
    def thread_id(self) -> str | None:
        return self._current_thread

    @property
    def suspended(self) -> bool:
        """The last run is waiting (for approvals); `resume()` continues it."""
        return self._progress is not None

    def _in_progress(self) -> bool:
        return self._running or self.suspended

    def use_checkpointer(self, checkpointer: Checkpointer) -> None:
        raise ConversationError(
            "a Conversation keeps a suspended run in memory and has no checkpointer; "
            "use Agent(root, checkpointer=...) for runs that must survive the process"
        )

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
        """As `Agent.run` without a checkpointer: `thread_id` (default: this conversation's
        current thread) continues that thread's state kept in memory, a new one starts empty."""
        if checkpointer is not None:
            self.use_checkpointer(checkpointer)
        tid = thread_id if thread_id is not None else self._current_thread
        self._acquire()
        try:
            return await super().run(
                input_data,
                max_ticks=max_ticks,
                thread_id=tid,
                from_checkpoint=from_checkpoint,
                deps=deps,
                durability=durability,
            )
        finally:
            self._release()

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
        if checkpointer is not None or thread_id is not None:
            raise ConversationError(
                "a Conversation resumes its own suspended run (no thread_id or checkpointer); "
                "use Agent(root, checkpointer=...).resume(thread_id=...) for saved threads"
            )
        self._acquire()
        try:
            return await super().resume(decisions, max_ticks=max_ticks, deps=deps, durability=durability)
        finally:
            self._release()

    def toolsets(self) -> list[ToolSet]:
        return self.template.toolsets()

    def accepts(self, key: str) -> bool:
        """As `Agent.accepts`, asked of one of the template's trees (all read the same keys)."""
        root = self.template.borrow()
        try:
            return self._accepts(key, root)
        finally:
            self.template.give_back(root)

    async def aclose(self) -> None:
        """Nothing to halt between runs; the template owns (and closes) the tools."""

    def _acquire(self) -> None:
        """Borrow a tree and put it where this conversation's last run stopped."""
        if self._busy:
            raise ConversationError(
                f"conversation {self.conversation_id!r} is already running; a conversation serves "
                "one run at a time (start another conversation from the template)"
            )
        root = self.template.borrow()
        if self._progress is not None:
            try:
                restore_progress(root, self._progress)
            except BaseException:
                self.template.give_back(root)
                raise
        self._busy = True
        self.root = root
        self._bind_gates(_pooled_gates(root))
        self.runner = ReactiveRunner(root, self.state_manager, telemetry=self.telemetry)

    def _release(self) -> None:
        """Keep the progress of a suspended run, give the (reset) tree back."""
        root = self.root
        self._progress = capture_progress(root) if root.status == Status.RUNNING else None
        del self.root, self.runner
        self.template.give_back(root)
        self._busy = False
