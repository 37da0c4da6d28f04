"""Sequence: py_trees' Sequence with a lean `stop()`.

Identical semantics (`memory=True` resumes at the running child); it only skips the debug string
py_trees formats on every stop and the unused iterator it rebuilds, which together were a
measurable share of each ReAct iteration. Plain py_trees composites work as well in any tree.
"""

from __future__ import annotations

import py_trees
from py_trees.common import Status


class Sequence(py_trees.composites.Sequence):
    """A py_trees Sequence that stops without formatting debug strings."""

    def stop(self, new_status: Status = Status.INVALID) -> None:
        if new_status == Status.INVALID:
            self.current_child = None
            for child in self.children:
                if child.status != Status.INVALID:
                    child.stop(new_status)
        self.terminate(new_status)
        self.status = new_status
