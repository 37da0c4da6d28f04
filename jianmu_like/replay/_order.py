"""Which recorded event a replayed event must equal: one order per concurrent branch.

A run's events form one sequence only where nothing runs concurrently. The branches of a
parallel composite (`py_trees.composites.Parallel`, `DynamicParallel`: a supervisor's
sub-agents) run at once, and how their events interleave depends on when each branch's model
or tool answered while recording, and on the scheduling of the replay: both are legitimate,
neither is the run's behaviour. So a replayed event is compared with the **first recorded event
not yet published that it cannot overtake**: every earlier one of its own branch, of an
ancestor (the parallel node itself, the root) or without a node. The recorded events of other
branches of a parallel node it runs under are skipped: they come when their branch publishes
them. Without parallel composites this is the exact, global order of the recording.

The replay's gates (a model or tool answer waits for the events recorded before it, see
`Player._turn`) wait for `low`: the count of recorded events from the start that have all been
published, whatever order they came in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import py_trees

from ..bt import DynamicParallel

_PARALLEL = (py_trees.composites.Parallel, DynamicParallel)


class Branches:
    """Tells whether two nodes (by path) run concurrently: their paths part under a parallel
    composite of the tree. The tree is read from `root()` when a path is new (a
    `DynamicParallel` builds its children per run)."""

    __slots__ = ("_answers", "_parallel", "_root")

    def __init__(self, root: Callable[[], py_trees.behaviour.Behaviour | None]) -> None:
        self._root = root
        self._parallel: dict[str, bool] = {}
        self._answers: dict[tuple[str, str], bool] = {}

    def concurrent(self, a: str | None, b: str | None) -> bool:
        """True when `a` and `b` are in different branches of a parallel node (neither is the
        other's ancestor); an event without a node is ordered with every other."""
        if a is None or b is None or a == b:
            return False
        known = self._answers.get((a, b))
        if known is not None:
            return known
        first, second = a.split("/"), b.split("/")
        common = 0
        for x, y in zip(first, second, strict=False):
            if x != y:
                break
            common += 1
        answer = 0 < common < min(len(first), len(second)) and self._is_parallel("/".join(first[:common]))
        self._answers[(a, b)] = answer
        return answer

    def _is_parallel(self, path: str) -> bool:
        if path not in self._parallel:
            root = self._root()
            stack = [(root, root.name)] if root is not None else []
            while stack:  # (not bt.progress.node_paths: a replay does not refuse twin names)
                node, where = stack.pop()
                self._parallel[where] = isinstance(node, _PARALLEL)
                stack.extend((child, f"{where}/{child.name}") for child in node.children)
        return self._parallel.get(path, False)


class EventOrder:
    """The recorded events of one `run()`/`resume()` and which of them the replay published."""

    __slots__ = ("_branches", "_published", "expected", "low")

    def __init__(self, expected: list[dict[str, Any]], branches: Branches) -> None:
        self.expected = expected
        self._branches = branches
        self._published = [False] * len(expected)
        self.low = 0
        """How many recorded events, from the first, have all been published."""

    def due(self, node: str | None) -> int | None:
        """The index of the recorded event a new event of `node` must equal (see the module);
        None when every recorded event it could be is published (an extra event)."""
        concurrent = self._branches.concurrent
        published = self._published
        for index in range(self.low, len(self.expected)):
            if not published[index] and not concurrent(self.expected[index].get("node"), node):
                return index
        return None

    def publish(self, index: int) -> None:
        """Mark the recorded event at `index` as published."""
        published = self._published
        published[index] = True
        low, end = self.low, len(published)
        while low < end and published[low]:
            low += 1
        self.low = low

    def pending(self) -> dict[str, Any] | None:
        """The first recorded event not published yet (None: all were)."""
        return self.expected[self.low] if self.low < len(self.expected) else None
