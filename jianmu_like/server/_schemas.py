"""Request bodies of the HTTP API, validated with pydantic so a bad body is a 422 naming the field,
and the bodies of its thread routes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..checkpoint._history import CheckpointInfo


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
    `thread_id` names the conversation (needed only when the id waits in several);
    `arguments` approves the call with corrected arguments (checked against the tool's schema:
    422 when they do not match); a denial's `reason` is what the model reads."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["approve", "deny"]
    reason: str = ""
    thread_id: str | None = Field(default=None, min_length=1, max_length=200)
    arguments: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _edits_are_approvals(self) -> DecisionRequest:
        if self.arguments is not None and self.decision != "approve":
            raise ValueError("arguments come with an approval (decision 'approve'), not a denial")
        return self


class ThreadList(BaseModel):
    """`GET /api/threads`: every conversation the server's checkpoint store keeps, with its
    newest version."""

    threads: list[CheckpointInfo]


class ThreadHistory(BaseModel):
    """`GET /api/threads/{id}/history`: the thread's kept versions, newest first (`parent_seq`
    shows where a run continued an older version)."""

    thread_id: str
    versions: list[CheckpointInfo]
