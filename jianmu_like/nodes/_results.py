"""Results of trees: what each namespaced agent of a tree answered, spent and why it stopped.

A tree of several agents keeps each agent's keys in its own namespace; without this, a caller
digs them out of the state and the run's usage counts one namespace only. `AgentOutcome` is one
namespace's result, `tree_outcomes` reads them all and `total_usage` sums every namespace.

`ResultReader` is how a preset tells the generic run core (`Agent`, `AgentTemplate`) what its
trees hold: the state class and the keys its answer, usage, fallback and approvals are read
from. A preset factory attaches one to the root it builds (`attach_reader`); the run core finds
it (`reader_of`), so neither it nor the kernel imports any preset. This module reads the nodes'
keys and the nodes (a supervisor's steps) read sub-agents' outcomes: it shares their layer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import py_trees
from pydantic import BaseModel, ConfigDict, Field

from ..bt._node import walk
from ..bt._runner import EndStatus
from ..models._keys import StateKeys
from ..models._types import Usage
from ..state._contract import complete_schema
from ..state._manager import StateManager
from ..tools._artifact import Artifact

OutcomeStatus = EndStatus | Literal["not_finished"]
"""A namespace's status: how its run ended (`bt._runner.RunStatus`'s words), or `not_finished`."""

_READER = "result_reader"
"""The attribute of a tree node that carries its preset's `ResultReader`."""

N = TypeVar("N", bound=py_trees.behaviour.Behaviour)


@dataclass(frozen=True, slots=True)
class ResultReader:
    """What a preset's trees hold: the state class they run on (`Agent`'s default schema) and
    the keys their answer, usage, fallback, errors and approvals are read from."""

    state_schema: type[BaseModel]
    keys: StateKeys
    schema_hint: str = ""
    """What to do when a schema does not fit the preset's trees (the StateContractError says it)."""


def attach_reader(root: N, reader: ResultReader) -> N:
    """Mark `root` (built by a preset factory) with how its results are read; returns `root`."""
    setattr(root, _READER, reader)
    return root


def reader_of(root: py_trees.behaviour.Behaviour) -> ResultReader | None:
    """The reader of the first preset-built node of the tree (parents first): a tree of several
    agents of one preset reads as that preset; None when no node of the tree was built by one."""
    reader = getattr(root, _READER, None)
    if isinstance(reader, ResultReader):  # a preset's own root: no walk
        return reader
    for node in walk(root):
        reader = getattr(node, _READER, None)
        if isinstance(reader, ResultReader):
            return reader
    return None


def reading(
    root: py_trees.behaviour.Behaviour, state_schema: type[BaseModel] | None, keys: StateKeys | None
) -> ResultReader:
    """How a run of `root` is read: the schema and keys given, else its preset's reader's. A
    schema given for a preset's tree is completed with the fields it lacks from the preset's
    state class (`complete_schema`). A tree no preset built needs its schema named (the run
    core knows no default state)."""
    reader = reader_of(root)
    if reader is not None and state_schema is None and keys is None:
        return reader  # the common case: a preset's root, nothing overridden
    if state_schema is not None and reader is not None:
        # a user's schema declares what the user cares about; the preset's state class supplies
        # the bookkeeping fields the tree needs that it lacks (a cached subclass)
        state_schema = complete_schema(state_schema, root, reader.state_schema)
    if state_schema is None:
        if reader is None:
            raise TypeError(
                f"no state schema for the tree {root.name!r}: pass state_schema=<a pydantic state "
                "class> (e.g. ReActState), or build it with a preset factory (create_react_node, "
                "...), whose root names the state it runs on"
            )
        state_schema = reader.state_schema
    if keys is None:
        keys = reader.keys if reader is not None else StateKeys()
    return ResultReader(state_schema, keys, reader.schema_hint if reader is not None else "")


class AgentOutcome(BaseModel):
    """One namespace of a tree at the end of a run (`AgentResult.agents["a"]`).

    `status`: "success" (its loop completed, or it wrote an answer), "failure" (it stopped for
    another reason, or a model error), "suspended" (waiting for approvals), "not_finished" (it
    did not run to an end, e.g. a sibling failed first)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    namespace: str
    status: OutcomeStatus
    final_answer: str | None = None
    output: Any = None
    usage: Usage = Field(default_factory=Usage)
    termination: dict[str, Any] | None = None
    error: str | None = None
    artifacts: list[Artifact] = Field(default_factory=list)
    """Artifacts its tools produced this run."""


def read_key(sm: StateManager, key: str, namespace: str | None, default: Any) -> Any:
    """Read a key the schema may not have (a custom schema without `usage`, say)."""
    try:
        value = sm.get(key, namespace, default)
    except KeyError:
        return default
    return default if value is None else value


def read_usage(sm: StateManager, keys: StateKeys, namespace: str | None) -> Usage:
    usage = read_key(sm, keys.usage, namespace, None)
    if isinstance(usage, Usage):
        return usage
    return Usage() if usage is None else Usage.model_validate(usage)


def outcome(sm: StateManager, keys: StateKeys, namespace: str) -> AgentOutcome:
    termination = read_key(sm, keys.termination, namespace, None)
    error = read_key(sm, keys.error, namespace, None)
    answer = read_key(sm, keys.final_answer, namespace, None)
    output = read_key(sm, keys.output, namespace, None)
    status: OutcomeStatus
    if isinstance(termination, dict):
        status = "success" if termination.get("reason") == "completed" else "failure"
        error = error or termination.get("error")
    elif error:
        status = "failure"
    elif read_key(sm, keys.pending_approvals, namespace, None):
        status = "suspended"
    elif answer is not None or output is not None:
        status = "success"
    else:
        status = "not_finished"
    return AgentOutcome(
        namespace=namespace,
        status=status,
        final_answer=answer if status == "success" else None,
        output=output if status == "success" else None,
        usage=read_usage(sm, keys, namespace),
        termination=termination if isinstance(termination, dict) else None,
        error=str(error) if error else None,
        artifacts=list(read_key(sm, keys.artifacts, namespace, [])),
    )


def tree_outcomes(sm: StateManager, keys: StateKeys, namespaces: Iterable[str]) -> dict[str, AgentOutcome]:
    """One outcome per namespace (the tree's, and any other holding state), sorted by name."""
    return {ns: outcome(sm, keys, ns) for ns in sorted({*namespaces, *sm.namespaces()})}


def total_usage(sm: StateManager, keys: StateKeys, outcomes: Iterable[AgentOutcome]) -> Usage:
    """The top level's usage plus every namespace's."""
    total = read_usage(sm, keys, None)
    for item in outcomes:
        total = total + item.usage
    return total


def all_artifacts(sm: StateManager, keys: StateKeys, outcomes: Iterable[AgentOutcome]) -> list[Artifact]:
    """The top level's artifacts, then every namespace's (in namespace order)."""
    found: list[Artifact] = list(read_key(sm, keys.artifacts, None, []))
    for item in outcomes:
        found.extend(item.artifacts)
    return found
