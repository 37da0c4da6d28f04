"""Wiring of a tree agent file: which namespaces exist, and whether every reference resolves.

A template placeholder that names nothing (`{tsk}`) or an `output:` namespace that no agent
writes does not fail at run time: it renders empty and the run "succeeds" with no answer. So
these are checked with the file, before any model is called, with did-you-mean suggestions.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._base.names import did_you_mean
from .._base.sources import Loc
from ..presets.react._state import ReActState
from ._kinds import AGENT_KINDS
from ._spec import AgentFileSpec, PresetRefSpec, TreeNodeSpec

RUN_INPUTS = ("task", "messages")
"""Top-level keys every run provides (the question, and the conversation)."""

AGENT_KEYS = frozenset(
    [*ReActState.model_fields, *(f.alias for f in ReActState.model_fields.values() if f.alias)]
)
"""Keys a ReAct agent writes into its namespace."""

PresetResolver = Callable[[Path, PresetRefSpec], tuple[Path, AgentFileSpec] | None]


@dataclass
class Wiring:
    """What a tree produces (keys by namespace; None is the top level) and the templates and
    conditions that read it, each with its file and key path."""

    produced: dict[str | None, set[str]] = field(default_factory=dict)
    templates: list[tuple[Path, Loc, str]] = field(default_factory=list)

    def add(self, namespace: str | None, keys: set[str] | frozenset[str]) -> None:
        self.produced.setdefault(namespace, set()).update(keys)


def collect(file: Path, spec: AgentFileSpec, resolve: PresetResolver) -> Wiring:
    """Walk the tree of `spec` (and the agent files it references)."""
    wiring = Wiring()
    wiring.add(None, {*RUN_INPUTS, *spec.inputs})
    if spec.tree is not None:
        _walk(file, spec.tree, ("tree",), wiring, resolve, seen={file})
    return wiring


def _walk(
    file: Path, node: TreeNodeSpec, loc: Loc, wiring: Wiring, resolve: PresetResolver, seen: set[Path]
) -> None:
    kind = node.kind
    body: Any = getattr(node, kind)
    here = (*loc, kind)
    if kind in AGENT_KINDS:
        wiring.add(body.namespace or AGENT_KINDS[kind].namespace, AGENT_KEYS)
        if body.input is not None:
            wiring.templates.append((file, (*here, "input"), body.input))
    elif kind == "condition":
        reference = f"{body.namespace}.{body.key}" if body.namespace else body.key
        wiring.templates.append((file, (*here, "key"), "{" + reference + "}"))
    elif kind == "message":
        wiring.add(body.namespace, {"messages"})
        wiring.templates.append((file, (*here, "content"), body.content))
    elif kind == "a2a_agent":
        wiring.add(body.namespace, {body.output_key})
        if body.message_key is not None:
            reference = f"{body.namespace}.{body.message_key}" if body.namespace else body.message_key
            wiring.templates.append((file, (*here, "message_key"), "{" + reference + "}"))
    elif kind == "preset":
        found = resolve(file, body)
        if found is not None:
            target, referenced = found
            if referenced.tree is None:
                namespace = preset_namespace(body, referenced)
                wiring.add(namespace, AGENT_KEYS)
                wiring.add(namespace, {"messages"} if body.input is not None else set())
            elif target not in seen:
                _walk(target, referenced.tree, ("tree",), wiring, resolve, seen | {target})
        if body.input is not None:
            wiring.templates.append((file, (*here, "input"), body.input))
    for index, child in enumerate(getattr(body, "children", None) or []):
        _walk(file, child, (*here, "children", index), wiring, resolve, seen)
    if kind == "loop":
        _walk(file, body.child, (*here, "child"), wiring, resolve, seen)


def preset_namespace(ref: PresetRefSpec, referenced: AgentFileSpec) -> str | None:
    """Where the agent of a `preset:` node writes: the reference's namespace, else the file's,
    else its kind's default (a supervisor's `supervisor`); a referenced tree writes its own."""
    if ref.namespace is not None:
        return ref.namespace
    kind = AGENT_KINDS.get(referenced.kind)
    return referenced.namespace or (kind.namespace if kind is not None else None)


def template_problems(template: str, wiring: Wiring) -> list[str]:
    """Why placeholders of `template` would render empty (one line each), or []."""
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError:
        return []  # malformed: reported by MessageNode's own check
    namespaces = sorted(ns for ns in wiring.produced if ns is not None)
    top = wiring.produced.get(None, set())
    out: list[str] = []
    for name in fields:
        head, dot, rest = name.partition(".")
        head = head.split("[", 1)[0]
        key = rest.split(".", 1)[0].split("[", 1)[0]
        if not head:
            out.append(f"{{{name}}}: positional placeholders are not supported; name a key, e.g. {{task}}")
        elif not dot:
            if head in top:
                continue
            if head in namespaces:
                out.append(f"{{{name}}} is a namespace; name one of its keys, e.g. {{{head}.final_answer}}")
                continue
            out.append(f"{{{name}}}: no such input key" + _suggest(head, [*sorted(top), *namespaces]))
        elif head not in wiring.produced:
            known = (
                f" (namespaces: {', '.join(namespaces)})" if namespaces else " (the tree has no namespaces)"
            )
            out.append(
                f"{{{name}}}: no node writes namespace {head!r}" + (_suggest(head, namespaces) or known)
            )
        elif key not in wiring.produced[head]:
            out.append(
                f"{{{name}}}: nothing in namespace {head!r} writes {key!r}"
                + _suggest(key, sorted(wiring.produced[head]))
            )
    return out


def output_problem(spec: AgentFileSpec, wiring: Wiring) -> str | None:
    """Why the tree's answer would be empty, or None."""
    answering = sorted(
        ns for ns, keys in wiring.produced.items() if ns is not None and "final_answer" in keys
    )
    if spec.output is None:
        if "final_answer" in wiring.produced.get(None, set()):
            return None
        choices = f"; set it to one of: {', '.join(answering)}" if answering else ""
        return f"not set, and no agent of the tree answers at the top level{choices}"
    if spec.output in answering:
        return None
    return f"no agent of the tree writes an answer in namespace {spec.output!r}" + (
        _suggest(spec.output, answering) or f" (namespaces with an agent: {', '.join(answering) or 'none'})"
    )


_suggest = did_you_mean
