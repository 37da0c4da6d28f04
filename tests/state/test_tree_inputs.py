"""The inputs a tree reads, from its nodes' contracts: collected once per tree, and the reads
of equal contracts resolved once per schema."""

from __future__ import annotations

import py_trees
import pytest
from pydantic import BaseModel, ConfigDict, Field

from jianmu_like.state._contract import StateContract, declare
from jianmu_like.state._inputs import InputError, TreeInputs
from jianmu_like.state._schema import schema_spec


class WithAlias(BaseModel):
    model_config = ConfigDict(extra="allow")

    usage: int = Field(default=0, alias="llm.usage")


class Plain(BaseModel):
    model_config = ConfigDict(extra="allow")


def _tree(reads: tuple[str, ...], *, undeclared: bool = False) -> py_trees.behaviour.Behaviour:
    root = py_trees.composites.Sequence("root", memory=True)
    leaf = py_trees.behaviours.Success("leaf")
    root.add_children([leaf, py_trees.behaviours.Success("other")] if undeclared else [leaf])
    declare(leaf if undeclared else root, StateContract("test", reads=reads))
    return root


def test_equal_contracts_resolve_their_reads_for_each_schema() -> None:
    reads = ("messages", "llm.usage", "b.messages")
    aliased = TreeInputs.of(_tree(reads), schema_spec(WithAlias))
    plain = TreeInputs.of(_tree(reads), schema_spec(Plain))  # the same tuple, another schema
    assert aliased.reads == {(None, "messages"), (None, "llm.usage"), ("b", "messages")}
    assert plain.reads == {(None, "messages"), ("llm", "usage"), ("b", "messages")}
    assert plain.namespaces == {"llm", "b"} and aliased.namespaces == {"b"}
    again = TreeInputs.of(_tree(reads), schema_spec(WithAlias))
    assert again == aliased


def test_a_leaf_without_a_contract_accepts_any_input() -> None:
    spec = schema_spec(Plain)
    open_tree = TreeInputs.of(_tree(("messages",), undeclared=True), spec)
    assert open_tree.reads is None
    assert open_tree.route({"anything": 1}, None, spec) == {None: {"anything": 1}}
    closed = TreeInputs.of(_tree(("messages",)), spec)
    with pytest.raises(InputError, match="'anything': no node reads 'anything' at the top level"):
        closed.route({"anything": 1}, None, spec)
