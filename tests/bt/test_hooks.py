"""Node hooks (bt._hooks): read from the class once, defaults for plain py_trees behaviours
without anything set on them, kept across clones, collaborators re-bound by `for_node`."""

from __future__ import annotations

from typing import Any

import py_trees
from py_trees.common import Status

from jianmu_like.bt import LoopUntilSuccess, Node
from jianmu_like.bt._clone import clone_tree, reset_tree
from jianmu_like.bt._hooks import forget, hooks_of, rebound
from jianmu_like.bt._progress import capture_progress, restore_progress

HOOK_NAMES = ("on_clone", "reset_run", "progress", "restore_progress", "rebuild_children", "show_details")


class Counting(Node):
    """A node of this package overriding its hooks."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.count = 0
        self.clones = 0
        self.resets = 0

    def update(self) -> Status:
        self.count += 1
        return Status.RUNNING

    def on_clone(self) -> None:
        self.clones += 1

    def reset_run(self) -> None:
        self.resets += 1

    def progress(self) -> dict[str, Any]:
        return {"count": self.count}

    def restore_progress(self, entry: dict[str, Any]) -> None:
        self.count = entry["count"]

    def show_details(self) -> str:
        return f"count={self.count}"


class Plain(py_trees.behaviour.Behaviour):
    def update(self) -> Status:
        return Status.SUCCESS


class DuckTyped(py_trees.behaviour.Behaviour):
    """A plain py_trees behaviour defining a hook without deriving from the package's nodes."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.clones = 0

    def update(self) -> Status:
        return Status.SUCCESS

    def on_clone(self) -> None:
        self.clones += 1


def test_a_plain_behaviour_gets_the_defaults_with_nothing_set_on_it() -> None:
    plain = Plain("plain")
    root = py_trees.composites.Sequence("root", memory=True, children=[plain])
    copy = clone_tree(root)
    reset_tree(copy)
    assert capture_progress(root) == {}
    for node in (plain, root, copy, copy.children[0]):
        assert not set(vars(node)) & set(HOOK_NAMES)
        assert not hasattr(node, "on_clone") and not hasattr(node, "progress")
    hooks = hooks_of(plain)
    assert hooks.on_clone is hooks.reset_run is hooks.progress is hooks.show_details is None
    assert hooks.runtime_children is False


class Bare(Node):
    def update(self) -> Status:
        return Status.SUCCESS


def test_the_base_node_s_defaults_add_no_instance_attribute() -> None:
    node = Bare("n")
    assert not set(vars(node)) & set(HOOK_NAMES)
    assert node.progress() == {} and node.show_details() == ""
    assert hooks_of(node).progress is None  # the default: not even called


def test_hooks_are_read_from_the_class_once_and_survive_a_clone() -> None:
    node = Counting("c")
    root = py_trees.composites.Sequence("root", memory=True, children=[node, DuckTyped("duck")])
    assert hooks_of(node) is hooks_of(Counting("other"))
    copy = clone_tree(root)
    cloned, duck = copy.children
    assert isinstance(cloned, Counting) and isinstance(duck, DuckTyped)
    assert (cloned.clones, cloned.resets) == (1, 1)
    assert duck.clones == 1  # a hook on a plain py_trees class still counts
    again = clone_tree(copy)  # a clone of a clone: the hook came with the class
    assert again.children[0].clones == 2
    reset_tree(copy)
    assert cloned.resets == 2


def test_progress_hooks_round_trip_through_capture_and_restore() -> None:
    node = Counting("c")
    root = py_trees.composites.Sequence("root", memory=True, children=[node])
    root.tick_once()
    root.tick_once()
    saved = capture_progress(root)
    assert saved["root/c"] == {"status": "RUNNING", "count": 2}
    fresh = Counting("c")
    other = py_trees.composites.Sequence("root", memory=True, children=[fresh])
    restore_progress(other, saved)
    assert fresh.count == 2 and fresh.status == Status.RUNNING


class Bound:
    """A collaborator bound to its node (an abort condition reading the loop's state)."""

    def __init__(self, node: Any = None) -> None:
        self.node = node
        self.forgotten = 0

    def __call__(self) -> bool:
        return False

    def for_node(self, node: Any) -> Bound:
        return Bound(node)

    def reset(self) -> None:
        self.forgotten += 1


def test_collaborators_are_rebound_by_their_class_and_plain_functions_kept() -> None:
    def plain() -> bool:
        return False

    bound = Bound()
    loop = LoopUntilSuccess("loop", Plain("child"), abort_condition=bound, on_termination=None)
    copy = clone_tree(loop)
    assert isinstance(copy, LoopUntilSuccess)
    assert isinstance(copy.abort_condition, Bound) and copy.abort_condition.node is copy
    assert copy.on_termination is None
    assert rebound(plain, copy) is plain and rebound(None, copy) is None
    forget(bound)
    forget(plain)  # nothing to forget
    forget(None)
    assert bound.forgotten == 1
