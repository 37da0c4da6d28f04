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

from .._base.speed import fast
from ._hooks import ClassHooks, hooks_of
from ._node import INVALID, walk

_FAST = fast("clone")
_object_new = object.__new__
_object_setattr = object.__setattr__


def clone_tree(root: py_trees.behaviour.Behaviour) -> py_trees.behaviour.Behaviour:
    """A new tree of the same shape whose nodes share everything they were built with."""
    attributes = root.__dict__
    if _FAST:
        # Written one by one into a new instance, never through its `__dict__`: reading an
        # instance's `__dict__` moves its attributes out of CPython 3.11's inline values for good
        # (every later `self.x` a dict lookup, on every tick). The source's own is read (the
        # prototype's: one tree of the pool).
        node = _object_new(type(root))
        for name, value in attributes.items():
            _object_setattr(node, name, value)
        node.id = _uuid4()
    else:  # the plain way (jianmu_like._base.speed, `clone`)
        node = copy.copy(root)
        node.id = uuid.uuid4()
    node.parent = None
    children = [clone_tree(child) for child in root.children]
    for child in children:
        child.parent = node
    node.children = children
    if "decorated" in attributes:
        node.decorated = children[0]  # type: ignore[attr-defined]  # a decorator
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
        for name in _BOUND:  # deleted as attributes: see clone_tree on `__dict__`
            try:  # noqa: SIM105  (no context manager per node and run)
                delattr(node, name)
            except AttributeError:
                pass  # not bound (a tree never run)


_BOUND = ("state_manager", "telemetry")
"""What a run binds on every node (`Agent` and the runner), unbound by `reset_tree`."""


def _reset_node(node: py_trees.behaviour.Behaviour) -> ClassHooks:
    node.status = INVALID
    node.feedback_message = ""
    if getattr(node, "current_child", None) is not None:  # a composite that ticked
        node.current_child = None  # type: ignore[attr-defined]
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
