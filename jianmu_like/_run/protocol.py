"""`AgentLike`: what the edges rely on, satisfied by both `Agent` and `Conversation`.

The HTTP server serves an `Agent` per conversation with a checkpoint store and a `Conversation`
of a template without one; durable workers run conversations, or agents a factory builds. They
type their agents with this protocol and use only what it names, so nothing asks an agent
whether it happens to have a tree, a runner or a recorder right now.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import py_trees

from ..bt._runner import ReactiveRunner
from ..checkpoint._contract import Durability
from ..checkpoint._store import Checkpointer
from ..guard._interruptions import Interruption
from ..models._keys import StateKeys
from ..nodes._interrupts import InterruptBox
from ..state._manager import StateManager
from ..telemetry._hub import TelemetryHub
from ..tools._questions import Action as QuestionAction
from ..tools._questions import Question
from .breakpoints import Breakpoints
from .result import AgentResult
from .substitutions import Substitutions


@runtime_checkable
class AgentLike(Protocol):
    """An agent as a server, CLI or worker uses it (see `Agent` for each member)."""

    @property
    def keys(self) -> StateKeys: ...

    @property
    def state_manager(self) -> StateManager: ...

    @property
    def namespace(self) -> str | None: ...

    @property
    def output_namespace(self) -> str | None: ...

    @property
    def telemetry(self) -> TelemetryHub: ...

    @property
    def interrupts(self) -> InterruptBox: ...

    @property
    def tree(self) -> py_trees.behaviour.Behaviour: ...

    @property
    def runner(self) -> ReactiveRunner | None: ...

    @property
    def checkpointer(self) -> Checkpointer | None: ...

    @property
    def breakpoints(self) -> Breakpoints: ...
    @property
    def substitutions(self) -> Substitutions: ...

    def accepts(self, key: str) -> bool: ...

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
    ) -> AgentResult: ...

    async def resume(
        self,
        decisions: Mapping[str, Any] | None = None,
        *,
        thread_id: str | None = None,
        checkpointer: Checkpointer | None = None,
        max_ticks: int = 100_000,
        deps: Any = None,
        durability: Durability | None = None,
    ) -> AgentResult: ...

    def inject(self, content: str, *, namespace: str | None = None, timeout: float = 30.0) -> None: ...

    def pending_interruptions(self, *, thread_id: str | None = None) -> list[Interruption]: ...

    def decide(self, interruption_id: str, decision: Any) -> Interruption: ...

    def pending_elicitations(self) -> list[Question]: ...

    def respond_elicitation(
        self, request_id: str, action: QuestionAction, content: Mapping[str, Any] | None = None
    ) -> Question: ...

    async def aclose(self) -> None: ...
