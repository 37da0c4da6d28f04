"""Agent: run a behaviour tree to an answer, with a result object and a live event stream."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any, Literal

import py_trees
from py_trees.common import Status
from pydantic import BaseModel, ConfigDict, Field

from .bt.runner import ReactiveRunner
from .config import get_config
from .models.types import Usage
from .presets.react_state import ReActState
from .state.manager import StateManager
from .state.schema import StateKeys
from .telemetry import events as ev
from .telemetry.events import Event
from .telemetry.hub import TelemetryHub, structlog_sink
from .tools.toolset import ToolSet

AgentStatus = Literal["success", "failure", "suspended"]


class AgentResult(BaseModel):
    """The outcome of one `Agent.run()`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    status: AgentStatus
    final_answer: str | None = None
    state: Any = None
    """A detached copy of the state model at the end of the run."""
    usage: Usage = Field(default_factory=Usage)
    termination: dict[str, Any] | None = None
    """Why the loop ended: {"reason": "completed" | "max_iterations" | "budget_exhausted" |
    "model_error" | ..., "iterations": n, ...}."""
    pending_approvals: list[Any] = Field(default_factory=list)
    error: str | None = None
    ticks: int = 0
    elapsed: float = 0.0
    run_id: str = ""


class Agent:
    """Owns a tree, its StateManager, runner and telemetry hub.

    Successive `run()` calls continue one conversation: persistent state (e.g. `messages`) is
    kept, run-scoped Ephemeral fields are reset. `namespace` selects where the input is written
    and the result's keys are read (defaults to the root's namespace, so a namespaced ReAct root
    just works).
    """

    def __init__(
        self,
        root: py_trees.behaviour.Behaviour,
        state_schema: type[BaseModel] = ReActState,
        *,
        initial_state: BaseModel | Mapping[str, Any] | None = None,
        keys: StateKeys | None = None,
        namespace: str | None = None,
        telemetry: TelemetryHub | None = None,
        log_events: bool | None = None,
    ) -> None:
        self.root = root
        self.state_manager = StateManager(state_schema, initial_state)
        self.keys = keys or StateKeys()
        self.namespace = namespace if namespace is not None else getattr(root, "namespace", None)
        self.telemetry = telemetry or TelemetryHub()
        if log_events is None:
            log_events = get_config().logging.level.upper() in ("DEBUG", "INFO")
        if log_events:
            self.telemetry.subscribe(structlog_sink())
        self.runner = ReactiveRunner(root, self.state_manager, telemetry=self.telemetry)

    @property
    def state(self) -> BaseModel:
        return self.state_manager.state

    async def run(
        self, input_data: Mapping[str, Any] | None = None, *, max_ticks: int = 100_000
    ) -> AgentResult:
        """Start a fresh run: reset run-scoped state, merge `input_data` through the reducers,
        tick the tree until it finishes or suspends."""
        if self.root.status != Status.INVALID:
            self.root.stop(Status.INVALID)
        sm = self.state_manager
        sm.reset_for_run()
        if input_data:
            sm.update(input_data, self.namespace)
        run_id = uuid.uuid4().hex[:12]
        self.telemetry.run_id = run_id
        hub = self.telemetry
        if hub.active:
            hub.emit(ev.RUN_STARTED, node=self.root.name, namespace=self.namespace)
        started = time.perf_counter()
        outcome = await self.runner.run(max_ticks=max_ticks)
        result = self._result(outcome.status, outcome.ticks, time.perf_counter() - started, run_id)
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

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _result(self, status: str, ticks: int, elapsed: float, run_id: str) -> AgentResult:
        sm, keys, ns = self.state_manager, self.keys, self.namespace
        usage = _read(sm, keys.usage, ns, Usage())
        if status in ("max_ticks",):
            agent_status: AgentStatus = "failure"
            error: str | None = f"stopped after max_ticks={ticks} ticks"
        else:
            agent_status = status  # type: ignore[assignment]
            error = _read(sm, keys.error, ns, None)
        final = _read(sm, keys.final_answer, ns, None) if agent_status == "success" else None
        return AgentResult.model_construct(
            status=agent_status,
            final_answer=final,
            state=sm.copy_state(),
            usage=usage if isinstance(usage, Usage) else Usage.model_validate(usage),
            termination=_read(sm, keys.termination, ns, None),
            pending_approvals=list(_read(sm, keys.pending_approvals, ns, None) or ()),
            error=error,
            ticks=ticks,
            elapsed=elapsed,
            run_id=run_id,
        )


def _read(sm: StateManager, key: str, namespace: str | None, default: Any) -> Any:
    """Read a key the schema may not have (a custom schema without `usage`, say)."""
    try:
        value = sm.get(key, namespace, default)
    except KeyError:
        return default
    return default if value is None else value
