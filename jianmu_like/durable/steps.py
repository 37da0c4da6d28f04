"""Model calls and tool calls as DBOS steps: recorded once, replayed after a crash.

The hooks use the framework's own seams: the model-call hook of `ModelClient.complete`
(models.hooks) and the `tool_runner` of every tool-call runner in the tree. Outside a workflow
the steps are plain calls, so an agent with the steps installed still runs anywhere.

Determinism: DBOS numbers steps in the order they *start* within the workflow, and a recovered
run must start them in the same order. The tree is deterministic given the recorded results;
the calls of a parallel batch are started by `asyncio.gather` in call order, and each reaches
its step synchronously (no await before it), so the numbering does not depend on timing. Tool
steps are named after the tool and the call id: a replay that diverged anyway is an error
(DBOS compares names), never one call's outcome handed to another.
"""

from __future__ import annotations

from typing import Any

import py_trees
from dbos import DBOS, StepOptions

from ..models.hooks import ModelCall
from ..models.types import ModelEventCallback, ModelRequest, ModelResponse
from ..nodes.tool_calls import ToolCallRunner, ToolRunner
from ..tools.base import Tool, render_result
from ..tools.call_context import current_tool_call
from .naming import MODEL_STEP, TOOL_STEP


@DBOS.step(name=MODEL_STEP)
async def _model_step(
    call: ModelCall, request: ModelRequest, on_event: ModelEventCallback | None
) -> ModelResponse:
    return await call(request, on_event)


async def durable_model_call(
    call: ModelCall, request: ModelRequest, on_event: ModelEventCallback | None
) -> ModelResponse:
    """The model-call hook: one logical call (retries and fallbacks inside) is one step."""
    return await _model_step(call, request, on_event)


async def _tool_step(
    inner: ToolRunner | None, tool: Tool, arguments: dict[str, Any]
) -> tuple[str, str | None]:
    """Run the tool; the observation and a `finish()` answer are what the step records."""
    context = current_tool_call()
    workflow, step = DBOS.workflow_id, DBOS.step_id
    if context is not None and workflow is not None and step is not None:
        # Stable across recovery: the same call of the same run gets the same key on any worker.
        context.idempotency_key = f"{workflow}/{step}"
    output: Any = await (inner(tool, arguments) if inner is not None else tool.invoke(arguments))
    text = output if isinstance(output, str) else render_result(output)
    return text, context.final_answer if context is not None else None


class DurableToolRunner:
    """A `ToolRunner` that runs each call as a DBOS step (wrapping any runner the node had).

    The step is named after the tool and the call id (both from the recorded model reply), so
    DBOS, which checks each replayed step's name, refuses a replay that would hand one call's
    recorded outcome to another instead of doing it silently."""

    def __init__(self, inner: ToolRunner | None = None) -> None:
        self.inner = inner

    async def __call__(self, tool: Tool, arguments: dict[str, Any]) -> str:
        context = current_tool_call()
        name = f"{TOOL_STEP}:{tool.name}:{context.call_id if context is not None else '-'}"
        options: StepOptions = {"name": name}
        text, final_answer = await DBOS.run_step_async(options, _tool_step, self.inner, tool, arguments)
        if final_answer is not None and context is not None:
            context.final_answer = final_answer  # replayed: the tool did not run to say it again
        return text


def install_tool_steps(root: py_trees.behaviour.Behaviour) -> int:
    """Make every tool call of the tree a step; the number of tool-call runners changed."""
    changed = 0
    for node in root.iterate():
        calls = getattr(node, "calls", None)
        if isinstance(calls, ToolCallRunner) and not isinstance(calls.tool_runner, DurableToolRunner):
            calls.tool_runner = DurableToolRunner(calls.tool_runner)
            changed += 1
    return changed
