"""The names workers and clients must agree on: application, workflow, queues, topics, events.

They are the contract between processes that never import each other's code (a `submit` from a
laptop, workers on other machines): change one and old runs are no longer found or recovered.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

APP_NAME = "jianmu_like"
"""The DBOS application name (owner of the queues in the system database)."""
APP_VERSION = "jianmu_like-durable-3"
"""Fixed rather than DBOS's hash of the workflow code, so every worker (and `recover`) agrees on
which pending runs it may take over; bump it when the workflow's steps change shape."""
WORKFLOW_NAME = "jianmu_like.agent_run"
MODEL_STEP = "jianmu.model_call"
TOOL_STEP = "jianmu.tool_call"
FINGERPRINT_STEP = "jianmu.agent_fingerprint"
"""The first step of every run: the fingerprint of the agent it started with (durable._fingerprint)."""
THREAD_LOAD_STEP = "jianmu.thread_load"
"""A threaded run's step loading the thread's newest version (durable._threads)."""
THREAD_SAVE_STEP = "jianmu.thread_save"
"""A threaded run's last step: its final state appended as the thread's next version."""
APPROVAL_TOPIC = "jianmu.approval"
"""Messages on this topic decide pending approvals of a run (see DurableClient.approve)."""
PENDING_EVENT = "jianmu.pending_approvals"
"""The run's pending approvals (a list of Approval dicts; empty when none), set while it waits."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def agent_key(agent_file: str | Path) -> str:
    """The agent file's name without suffix, made safe for a queue name (a label: the queue's
    identity comes from `queue_name`)."""
    stem = Path(agent_file).stem
    return _UNSAFE.sub("-", stem).strip("-") or "agent"


def queue_name(agent_file: str | Path, queue: str | None = None) -> str:
    """The queue of an agent file's runs, never shared by two files: `jianmu.<queue>` when the
    deployment names it (`--queue`: workers and submitters on hosts where the file's path
    differs), otherwise `jianmu.<file name>.<digest of the file's resolved absolute path>`, so
    two files both named `agent.yaml` in different folders never take each other's runs."""
    if queue is not None:
        named = _UNSAFE.sub("-", queue).strip("-")
        if not named:
            raise ValueError(f"queue name {queue!r} has no usable character (letters, digits, _ . -)")
        return f"jianmu.{named}"
    where = str(Path(agent_file).expanduser().resolve())
    return f"jianmu.{agent_key(agent_file)}.{hashlib.sha256(where.encode()).hexdigest()[:12]}"
