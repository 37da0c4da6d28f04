"""Run input for a tree: where each key goes, and whether any node of the tree will read it.

A plain `{"messages": [...]}` given to a tree of namespaced agents lands at the top level, where
no agent looks: every agent then calls the model without a question and the run "succeeds". So
input is addressed explicitly — `"<namespace>.<key>"` writes `key` in that namespace, a plain key
goes to the agent's own namespace — and input that no node reads is an error before the run
starts. The readers come from the `StateContract`s of the tree (`reads`); a tree with a leaf that
declares nothing (a plain py_trees behaviour) may read anything, so its input is not checked.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import py_trees

from ..errors import JianmuError
from ._contract import contract_of
from ._schema import SchemaSpec

Route = tuple[str | None, str]
"""(namespace or None for the top level, key)."""

_CACHE_ATTR = "_jianmu_tree_inputs"
_RESOLVED_READS: dict[tuple[tuple[str, ...], str | None], tuple[SchemaSpec, frozenset[Route]]] = {}
"""Resolved contract reads by (keys, namespace), with the schema spec they were resolved for."""
_RESOLVED_READS_SIZE = 256


class InputError(ValueError, JianmuError):
    """Run input that no node of the tree reads, or addressed to a namespace the tree lacks."""


@dataclass(frozen=True)
class TreeInputs:
    """The namespaces a tree uses and the (namespace, key) pairs its nodes read (None: unknown)."""

    namespaces: frozenset[str]
    reads: frozenset[Route] | None

    @classmethod
    def of(cls, root: py_trees.behaviour.Behaviour, spec: SchemaSpec) -> TreeInputs:
        """Collected once per tree (cached on the root; a clone of the tree shares it)."""
        # getattr/setattr, never `root.__dict__`: reading an instance's `__dict__` moves its
        # attributes out of CPython 3.11's inline values for good, and the root is ticked on
        # every iteration (tests/nodes/test_react_nodes.py keeps the loop's nodes inline).
        cached = getattr(root, _CACHE_ATTR, None)
        if isinstance(cached, TreeInputs):
            return cached
        namespaces: set[str] = set()
        reads: set[Route] = set()
        declared = _collect(root, False, spec, namespaces, reads)
        namespaces.update(ns for ns, _ in reads if ns is not None)
        found = cls(frozenset(namespaces), frozenset(reads) if declared else None)
        setattr(root, _CACHE_ATTR, found)
        return found

    def route(
        self,
        input_data: Mapping[str, Any],
        namespace: str | None,
        spec: SchemaSpec,
        accepted: Iterable[str] = (),
    ) -> dict[str | None, dict[str, Any]]:
        """Input grouped by namespace; raises InputError naming every key no node reads.

        `namespace` receives plain keys; `accepted` are plain keys taken even if nothing reads
        them (e.g. an agent file's declared inputs)."""
        allowed = set(accepted)
        routed: dict[str | None, dict[str, Any]] = {}
        problems: list[str] = []
        for key, value in input_data.items():
            if key in self.namespaces and isinstance(value, Mapping) and key not in spec.by_key:
                first = next(iter(value), "messages")
                problems.append(
                    f"{key!r} is a namespace: address its keys as '{key}.<key>', e.g. {f'{key}.{first}'!r}"
                )
                continue
            ns, name = resolve_key(key, namespace, spec)
            routed.setdefault(ns, {})[name] = value
            if self.reads is None or key in allowed or (ns, name) in self.reads:
                continue
            problems.append(self._unread(key, ns, name))
        if problems:
            raise InputError("input no node of the tree will read: " + "; ".join(problems))
        return routed

    def _unread(self, key: str, ns: str | None, name: str) -> str:
        reads = self.reads or frozenset()
        known = ", ".join(sorted(self.namespaces)) or "none"
        if ns is not None and ns not in self.namespaces:
            close = difflib.get_close_matches(ns, sorted(self.namespaces), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            return f"{key!r}: the tree has no namespace {ns!r}{hint} (namespaces: {known})"
        readers = sorted(n for n, k in reads if k == name and n is not None and n != ns)
        where = f"namespace {ns!r}" if ns is not None else "the top level"
        text = f"{key!r}: no node reads {name!r} at {where}"
        if readers:
            text += (
                f"; it is read in namespace(s) {', '.join(readers)}: address it as {f'{readers[0]}.{name}'!r}"
            )
        else:
            text += f" (namespaces of the tree: {known})"
        return text


def resolve_key(key: str, namespace: str | None, spec: SchemaSpec) -> Route:
    """Where `key` lives: a schema key (e.g. "llm.usage") or a plain key in `namespace`,
    `"<ns>.<key>"` in namespace `<ns>`."""
    if key in spec.by_key or "." not in key:
        return namespace, key
    ns, name = key.rsplit(".", 1)
    return ns, name


def _resolved_reads(keys: Iterable[str], namespace: str | None, spec: SchemaSpec) -> frozenset[Route]:
    """Where a contract's read keys live; remembered, as every tree built by one preset declares
    the same keys (a fresh agent's first run would resolve them all again)."""
    if type(keys) is not tuple:
        return frozenset(resolve_key(key, namespace, spec) for key in keys)
    hit = _RESOLVED_READS.get((keys, namespace))
    if hit is not None and hit[0] is spec:
        return hit[1]
    found = frozenset(resolve_key(key, namespace, spec) for key in keys)
    if len(_RESOLVED_READS) >= _RESOLVED_READS_SIZE:
        _RESOLVED_READS.clear()
    _RESOLVED_READS[(keys, namespace)] = (spec, found)
    return found


def _collect(
    node: py_trees.behaviour.Behaviour,
    covered: bool,
    spec: SchemaSpec,
    namespaces: set[str],
    reads: set[Route],
) -> bool:
    """Add the namespaces and reads the contracts under `node` declare (one walk of the tree);
    return whether every leaf under `node` is covered by a contract that declares its reads."""
    contract = contract_of(node)
    if contract is not None:
        namespace = contract.namespace
        if namespace is not None:
            namespaces.add(namespace)
        if contract.reads:
            reads.update(_resolved_reads(contract.reads, namespace, spec))
        covered = covered or contract.reads is not None
    children: list[py_trees.behaviour.Behaviour] = getattr(node, "children", None) or []
    if not children:
        return covered
    declared = True
    for child in children:
        declared = _collect(child, covered, spec, namespaces, reads) and declared
    return declared
