"""Request bodies of the HTTP API, validated with pydantic so a bad body is a 422 naming the field,
and the bodies of its thread routes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..checkpoint.history import CheckpointInfo


class RunRequest(BaseModel):
    """`POST /api/runs`: a question, optionally continuing the conversation `thread_id`."""

    model_config = ConfigDict(extra="forbid")

    input: str = Field(min_length=1)
    thread_id: str | None = Field(default=None, min_length=1, max_length=200)


class InjectRequest(BaseModel):
    """`POST /api/runs/{run_id}/inject`: a follow-up for a run in progress."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1)


class DecisionRequest(BaseModel):
    """`POST /api/approvals/{approval_id}`: a human's decision on one pending tool call;
    `thread_id` names the conversation (needed only when the id waits in several)."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["approve", "deny"]
    reason: str = ""
    thread_id: str | None = Field(default=None, min_length=1, max_length=200)


class ThreadList(BaseModel):
    """`GET /api/threads`: every conversation the server's checkpoint store keeps, with its
    newest version."""

    threads: list[CheckpointInfo]


class ThreadHistory(BaseModel):
    """`GET /api/threads/{id}/history`: the thread's kept versions, newest first (`parent_seq`
    shows where a run continued an older version)."""

    thread_id: str
    versions: list[CheckpointInfo]
