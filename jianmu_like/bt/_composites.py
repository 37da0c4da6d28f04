"""Sequence: py_trees' Sequence with a lean `stop()`.

Identical semantics (`memory=True` resumes at the running child); it skips the debug strings
py_trees formats on every tick and stop and the unused iterator it rebuilds, and ticks its
children through plain calls (bt.node.tick_node) rather than a generator chain: together a
measurable share of each ReAct iteration. Plain py_trees composites work as well in any tree.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import py_trees
from py_trees.common import Status

from .._base.speed import fast
from ._node import INVALID, LEAN_TICKS, RUNNING, SUCCESS, tick_node

_LEAN = fast("lean_ticks")


class Sequence(py_trees.composites.Sequence):
    """A py_trees Sequence that ticks and stops without generators or debug strings."""

    _initialises = False
    """A subclass overrides `initialise()` (py_trees' own does nothing: not worth a call)."""
    _terminates = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._initialises = cls.initialise is not py_trees.behaviour.Behaviour.initialise
        cls._terminates = cls.terminate is not py_trees.behaviour.Behaviour.terminate

    def tick(self) -> Iterator[py_trees.behaviour.Behaviour]:
        if not _LEAN:  # py_trees' own Sequence.tick (jianmu_like._base.speed, `lean_ticks`)
            yield from super().tick()
            return
        self.tick_lean()
        yield self

    def tick_lean(self) -> None:
        """py_trees' `Sequence.tick`, statement for statement, with children ticked by calls."""
        children = self.children
        index = 0
        if self.status is not RUNNING:
            self.current_child = children[0] if children else None
            for child in children:
                if child.status is not INVALID:
                    child.stop(INVALID)
            if self._initialises:
                self.initialise()
        elif self.memory and self.current_child is not None:
            index = children.index(self.current_child)
        else:
            self.current_child = children[0] if children else None
        if not children:
            self.current_child = None
            self.stop(SUCCESS)
            return
        count = len(children)
        while index < count:
            child = children[index]
            if type(child).tick in LEAN_TICKS:  # tick_node, inlined: one call less per child
                child.tick_lean()  # type: ignore[attr-defined]
            else:
                tick_node(child)
            status = child.status
            if status is not SUCCESS:
                if not self.memory:
                    for later in children[index + 1 :]:
                        if later.status is not INVALID:
                            later.stop(INVALID)
                if status is not RUNNING:
                    self.stop(status)
                else:
                    self.status = status
                return
            if index + 1 < count:
                self.current_child = children[index + 1]
            index += 1
        self.stop(SUCCESS)

    def stop(self, new_status: Status = INVALID) -> None:
        if not _LEAN:
            super().stop(new_status)
            return
        if new_status == INVALID:
            self.current_child = None
            for child in self.children:
                if child.status != INVALID:
                    child.stop(new_status)
        if self._terminates:
            self.terminate(new_status)
        self.status = new_status


if _LEAN:
    LEAN_TICKS.add(Sequence.tick)
