"""State contracts: the keys a subtree reads and writes, checked against the schema up front.

A node that writes a key the schema cannot hold fails in the middle of a run, inside a tick,
after model calls were paid for. A subtree declares what it needs (`declare`), and the Agent
checks every declaration against its state schema when it is built (`check_contract`), naming
every missing field at once.

A contract also says which keys the subtree *reads* (`reads`), so the Agent can refuse input that
no node of the tree will ever read (see `state._inputs`) instead of running without it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any

import py_trees
from pydantic import BaseModel, ConfigDict
from pydantic.fields import FieldInfo

from ..errors import JianmuError
from ._schema import schema_spec

_ATTR = "state_contract"


@dataclass(frozen=True)
class StateContract:
    """`owner` (e.g. "ReAct agent 'Planner'") needs `keys` in `namespace` (None: top level).

    `reads` are the keys the subtree reads: a key of the schema (or a plain key) is read in
    `namespace`, `"<ns>.<key>"` in namespace `<ns>`. None means "not declared": the subtree may
    read anything, and input to the tree is not checked.
    """

    owner: str
    keys: tuple[str, ...] = ()
    namespace: str | None = None
    reads: tuple[str, ...] | None = None


class StateContractError(TypeError, JianmuError):
    """The state schema lacks fields a subtree of the tree needs."""


def declare(node: py_trees.behaviour.Behaviour, contract: StateContract) -> None:
    """Attach `contract` to `node` (the root of the subtree that needs it)."""
    setattr(node, _ATTR, contract)


def contract_of(node: py_trees.behaviour.Behaviour) -> StateContract | None:
    """The contract `declare` attached to `node`, if any (any node: plain py_trees ones too)."""
    contract = getattr(node, _ATTR, None)
    return contract if isinstance(contract, StateContract) else None


def contracts(root: py_trees.behaviour.Behaviour) -> Iterable[StateContract]:
    for node in root.iterate():
        contract = contract_of(node)
        if contract is not None:
            yield contract


def check_contract(schema: type[BaseModel], root: py_trees.behaviour.Behaviour, *, hint: str = "") -> None:
    """Raise StateContractError naming every field `schema` lacks for the subtrees of `root`;
    `hint` is the remedy the tree's maker suggests (a preset: subclass its state class)."""
    spec = schema_spec(schema)
    problems: list[str] = []
    for contract in contracts(root):
        missing = [key for key in contract.keys if key not in spec.by_key]
        if missing:
            problems.append(f"{contract.owner} needs the fields {', '.join(missing)}")
        if contract.namespace is not None and not spec.allows_extra:
            problems.append(
                f"{contract.owner} writes namespace {contract.namespace!r}, which needs "
                "model_config = ConfigDict(extra='allow')"
            )
    if problems:
        raise StateContractError(
            f"state schema {schema.__name__} does not fit the tree: {'; '.join(dict.fromkeys(problems))}. "
            f"{f'{hint}, or add' if hint else 'Add'} the fields (a preset's keys map a logical key to "
            "another field name)"
        )


def complete_schema(
    schema: type[BaseModel], root: py_trees.behaviour.Behaviour, supplier: type[BaseModel]
) -> type[BaseModel]:
    """`schema`, or — when it lacks keys the subtrees of `root` need — a subclass of it adding
    them as `supplier` declares them (reducers, lifetimes, defaults, aliases), and allowing the
    extra keys namespaced subtrees write (unless the schema sets `extra` itself).

    A user's schema then declares only what the user cares about (the primary spec's minimal
    `ReActState`: task, messages, done, final_answer, actions, rounds, streaming_output); the
    preset's bookkeeping (usage, counters, approvals) is added here. Keys `supplier` does not
    have either stay missing: `check_contract` names them.
    """
    spec = schema_spec(schema)
    supplied = schema_spec(supplier).by_key
    needed: set[str] = set()
    namespaced = False
    for contract in contracts(root):
        needed.update(key for key in contract.keys if key not in spec.by_key and key in supplied)
        namespaced = namespaced or (contract.namespace is not None and not spec.allows_extra)
    namespaced = namespaced and "extra" not in schema.model_config  # an explicit choice stands
    if not needed and not namespaced:
        return schema
    return _completed(schema, supplier, frozenset(supplied[key].name for key in needed), namespaced)


@cache
def _completed(
    schema: type[BaseModel], supplier: type[BaseModel], names: frozenset[str], extra: bool
) -> type[BaseModel]:
    """One class per (schema, additions): states of it compare, pickle and restore alike."""
    fields = {name: supplier.model_fields[name] for name in sorted(names)}
    body: dict[str, Any] = {
        "__module__": schema.__module__,
        "__qualname__": schema.__qualname__,
        "__annotations__": {name: _annotation(info) for name, info in fields.items()},
        **{name: _without_metadata(info) for name, info in fields.items()},
    }
    if extra:
        body["model_config"] = ConfigDict(extra="allow")
    return type(schema.__name__, (schema,), body)


def _annotation(info: FieldInfo) -> Any:
    """The field's type with its metadata (reducer, `Ephemeral`) as `Annotated` carries it."""
    return Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation


def _without_metadata(info: FieldInfo) -> FieldInfo:
    """`info`'s default and alias alone: its metadata travels in the annotation."""
    copied = copy.copy(info)
    copied.metadata = []
    return copied
