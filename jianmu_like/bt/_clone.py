"""Reusing built trees: a fast structural clone, and a reset that forgets a run.

A tree serves one conversation at a time (its nodes hold the run's status and are bound to one
StateManager), so many concurrent conversations need many trees. Building one through a preset
re-derives tools, schemas, prompts and configs; `clone_tree` instead copies each node shallowly
— everything it was built with is *shared* — and gives the copy fresh per-run attributes only.
`reset_tree` puts a tree that finished (or suspended) back to its as-built state, without the
side effects of `stop()` (no observations written, nothing emitted), and unbinds it.

Nodes take part through two of their hooks (`bt._hooks`): `on_clone()` re-binds what refers to
the node itself (a bound method handed to a helper, a closure over the node) and `reset_run()`
restores the attributes a run changes. Plain py_trees behaviours are cloned and reset by status only, so their
own mutable attributes are shared between clones: give such trees a factory instead.
"""

from __future__ import annotations

import copy
import random
import uuid

import py_trees
from py_trees.common import Status

from .._base.speed import fast
from ._hooks import ClassHooks, hooks_of
from ._node import walk

_FAST = fast("clone")


def clone_tree(root: py_trees.behaviour.Behaviour) -> py_trees.behaviour.Behaviour:
    """A new tree of the same shape whose nodes share everything they were built with."""
    if _FAST:
        node = object.__new__(type(root))
        attributes = node.__dict__
        attributes.update(root.__dict__)
        node.id = _uuid4()
    else:  # the plain way (jianmu_like._base.speed, `clone`)
        node = copy.copy(root)
        attributes = node.__dict__
        node.id = uuid.uuid4()
    node.parent = None
    children = [clone_tree(child) for child in root.children]
    for child in children:
        child.parent = node
    node.children = children
    if "decorated" in attributes:
        attributes["decorated"] = children[0]
    node.iterator = node.tick()
    node.blackboards = list(root.blackboards)
    hooks = _reset_node(node)
    if hooks.on_clone is not None:
        hooks.on_clone(node)
    return node


def reset_tree(root: py_trees.behaviour.Behaviour) -> None:
    """Forget the last run: every node INVALID, per-run attributes as built, no state bound.

    The tree must not be running anything (a finished, suspended or halted run)."""
    for node in walk(root):
        _reset_node(node)
        bound = node.__dict__
        bound.pop("state_manager", None)
        bound.pop("telemetry", None)


def _reset_node(node: py_trees.behaviour.Behaviour) -> ClassHooks:
    node.status = Status.INVALID
    node.feedback_message = ""
    attributes = node.__dict__
    if "current_child" in attributes:  # a composite
        attributes["current_child"] = None
    hooks = hooks_of(node)
    if hooks.reset_run is not None:
        hooks.reset_run(node)
    return hooks


_SAFE_UNKNOWN = uuid.SafeUUID.unknown
_VERSION_4 = (0x4000 << 64) | (0x8000 << 48)
_VERSION_MASK = ~((0xF000 << 64) | (0xC000 << 48))


def _uuid4() -> uuid.UUID:
    """A random (version 4) UUID for a node's `id`, without `uuid.UUID.__init__`'s argument
    parsing (a third of a clone's time)."""
    value = (random.getrandbits(128) & _VERSION_MASK) | _VERSION_4
    fresh = object.__new__(uuid.UUID)
    object.__setattr__(fresh, "int", value)
    object.__setattr__(fresh, "is_safe", _SAFE_UNKNOWN)
    return fresh
