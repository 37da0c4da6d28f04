"""Which agents each `guard:` section of an agent file guards.

A tree file has a file-level guard that every agent node without its own inherits, and nodes
that set their own; the checker needs the pairs to check that each rule names a tool of an agent
it guards (fail closed), and the builder to give the inheriting nodes one shared enforcer.
"""

from __future__ import annotations

from typing import Any

from .._base.sources import Loc
from ._kinds import AGENT_KINDS
from ._spec import AgentFileSpec, ReActSpec, TreeNodeSpec

GuardUse = tuple[Loc, dict[str, Any], list[tuple[str, ReActSpec]]]
"""A `guard:` section (its key path), with the agents it guards as (kind, spec)."""


def guard_uses(spec: AgentFileSpec) -> list[GuardUse]:
    """Each guard section of a file with the agents it guards: the file's own agent; in a tree,
    each agent node that sets its own `guard:`, and the file-level guard for every agent node
    that sets none (it is their default)."""
    if spec.kind != "tree" or spec.tree is None:
        return [(("guard",), spec.guard, [(spec.kind, spec)])] if spec.guard is not None else []
    uses: list[GuardUse] = []
    inheritors: list[tuple[str, ReActSpec]] = []
    for loc, kind, body in agent_nodes(spec.tree, ("tree",)):
        if "guard" not in body.model_fields_set:
            inheritors.append((kind, body))
        elif body.guard is not None:
            uses.append(((*loc, "guard"), body.guard, [(kind, body)]))
    if spec.guard is not None:
        uses.insert(0, (("guard",), spec.guard, inheritors))
    return uses


def agent_nodes(node: TreeNodeSpec, loc: Loc) -> list[tuple[Loc, str, ReActSpec]]:
    """Every agent node of a tree (react, supervisor, ...), with its key path and kind."""
    kind = node.kind
    body: Any = getattr(node, kind)
    here = (*loc, kind)
    found: list[tuple[Loc, str, ReActSpec]] = [(here, kind, body)] if kind in AGENT_KINDS else []
    for index, child in enumerate(getattr(body, "children", None) or []):
        found.extend(agent_nodes(child, (*here, "children", index)))
    if kind == "loop":
        found.extend(agent_nodes(body.child, (*here, "child")))
    return found
