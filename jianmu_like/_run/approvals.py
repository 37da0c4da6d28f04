"""Approvals of a run: the tool calls waiting for a human, and the decisions on them.

Pending approvals live in the state (every namespace of it); a decision goes into the state and
wakes the tree. With a checkpointer a decision is stored first, in a row of its own, so an
operator's tool or another process deciding meanwhile is seen (`merge_stored`), and an approval
is decided once: the second decision, by anyone, is `AlreadyDecided`.
"""

from __future__ import annotations

from typing import Any

from ..checkpoint._recorder import RunRecorder
from ..guard._approvals import (
    AlreadyDecided,
    Approval,
    ApprovalError,
    check_answer,
    check_edit,
    parse_decision,
)
from ..models._keys import StateKeys
from ..state._manager import StateManager
from .review import store_decision, stored_decisions


class Approvals:
    """The approvals of one state manager's state, read through `keys`."""

    def __init__(self, state_manager: StateManager, keys: StateKeys) -> None:
        self._sm = state_manager
        self._keys = keys

    def waiting(self) -> list[tuple[str | None, Approval]]:
        """(namespace, approval) of every pending approval, top level first."""
        sm, key = self._sm, self._keys.pending_approvals
        found: list[tuple[str | None, Approval]] = []
        namespaces = sorted(sm.namespaces()) if sm.state.__pydantic_extra__ else ()
        for ns in (None, *namespaces):
            try:
                approvals = sm.get(key, ns) or []
            except KeyError:
                continue
            found.extend((ns, approval) for approval in approvals)
        return found

    def pending(self) -> list[Approval]:
        return [approval for _, approval in self.waiting()]

    def decide(
        self, approval_id: str, decision: Any, *, recorder: RunRecorder | None, thread_id: str | None
    ) -> None:
        """Record a decision for one approval (stored first when `recorder` records a thread)
        and wake the tree; see `Agent.decide`."""
        parsed = parse_decision(decision)
        found = {approval.id: (ns, approval) for ns, approval in self.waiting()}
        if approval_id not in found:
            pending = ", ".join(found) or "none"
            raise ApprovalError(f"unknown approval id {approval_id!r} (pending: {pending})")
        ns, approval = found[approval_id]
        check_answer(approval, parsed)
        check_edit(approval, parsed)
        sm, keys = self._sm, self._keys
        previous = sm.get(keys.approval_decisions, ns).get(approval_id)
        if previous is not None:
            raise AlreadyDecided(approval_id, previous, thread_id)
        if recorder is not None and recorder.thread_id is not None:
            parsed = store_decision(recorder.checkpointer, recorder.thread_id, approval, parsed)
        sm.update({keys.approval_decisions: {approval_id: parsed}}, ns)
        sm.signal()

    def merge_stored(self, recorder: RunRecorder | None) -> bool:
        """Take the decisions stored for pending approvals (by any process) into the state; the
        store wins over the state. True when a decision was new to the state."""
        if recorder is None or recorder.thread_id is None:
            return False
        waiting = self.waiting()
        if not waiting:
            return False
        stored = stored_decisions(recorder.checkpointer, recorder.thread_id, [a for _, a in waiting])
        sm, keys = self._sm, self._keys
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
