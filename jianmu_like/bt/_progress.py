"""Tree progress: where a tree stands (node statuses, loop counters) as data, and back.

A checkpoint stores the state *and* this progress, so a run suspended in one process resumes in
another at the exact node where it stopped: RUNNING nodes are RUNNING again, sequences continue
at their running child, loops keep their iteration count. Async nodes have no task after a
restore; their next tick simply starts their work again (a ToolExecutor reads from the state
which calls already finished).

A node takes part through its hooks (`bt._hooks`): `progress()` says what else than its status
it needs kept, `restore_progress(entry)` takes it back. A node that builds its children at run
time (a plan's steps) says so with `runtime_children = True`: the fingerprint leaves those
children out (they are not part of the tree as built), and a restore first calls its
`rebuild_children()`, which rebuilds them from the restored state.
"""

from __future__ import annotations

import hashlib
from typing import Any

import py_trees
from py_trees.common import Status

from ..errors import JianmuError
from ._hooks import hooks_of
from ._node import INVALID, RUNNING


class TreeMismatchError(ValueError, JianmuError):
    """Saved progress does not fit this tree (a different or renamed tree)."""


def node_paths(root: py_trees.behaviour.Behaviour) -> dict[str, py_trees.behaviour.Behaviour]:
    """Every node by its slash-separated path of names; names must be unique among siblings."""
    paths: dict[str, py_trees.behaviour.Behaviour] = {}

    def walk(node: py_trees.behaviour.Behaviour, prefix: str) -> None:
        path = f"{prefix}/{node.name}" if prefix else node.name
        if path in paths:
            raise TreeMismatchError(f"two nodes share the path {path!r}: give siblings distinct names")
        paths[path] = node
        for child in node.children:
            walk(child, path)

    walk(root, "")
    return paths


def tree_fingerprint(root: py_trees.behaviour.Behaviour) -> str:
    """Identifies the tree's shape: node paths and classes."""
    shape = "\n".join(
        f"{path}:{type(node).__name__}"
        for path, node in node_paths(root).items()
        if not _built_at_run_time(node)
    )
    return hashlib.sha256(shape.encode()).hexdigest()[:16]


def capture_progress(root: py_trees.behaviour.Behaviour) -> dict[str, dict[str, Any]]:
    """Status (and node-specific progress) of every node that is not INVALID."""
    progress: dict[str, dict[str, Any]] = {}
    for path, node in node_paths(root).items():
        if node.status == INVALID:
            continue
        entry: dict[str, Any] = {"status": node.status.name}
        extra = hooks_of(node).progress
        if extra is not None:
            entry.update(extra(node))
        progress[path] = entry
    return progress


def restore_progress(root: py_trees.behaviour.Behaviour, progress: dict[str, dict[str, Any]]) -> None:
    """Put a freshly built tree back where `capture_progress` saw it (the state restored first:
    nodes with `runtime_children` rebuild theirs from it)."""
    for node in list(root.iterate()):
        rebuild = hooks_of(node).rebuild_children
        if rebuild is not None:
            rebuild(node)
    nodes = node_paths(root)
    unknown = sorted(set(progress) - set(nodes))
    if unknown:
        raise TreeMismatchError(f"saved progress names nodes this tree does not have: {', '.join(unknown)}")
    busy = [path for path, node in nodes.items() if node.status == RUNNING]
    if busy:
        raise TreeMismatchError(f"cannot restore into a running tree (halt it first): {', '.join(busy)}")
    for path, node in nodes.items():
        entry = progress.get(path)
        node.status = Status[entry["status"]] if entry else INVALID
        restore = hooks_of(node).restore_progress
        if entry and restore is not None:
            restore(node, entry)
    for node in nodes.values():
        if isinstance(node, py_trees.composites.Composite):
            running = [c for c in node.children if c.status == RUNNING]
            node.current_child = running[0] if running else None


def _built_at_run_time(node: py_trees.behaviour.Behaviour) -> bool:
    parent = node.parent
    while parent is not None:
        if hooks_of(parent).runtime_children:
            return True
        parent = parent.parent
    return False
