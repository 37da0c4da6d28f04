"""The names workers and clients must agree on: application, workflow, queues, topics, events.

They are the contract between processes that never import each other's code (a `submit` from a
laptop, workers on other machines): change one and old runs are no longer found or recovered.
"""

from __future__ import annotations

import re
from pathlib import Path

APP_NAME = "jianmu_like"
"""The DBOS application name (owner of the queues in the system database)."""
APP_VERSION = "jianmu_like-durable-1"
"""Fixed rather than DBOS's hash of the workflow code, so every worker (and `recover`) agrees on
which pending runs it may take over; bump it when the workflow's steps change shape."""
WORKFLOW_NAME = "jianmu_like.agent_run"
MODEL_STEP = "jianmu.model_call"
TOOL_STEP = "jianmu.tool_call"
APPROVAL_TOPIC = "jianmu.approval"
"""Messages on this topic decide pending approvals of a run (see DurableClient.approve)."""
PENDING_EVENT = "jianmu.pending_approvals"
"""The run's pending approvals (a list of Approval dicts; empty when none), set while it waits."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def agent_key(agent_file: str | Path) -> str:
    """The name an agent file is known by across machines: its file name without suffix (paths
    differ between hosts; the file name is what a deployment keeps)."""
    stem = Path(agent_file).stem
    return _UNSAFE.sub("-", stem).strip("-") or "agent"


def queue_name(agent_file: str | Path) -> str:
    """The queue of an agent file's runs: one per agent, so workers of different agents can
    share a database without taking each other's runs."""
    return f"jianmu.{agent_key(agent_file)}"
