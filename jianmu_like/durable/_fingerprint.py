"""What a durable run was started with: a fingerprint of the agent file and the tree it built.

A run records it as its first step; a worker recovering the run with a different agent (the file
edited between the crash and the recovery: a tool removed, a prompt changed) fails it at once,
before any step, rather than replaying a record made by another tree (which would run finished
calls again, or hand outcomes to calls they do not belong to, before DBOS noticed).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import py_trees

from ..bt._progress import tree_fingerprint
from ..errors import JianmuError
from ..tools._toolset import toolset_of


class AgentChangedError(RuntimeError, JianmuError):
    """A recovered run reached a worker whose agent is not the one the run started with."""


def agent_fingerprint(spec: dict[str, Any] | None, root: py_trees.behaviour.Behaviour | None) -> str:
    """sha256 of the agent file's resolved content (its validated spec: comments and layout do
    not count) plus the tree's shape and the tools of every tool set in it."""
    tools: list[list[str]] = []
    if root is not None:
        for node in root.iterate():
            toolset = toolset_of(node)
            if toolset is not None:
                tools.append([node.name, *sorted(toolset.names())])
    raw = json.dumps(
        {"spec": spec, "tree": tree_fingerprint(root) if root is not None else None, "tools": tools},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(raw.encode()).hexdigest()


def check_fingerprint(run_id: str, recorded: str, current: str) -> None:
    """AgentChangedError unless the run's recorded fingerprint is this worker's."""
    if recorded != current:
        raise AgentChangedError(
            f"run {run_id} started with another version of its agent (fingerprint {recorded[:12]}, "
            f"this worker's is {current[:12]}): the agent file or its tools changed since; nothing "
            "was replayed. Recover it on a worker with the file it started with, or submit it again."
        )
