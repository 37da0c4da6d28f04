"""Every body of the HTTP API as a pydantic model: what each route takes and answers.

Requests are validated with these models (a bad body is a 422 naming the field); responses are
built through them, and the route table (`_routes`) names each route's pair, so the OpenAPI
document (`_openapi`) is generated from the same models the routes use, never written twice.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..bt._runner import RunStatus as RunnerStatus
from ..checkpoint._history import CheckpointInfo
from ..checkpoint._recordings import StoredRecording

ServedRunStatus = Literal[RunnerStatus, "cancelled"]
"""A served run's status: the runner's (`bt._runner.RunStatus`, the one vocabulary), and
`cancelled` (`POST /api/runs/{id}/cancel`)."""


MAX_SEQ = 2**63 - 1
"""The largest version number a store can hold (SQLite and PostgreSQL integers are 64-bit)."""


def _thread_id() -> Any:
    """A conversation's id, where a body may name one."""
    return Field(default=None, min_length=1, max_length=200)


# ---------------------------------------------------------------------- requests
class RunRequest(BaseModel):
    """`POST /api/runs`: a question, optionally continuing the conversation `thread_id`;
    `from_checkpoint` continues that thread's version `seq` instead of its newest (a fork: the
    later versions stay; needs a server with a checkpoint store)."""

    model_config = ConfigDict(extra="forbid")

    input: str = Field(min_length=1)
    thread_id: str | None = _thread_id()
    from_checkpoint: int | None = Field(default=None, ge=0, le=MAX_SEQ, strict=True)
    """Strict: `true` and `"1"` are refused (422), not taken for version 1."""

    @model_validator(mode="after")
    def _forks_name_a_thread(self) -> RunRequest:
        if self.from_checkpoint is not None and self.thread_id is None:
            raise ValueError("from_checkpoint names a version of a thread: give its thread_id too")
        return self


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
    thread_id: str | None = _thread_id()
    arguments: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _edits_are_approvals(self) -> DecisionRequest:
        if self.arguments is not None and self.decision != "approve":
            raise ValueError("arguments come with an approval (decision 'approve'), not a denial")
        return self


# ---------------------------------------------------------------------- responses
class FieldProblem(BaseModel):
    field: str
    message: str


class ErrorBody(BaseModel):
    """Every refusal: `error` says what and why (see `server._errors`); a 422 names the fields;
    a 409 may add context (`decision`, `thread_id`)."""

    model_config = ConfigDict(extra="allow")

    error: str
    detail: list[FieldProblem] | None = None


class Health(BaseModel):
    """`GET /healthz`."""

    status: Literal["ok"]
    runs: int
    active: int


class RunCreated(BaseModel):
    """`POST /api/runs`: the run started (follow `GET /api/runs/{run_id}/events`)."""

    run_id: str
    thread_id: str


class PendingApprovalItem(BaseModel):
    """One tool call waiting for a human; `id` is the approval id within `thread_id`."""

    id: str
    run_id: str | None
    """None: a thread the store holds suspended (saved by an earlier server); deciding it
    resumes the thread as a new run."""
    thread_id: str
    call_id: str
    tool: str
    arguments: Any
    reason: str | None = None
    policy: str | None = None
    decided: bool
    kind: Literal["approval", "client_tool", "breakpoint"] = "approval"
    """Whom it waits for: a human's decision, or the result of a call the OpenAI-compatible
    endpoint's client runs (answered by its next request's tool messages)."""


class ServedInterruption(BaseModel):
    """One thing a served run waits for someone to answer (see `jianmu_like.guard.Interruption`);
    `payload` is the kind's record, secrets redacted."""

    id: str
    kind: str
    """approval, client_tool, question (a registered kind)."""
    run_id: str | None
    """None: a thread the store holds suspended (an earlier server's run); deciding it resumes
    the thread as a new run."""
    thread_id: str | None = None
    namespace: str | None = None
    requested_at: float
    decided: bool = False
    """An approval decided while others of its run still wait (the run resumes once all are)."""
    expired: str | None = None
    """A question read from the store whose asking process has ended: why it cannot be
    answered (an answer is a 409 saying to resume the thread). None: it waits."""
    payload: dict[str, Any]
    """An approval: tool, arguments, reason, policy, parameters...; a question: server, message,
    requested_schema, url, kind (elicitation | sampling), details."""


class RunSummary(BaseModel):
    """`GET /api/runs/{run_id}`: a run's status, answer, usage and what it waits for."""

    run_id: str
    thread_id: str
    status: ServedRunStatus
    input: str
    answer: str | None
    usage: dict[str, Any] | None
    termination: dict[str, Any] | None
    error: str | None
    iterations: int
    elapsed: float
    pending_approvals: list[PendingApprovalItem]
    events: int


class RunList(BaseModel):
    """`GET /api/runs[?status=&thread_id=]`: the runs kept, oldest first."""

    runs: list[RunSummary]


class RunMessages(BaseModel):
    """`GET /api/runs/{run_id}/messages`: the conversation at the run's end or suspension."""

    run_id: str
    thread_id: str
    messages: list[dict[str, Any]]


class ModelRequestSent(BaseModel):
    """One model call of a run, as the model was sent it (redacted like a recording's)."""

    n: int
    """1 for the run's first model call: the loop's iteration, for a ReAct agent."""
    node: str | None
    """The path of the node that made the call, when known."""
    request: dict[str, Any]


class RunRequests(BaseModel):
    """`GET /api/runs/{run_id}/requests`: what each of the run's model calls sent, in order."""

    run_id: str
    requests: list[ModelRequestSent]


class InjectQueued(BaseModel):
    """`POST /api/runs/{run_id}/inject`: the follow-up is queued for the next iteration."""

    run_id: str
    queued: int


class CancelAccepted(BaseModel):
    """`POST /api/runs/{run_id}/cancel`: the run is being halted (its `done` says cancelled)."""

    run_id: str
    status: Literal["cancelling"]


class ApprovalList(BaseModel):
    """`GET /api/approvals`: every pending approval of the server's runs."""

    approvals: list[PendingApprovalItem]


class DecisionResult(BaseModel):
    """`POST /api/approvals/{approval_id}`: the decision is taken; the run's status."""

    run_id: str | None
    """None: a stored thread that still waits for other decisions (it resumes once all are)."""
    status: ServedRunStatus


class TreeNode(BaseModel):
    """One node of the agent's tree; `id` is its index path ("0", "0.1"), as node events name it."""

    id: str
    name: str
    type: str
    kind: Literal["sequence", "selector", "parallel", "composite", "decorator", "condition", "action"]
    """What the console's drawing shapes the node as (Groot2's classes of node)."""
    status: str
    namespace: str | None
    children: list[TreeNode]


class AgentTree(BaseModel):
    """`GET /api/agent`: the served agent's tree, and whether the server keeps a checkpoint
    store (then `/api/threads` lists its conversations and a run can fork a saved version)."""

    tree: TreeNode
    checkpoints: bool
    models: list[str] = []
    """The model(s) that answer, with their server or embedded backend (`qwen3 at
    http://127.0.0.1:8080/v1 (llama.cpp)`); the embedded model says why it was chosen."""


class ThreadList(BaseModel):
    """`GET /api/threads`: every conversation the server's checkpoint store keeps, with its
    newest version."""

    threads: list[CheckpointInfo]


class ThreadHistory(BaseModel):
    """`GET /api/threads/{id}/history`: the thread's kept versions, newest first (`parent_seq`
    shows where a run continued an older version)."""

    thread_id: str
    versions: list[CheckpointInfo]


class ThreadRecordings(BaseModel):
    """`GET /api/threads/{id}/recordings`: the thread's runs kept as recordings, newest first
    (`keep_recordings`; each one's JSON Lines at `/api/threads/{id}/recordings/{run_id}`)."""

    thread_id: str
    recordings: list[StoredRecording]


class NodeState(BaseModel):
    """A node's status in a saved version: `id` as in `GET /api/agent`, `path` its names."""

    id: str | None
    """None for a node the served tree does not have (built at run time, e.g. a plan step)."""
    path: str
    status: str


class CheckpointState(BaseModel):
    """`GET /api/threads/{id}/checkpoints/{seq}`: one saved version: its messages, the tree's
    statuses and the approvals it waited for (fork from it: `POST /api/runs` with `thread_id`
    and `from_checkpoint`)."""

    version: CheckpointInfo
    messages: list[dict[str, Any]]
    nodes: list[NodeState]
    pending_approvals: list[dict[str, Any]]


class ModelCard(BaseModel):
    id: str
    object: Literal["model"]
    created: int
    owned_by: str


class ModelList(BaseModel):
    """`GET /v1/models`: the served agent, as a model."""

    object: Literal["list"]
    data: list[ModelCard]


class ChatCompletion(BaseModel):
    """`POST /v1/chat/completions` without `stream`: the agent's final answer (with `stream`:
    `text/event-stream` of chat.completion.chunk objects, then `[DONE]`)."""

    model_config = ConfigDict(extra="allow")

    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[dict[str, Any]]
    usage: dict[str, int]
    run_id: str
    thread_id: str


class OpenAPIDocument(BaseModel):
    """`GET /openapi.json`: this API, as OpenAPI 3.1."""

    model_config = ConfigDict(extra="allow")

    openapi: str
    info: dict[str, Any]
    paths: dict[str, Any]
    components: dict[str, Any]
