"""Telemetry event shape and the names of the events the framework emits."""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, Field

REPLY_STARTED = "reply.started"
MODEL_CALL_STARTED = "model.call.started"
MODEL_CALL_RETRY = "model.call.retry"
TEXT_DELTA = "text.delta"
TEXT_RESET = "text.reset"
"""The text deltas a model call streamed so far are void: its attempt failed mid-stream (a cut
connection, a stream without a finish reason) and a retry or the next model starts the text
over. Data has model, attempt, discarded (characters) and error."""
MODEL_CALL_COMPLETED = "model.call.completed"
MODEL_CALL_FAILED = "model.call.failed"
REPLY_COMPLETED = "reply.completed"
TOOL_CALL_STARTED = "tool.call.started"
TOOL_CALL_COMPLETED = "tool.call.completed"
TOOL_CALL_FAILED = "tool.call.failed"
TOOL_PROGRESS = "tool.progress"
"""A running tool reported progress (an MCP server's notifications/progress): progress, total, message."""
MCP_LOG = "mcp.log"
"""An MCP server's log notification: server, level, logger, data."""
ELICITATION_REQUESTED = "elicitation.requested"
"""An MCP server asks the user for input (elicitation/create): request (id, server, message,
requested_schema, url); answer it with the provider's `respond`."""
ELICITATION_RESOLVED = "elicitation.resolved"
"""An elicitation was answered: id, server, action (accept | decline | cancel)."""
MCP_SAMPLING = "mcp.sampling"
"""An MCP server asked the agent's model for a completion (sampling/createMessage): server,
status (answered | refused | failed), max_tokens, model_hints, and model and usage or reason."""
APPROVAL_REQUESTED = "approval.requested"
APPROVAL_RESOLVED = "approval.resolved"
LOOP_ITERATION = "loop.iteration"
LOOP_TERMINATED = "loop.terminated"
NODE_FAILED = "node.failed"
"""A node raised (or its model call failed for good): data has kind, error_type, error."""
OUTPUT_VALIDATED = "output.validated"
OUTPUT_INVALID = "output.invalid"
"""A final answer did not match the agent's output type: data has error and retry (re-asked)."""
PHASE = "phase"
"""A phase of an agent's work begins or ends: data has phase (e.g. "synthesizing") and status
(started | completed | failed)."""
ANSWER_REJECTED = "answer.rejected"
"""The answer-quality check rejected a final answer: data has problem (empty | too_short |
repeat | tool_call_as_text) and retry (re-asked, else accepted as it is)."""
ANSWER_FALLBACK = "answer.fallback"
"""A run stopped without an answer and wrote a fallback one: data has reason and answer."""
CONTEXT_COMPACTED = "context.compacted"
"""A request was compacted to fit the context window (the server's `compact` channel): data has
messages_before/after, tokens_before/after, budget, window, strategy (summarize | drop | cut),
summarized, dropped, cut_tool_results, over_budget, tokenizer."""
INJECT = "inject"
"""A follow-up injected into a run (`Agent.inject`): data has status (queued | applied |
dropped) and content (applied: the merged `[USER INTERRUPT]` message, with count and
held_back_answer)."""
ARTIFACT = "artifact"
"""A tool produced an artifact: data has tool, call_id and artifact (the whole `Artifact` as a
dict: name, mime_type, content, path, summary); the model saw only its placeholder."""
RUN_STARTED = "run.started"
RUN_RESUMED = "run.resumed"
RUN_COMPLETED = "run.completed"


class Event(BaseModel):
    """One telemetry event. `node` is the emitting node's path, `namespace` its state namespace,
    so events of nested or parallel agents stay distinguishable."""

    type: str
    node: str | None = None
    namespace: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    ts: float = Field(default_factory=time.time)
    run_id: str | None = None
