"""Interrupts: follow-ups a user sends while a ReAct run is in progress (`Agent.inject`).

They wait in an `InterruptBox` and enter the conversation at one place only, the loop's done
check (`InterruptGate`, `<name>.Done`): after the iteration's tool results, never between an
assistant's tool calls and their results. Several waiting follow-ups become one pinned user
message, `[USER INTERRUPT] ...` (a context guard never removes it). When the model has just
given its final answer, the answer is held back: the loop goes on one more iteration so the
model addresses the follow-up — unless that iteration was the loop's last, in which case the
answer stands and the follow-ups are reported as dropped at the end of the run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import py_trees
from py_trees.common import Status

from ..bt._conditions import StateCondition
from ..bt._loop import LoopUntilSuccess
from ..bt._node import FAILURE, SUCCESS
from ..models._keys import StateKeys
from ..models._messages import Message, human
from ..telemetry import events as ev
from ._compaction import INTERRUPT_PREFIX


class InterruptBox:
    """Follow-ups waiting for the ReAct loop of each namespace. Used from the event loop's
    thread only (`Agent.inject` hands a call from another thread over to it)."""

    def __init__(self) -> None:
        self._queues: dict[str | None, list[str]] = {}

    def put(self, namespace: str | None, content: str) -> None:
        self._queues.setdefault(namespace, []).append(content)

    def pending(self, namespace: str | None) -> bool:
        queues = self._queues
        return bool(queues) and bool(queues.get(namespace))

    def take(self, namespace: str | None) -> list[str]:
        return self._queues.pop(namespace, None) or []

    def contents(self) -> list[str]:
        """Every waiting follow-up, in order of namespace then arrival."""
        return [content for queue in self._queues.values() for content in queue]

    def waiting(self) -> list[tuple[str | None, str]]:
        """Every waiting follow-up (namespace, content), left in the box."""
        return [(ns, content) for ns, queue in self._queues.items() for content in queue]

    def withdraw(self, namespace: str | None, content: str) -> None:
        """Take back the newest follow-up `put` for `namespace` (it could not be kept)."""
        queue = self._queues.get(namespace)
        if queue and queue[-1] == content:
            queue.pop()
            if not queue:
                del self._queues[namespace]

    def replace(self, waiting: Iterable[tuple[str | None, str]]) -> None:
        """Hold exactly these follow-ups (the ones a restored checkpoint saved)."""
        self._queues = {}
        for namespace, content in waiting:
            self.put(namespace, content)

    def drain(self) -> list[tuple[str | None, str]]:
        """Take every waiting follow-up (namespace, content)."""
        if not self._queues:
            return []
        queues, self._queues = self._queues, {}
        return [(ns, content) for ns, queue in queues.items() for content in queue]


def interrupt_message(contents: Sequence[str]) -> Message:
    """One pinned user message carrying the follow-ups, oldest first."""
    return human(f"{INTERRUPT_PREFIX} " + "\n\n".join(contents))


class InterruptGate(StateCondition):
    """The ReAct loop's done check (SUCCESS when `done`), which first lets waiting follow-ups
    in: it appends them as one `[USER INTERRUPT]` message, holds back a final answer of this
    iteration and fails, so the loop asks the model again (see the module)."""

    def __init__(self, name: str, *, keys: StateKeys, namespace: str | None = None) -> None:
        super().__init__(name, key=keys.done, namespace=namespace)
        self.keys = keys
        self.interrupts: InterruptBox | None = None
        """Bound by the `Agent` that runs the tree."""

    def update(self) -> Status:
        box = self.interrupts
        if box is not None and box._queues and box.pending(self.namespace) and not self._last_iteration():
            return self._apply(box.take(self.namespace))
        # StateCondition's check on `done`, inlined (this runs once per iteration)
        return SUCCESS if self.state_manager.get(self.keys.done, self.namespace) else FAILURE

    def _apply(self, contents: list[str]) -> Status:
        sm, keys, ns = self.state_manager, self.keys, self.namespace
        held = bool(sm.get(keys.done, ns))
        message = interrupt_message(contents)
        updates: dict[str, object] = {keys.messages: [message], keys.done: False}
        if held:
            updates[keys.final_answer] = None
        sm.update(updates, ns)
        self.feedback_message = f"{len(contents)} follow-up(s) let in"
        self.emit(
            ev.Inject, status="applied", content=message.content, count=len(contents), held_back_answer=held
        )
        return FAILURE

    def _last_iteration(self) -> bool:
        """Whether failing now would end the enclosing loop at its iteration limit."""
        node: py_trees.behaviour.Behaviour | None = self.parent
        while node is not None and not isinstance(node, LoopUntilSuccess):
            node = node.parent
        return node is not None and node.iterations + 1 >= node.max_iterations
