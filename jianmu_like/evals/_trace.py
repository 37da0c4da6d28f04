"""What a case's run did, read from its events: the trajectory evaluators' only input.

A run's telemetry events already say everything a trajectory assertion asks about (which tools,
in what order, with which arguments; which nodes; how many model replies and tokens), redacted
like every event, so the trace is built from them rather than from the run's state: it reads the
same for every preset and tree, nested and parallel agents included (`namespace` tells them
apart).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from ..telemetry import events as ev
from ..telemetry.events import AnyEvent


class ToolCallTrace(BaseModel):
    """One tool call of the run, in the order the calls started."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    ok: bool = True
    """False when the call failed or was denied (its error is the observation the model read)."""
    error: str | None = None
    namespace: str | None = None


class RunTrace(BaseModel):
    """The trajectory of one case's run."""

    status: str
    """"success", "failure" or "suspended"."""
    answer: str | None = None
    tool_calls: list[ToolCallTrace] = Field(default_factory=list)
    nodes: list[str] = Field(default_factory=list)
    """Names of the nodes that emitted an event, in the order they first did."""
    iterations: int = 0
    """Model replies (an iteration: a model call and its tool results), every agent of the tree."""
    model_calls: int = 0
    """Logical model calls that completed (retries of one call count once)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    termination: dict[str, Any] | None = None
    error: str | None = None
    elapsed: float = 0.0


def build_trace(
    events: Sequence[AnyEvent],
    *,
    status: str,
    answer: str | None,
    usage: dict[str, Any],
    termination: dict[str, Any] | None,
    error: str | None,
    elapsed: float,
) -> RunTrace:
    """The trace of a run from its events and its result's fields."""
    calls: list[ToolCallTrace] = []
    by_id: dict[str, ToolCallTrace] = {}
    nodes: dict[str, None] = {}
    iterations = model_calls = 0
    for event in events:
        if event.node:
            nodes.setdefault(event.node.rsplit("/", 1)[-1], None)
        data = event.data
        if event.type == ev.TOOL_CALL_STARTED:
            call = ToolCallTrace(
                name=str(data.get("tool")),
                arguments=dict(data.get("arguments") or {}),
                namespace=event.namespace,
            )
            calls.append(call)
            by_id[str(data.get("call_id"))] = call
        elif event.type == ev.TOOL_CALL_FAILED:
            failed = by_id.get(str(data.get("call_id")))
            if failed is None:  # refused before it started (denied, unknown tool, bad arguments)
                failed = ToolCallTrace(
                    name=str(data.get("tool")),
                    arguments=dict(data.get("arguments") or {}),
                    namespace=event.namespace,
                )
                calls.append(failed)
            failed.ok, failed.error = False, str(data.get("error"))
        elif event.type == ev.REPLY_COMPLETED:
            iterations += 1
        elif event.type == ev.MODEL_CALL_COMPLETED:
            model_calls += 1
    return RunTrace(
        status=status,
        answer=answer,
        tool_calls=calls,
        nodes=list(nodes),
        iterations=iterations,
        model_calls=model_calls,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        total_tokens=int(usage.get("total_tokens") or 0),
        termination=termination,
        error=error,
        elapsed=elapsed,
    )
