"""AgentTemplate and Conversation: build an agent's tree once, serve many conversations.

An `Agent` is one conversation bound to one tree, so serving N conversations at once used to
mean N agents, each built through its preset. A template keeps a pool of trees instead; a
`Conversation` holds only its state (a StateManager) and borrows a tree for the duration of each
`run()`/`resume()`, returning it — reset — when the run ends or suspends. A suspended run's tree
progress is kept with the conversation (bt._progress), so the tree can serve others meanwhile and
the resume continues at the node that was waiting. Trees come from a factory, or are cloned from
a prototype (bt._clone: tools, schemas, configs, prompts and the model client are shared).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import py_trees
from pydantic import BaseModel

from ..bt._clone import clone_tree, reset_tree
from ..models._keys import StateKeys
from ..tools._toolset import ToolSet
from .agent import Agent
from .core import RunCore, default_namespace, logs_events, make_hub, read_tree
from .errors import ConversationError as ConversationError  # public here (the export tables)
from .facade import RunFacade
from .trees import PooledTree, tree_toolsets

TreeFactory = Callable[[], py_trees.behaviour.Behaviour]


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
        inputs: Iterable[str] = (),
    ) -> None:
        """The options are `Agent`'s, read the same way (`inputs`: plain input keys taken even
        though no node reads them); they hold for every conversation."""
        self.factory = factory
        first = factory()
        read = read_tree(first, state_schema, keys)  # as Agent: the preset's by default, checked
        self.state_schema, self.keys = read.state_schema, read.keys
        self.prototype = first
        """The first tree built (kept in the pool; its shape names every conversation's tree)."""
        self.namespace = default_namespace(first, namespace)
        self.output_namespace = output_namespace if output_namespace is not None else self.namespace
        self.inputs = tuple(inputs)
        self.log_events = logs_events(log_events)
        self.max_idle = max_idle
        self.trees_built = 1
        self._idle: list[py_trees.behaviour.Behaviour] = [first]

    @classmethod
    def from_prototype(
        cls, root: py_trees.behaviour.Behaviour, state_schema: type[BaseModel] | None = None, **options: Any
    ) -> AgentTemplate:
        """A template whose trees are clones of `root` (bt._clone). `root` itself serves too."""
        handed = [root]

        def factory() -> py_trees.behaviour.Behaviour:
            return handed.pop() if handed else clone_tree(root)

        return cls(factory, state_schema, **options)

    @classmethod
    def from_agent(cls, agent: Agent, **options: Any) -> AgentTemplate:
        """A template whose conversations take input, and answer, exactly as `agent` does: its
        tree is the prototype (`from_prototype`), with its state schema, keys, namespaces and
        declared `inputs` (what `jianmu-like serve` and durable workers build from an agent
        file). `options` as for the constructor (`log_events`, `max_idle`)."""
        return cls.from_prototype(
            agent.root,
            agent.state_manager.schema,
            keys=agent.keys,
            namespace=agent.namespace,
            output_namespace=agent.output_namespace,
            inputs=agent.inputs,
            **options,
        )

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
        return tree_toolsets(self.prototype)

    async def aclose(self) -> None:
        """Close tool providers (e.g. MCP server sessions) of the template's trees."""
        for toolset in self.toolsets():
            await toolset.aclose()


class Conversation(RunFacade):
    """One conversation over an `AgentTemplate`: the `Agent` API, with a borrowed tree.

    Between runs it holds its state, its telemetry hub and — when suspended — the progress of its
    tree, nothing else. A conversation runs one run at a time; different conversations of one
    template run concurrently, each on its own tree. It is no `Agent`: both are facades over the
    same run core (`_run`), so every input rule, thread rule and approval rule is the same.

    What differs: `run()` without a `thread_id` continues this conversation's current thread
    (`conversation_id`; another `thread_id` switches to that thread's state, kept in memory),
    and there is no checkpointer (`use_checkpointer`, `run(checkpointer=...)` and
    `resume(thread_id=... | checkpointer=...)` are a ConversationError): a suspended run lives in
    memory. Use `Agent(root, checkpointer=...)` for runs that must survive the process.
    """

    def __init__(
        self,
        template: AgentTemplate,
        thread_id: str | None = None,
        *,
        initial_state: BaseModel | Mapping[str, Any] | None = None,
    ) -> None:
        self.template = template
        self._core = RunCore(
            PooledTree(template),
            template.state_schema,
            template.keys,
            telemetry=make_hub(None, template.log_events),
            initial_state=initial_state,
            namespace=template.namespace,
            output_namespace=template.output_namespace,
            inputs=template.inputs,
            thread_id=thread_id,
            conversation=True,
        )

    @property
    def conversation_id(self) -> str | None:
        """The thread this conversation runs now (`run(thread_id=...)` switches threads; each
        thread keeps its own state)."""
        return self._core.threads.current
