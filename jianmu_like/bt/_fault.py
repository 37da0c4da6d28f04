"""Node faults: an exception in a node ends the run and says where and why.

A FAILURE status is an answer ("not done yet", "condition false") that loops and selectors act
on; an exception is a defect or a broken dependency, and retrying it only burns iterations until
a limit hides the cause. So an exception escaping a node — from a sync `update()`, from an
`AsyncBehaviour`'s task, from a plain py_trees behaviour — travels up the tick as `NodeFailed`:
each `LoopUntilSuccess` on the way records the termination and stops, the runner halts the tree
and reports the `NodeFault` (the node's path, a kind, the exception's type and message).

The kind is the exception class's `failure_kind` attribute when it has one (`ModelError` says
"model_error", `ToolProviderError` "provider_error"), else "node_error": the kernel names kinds
without importing the layers that define them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import py_trees
from pydantic import BaseModel, ConfigDict

from .._base.redact import redact_text
from ..errors import JianmuError
from ..telemetry import events as ev

if TYPE_CHECKING:
    from ..telemetry._hub import TelemetryHub

NODE_ERROR = "node_error"


class NodeFault(BaseModel):
    """Which node raised what; the cause of a run that ended with an exception."""

    model_config = ConfigDict(frozen=True)

    node: str
    """Slash-separated path of the node that raised (the tree's root when it cannot be told)."""
    namespace: str | None = None
    kind: str = NODE_ERROR
    """"node_error", "model_error", "provider_error", ... (see the module docstring)."""
    error_type: str
    message: str

    @property
    def error(self) -> str:
        """`Type: message`, as `AgentResult.error` shows it."""
        return f"{self.error_type}: {self.message}" if self.message else self.error_type

    def describe(self) -> str:
        return f"{self.kind} in node {self.node!r}: {self.error}"


class NodeFailed(JianmuError):
    """Carries a node's exception (its `__cause__`) up through the tick as a `NodeFault`."""

    def __init__(self, fault: NodeFault) -> None:
        super().__init__(fault.describe())
        self.fault = fault
        self.reported = False
        """Whether the `node.failed` event was emitted (once, by whoever saw it first)."""


def failure_kind(exc: BaseException) -> str:
    """The kind an exception declares through `failure_kind`, else "node_error"."""
    kind = getattr(type(exc), "failure_kind", None)
    return kind if isinstance(kind, str) and kind else NODE_ERROR


def behaviour_path(node: py_trees.behaviour.Behaviour) -> str:
    """Slash-separated names from the root down to `node`."""
    names: list[str] = []
    current: Any = node
    while current is not None:
        names.append(current.name)
        current = current.parent
    return "/".join(reversed(names))


def node_failed(exc: BaseException, node: py_trees.behaviour.Behaviour) -> NodeFailed:
    """`NodeFailed` for `exc` raised by `node` (the caller raises it `from exc`)."""
    if isinstance(exc, NodeFailed):
        return exc
    fault = NodeFault(
        node=behaviour_path(node),
        namespace=getattr(node, "namespace", None),
        kind=failure_kind(exc),
        error_type=type(exc).__name__,
        message=redact_text(str(exc)),  # it reaches the result, events, the CLI and the API
    )
    failed = NodeFailed(fault)
    failed.__cause__ = exc
    return failed


def locate(
    exc: BaseException, nodes: Iterable[py_trees.behaviour.Behaviour]
) -> py_trees.behaviour.Behaviour | None:
    """The innermost of `nodes` whose method was running when `exc` was raised.

    Read from the traceback: every frame of a behaviour method has the behaviour as `self`, and
    the innermost such frame belongs to the node that raised (a composite's frame is outer).
    """
    by_id = {id(node): node for node in nodes}
    found: py_trees.behaviour.Behaviour | None = None
    tb = exc.__traceback__
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        if owner is not None and id(owner) in by_id:
            found = by_id[id(owner)]
        tb = tb.tb_next
    return found


def as_node_failed(exc: Exception, root: py_trees.behaviour.Behaviour) -> NodeFailed:
    """`exc` as `NodeFailed`, naming the node of `root`'s tree that raised it."""
    if isinstance(exc, NodeFailed):
        return exc
    return node_failed(exc, locate(exc, root.iterate()) or root)


def report(failed: NodeFailed, telemetry: TelemetryHub | None) -> None:
    """Emit `node.failed` for `failed`, once."""
    if failed.reported:
        return
    failed.reported = True
    if telemetry is not None and telemetry.active:
        fault = failed.fault
        telemetry.emit(
            ev.NodeFailure,
            node=fault.node,
            namespace=fault.namespace,
            kind=fault.kind,
            error_type=fault.error_type,
            error=fault.message,
        )
