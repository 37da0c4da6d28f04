"""Node hooks: the optional methods through which a node takes part in cloning, checkpoints and
the tree views, in one list, with their defaults.

A node overrides the hooks it needs; `NodeMixin` (the base of every jianmu_like node) holds the
defaults, so mypy checks each override's signature against them (on the class itself, not a base
of it: one more class in every node's MRO measured 3-5 k more instructions per ReAct iteration). The
kernel reads a node's hooks from its *class*, once per class (`hooks_of`), never by probing
each node for a name: a plain py_trees behaviour, which has none of them, gets the defaults
without anything being set on it, and a hook a class defines survives a clone (`clone_tree`
copies instances, never classes). The hooks:

- `on_clone()`: called by `clone_tree` on the copy, to re-bind what refers to the node itself
  (a bound method handed to a helper, a collaborator bound with `for_node`);
- `reset_run()`: called by `clone_tree` and `reset_tree`, to put back the attributes a run
  changes (a pooled tree holds no conversation);
- `progress() -> dict`: read by `capture_progress`, what a checkpoint needs to continue the node
  besides its status (a loop's iteration count); `restore_progress(entry)` takes it back;
- `runtime_children` (a class attribute) and `rebuild_children()`: children built per run are
  left out of `tree_fingerprint`, and `restore_progress` rebuilds them from the restored state;
- `show_details() -> str`: what the tree view of `jianmu-like show` says of the node beyond its
  name and class ("" for nothing).

Collaborators a node holds (an abort condition, a termination hook, a request transform) take
part through `for_node(node)` (`ForNode`: a copy bound to a cloned node, see `rebound`) and
`reset()` (`Forgets`: forget per-conversation memory, see `forget`). Two more things are
attached to any node, plain py_trees ones included, as data rather than hooks: a state contract
(`state.declare`) and a preset's result reader (`attach_reader`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import FunctionType
from typing import Any, Protocol, TypeVar

from ._node import NodeMixin

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class ForNode(Protocol[T_co]):
    """A node's collaborator bound to its node (an abort condition reading the loop's state):
    `for_node(node)` is the same collaborator bound to `node`, a clone."""

    def for_node(self, node: Any) -> T_co: ...


class Forgets(Protocol):
    """A collaborator with per-conversation memory (the context guard's counted history)."""

    def reset(self) -> None: ...


@dataclass(frozen=True, slots=True)
class ClassHooks:
    """The hooks a node class overrides (None: the default, which does nothing)."""

    on_clone: Callable[[Any], None] | None
    reset_run: Callable[[Any], None] | None
    progress: Callable[[Any], dict[str, Any]] | None
    restore_progress: Callable[[Any, dict[str, Any]], None] | None
    runtime_children: bool
    rebuild_children: Callable[[Any], None] | None
    """Set only with `runtime_children`."""
    show_details: Callable[[Any], str] | None


_NAMES = ("on_clone", "reset_run", "progress", "restore_progress", "rebuild_children", "show_details")
_BY_CLASS: dict[type, ClassHooks] = {}


def hooks_of(node: object) -> ClassHooks:
    """The hooks of `node`'s class, read once per class."""
    cls = type(node)
    found = _BY_CLASS.get(cls)
    if found is None:
        found = _BY_CLASS[cls] = _read(cls)
    return found


def _read(cls: type) -> ClassHooks:
    own: dict[str, Any] = {}
    for name in _NAMES:
        method = _method(cls, name)
        # A plain py_trees class may define a hook without deriving from NodeMixin: it counts.
        own[name] = None if method is _DEFAULTS[name] else method
    runtime = bool(getattr(cls, "runtime_children", False))
    if not runtime:
        own["rebuild_children"] = None
    return ClassHooks(runtime_children=runtime, **own)


_REBINDS: dict[type, Callable[[Any, Any], Any] | None] = {}
_FORGETS: dict[type, Callable[[Any], None] | None] = {}


def rebound(collaborator: T, node: Any) -> T:
    """`collaborator` bound to `node` when it is a `ForNode` (its class defines `for_node`),
    else itself (a plain function, None)."""
    cls = type(collaborator)
    try:
        rebind = _REBINDS[cls]
    except KeyError:
        rebind = _REBINDS[cls] = _method(cls, "for_node")
    return collaborator if rebind is None else rebind(collaborator, node)


def forget(collaborator: object) -> None:
    """Call `reset()` of a `Forgets` collaborator; nothing for any other (None included)."""
    cls = type(collaborator)
    try:
        reset = _FORGETS[cls]
    except KeyError:
        reset = _FORGETS[cls] = _method(cls, "reset")
    if reset is not None:
        reset(collaborator)


def _method(cls: type, name: str) -> Any:
    """The function `cls` (or a base) defines as `name`, None when it defines none (a function
    object's class, None's) or `name` is something else there (data, a static method)."""
    for klass in cls.__mro__:
        found = vars(klass).get(name)
        if found is not None:
            return found if isinstance(found, FunctionType) else None
    return None


_DEFAULTS = {name: vars(NodeMixin)[name] for name in _NAMES}
