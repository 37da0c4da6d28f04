"""Model calls and tool calls as DBOS steps: recorded once, replayed after a crash.

The hooks use the framework's own seams, both context variables set around the whole run: the
model-call hook of `ModelClient.complete` (models._hooks) and the tool-call hook of
`ToolCallRunner` (tools._hooks), which every tool call of every node passes through — also the
nodes a tree builds during the run (a supervisor's sub-agents, a plan's steps). Outside a
workflow no hook is set and calls are plain calls.

Determinism: DBOS numbers steps in the order they *start* within the workflow, and checks each
replayed step's name against its record. Branches of a tree that run concurrently (sub-agents
whose model calls overlap) start their steps in an order that depends on timing, so a recovered
run replaying them could start them in another order. `StepOrder` makes the replay start every
recorded step at its recorded number: a step waits until the number due next is its own; a step
with no record (new work, or the call a crash interrupted) takes a number no record holds. Step
names identify the work (a digest of the model request; the tool, call id and arguments), so no
replayed step is ever handed another's outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from contextvars import ContextVar
from typing import Any, TypeVar

from dbos import DBOS, StepOptions

from ..errors import JianmuError
from ..models._hooks import ModelCall
from ..models._types import ModelEventCallback, ModelRequest, ModelResponse
from ..tools._artifact import Artifact
from ..tools._base import Tool, render_result
from ..tools._call_context import current_tool_call
from ..tools._hooks import ToolInvoke
from ._naming import MODEL_STEP, TOOL_STEP

T = TypeVar("T")

REPLAY_STALL_LIMIT = 300.0
"""Seconds a step may wait for the recorded step due before it to start (on a replay that
diverged, that step never comes: the run fails with ReplayDivergedError instead of hanging)."""


class ReplayDivergedError(RuntimeError, JianmuError):
    """A recovered run does not start the steps its record holds (the tree or its inputs changed)."""


class StepOrder:
    """Hands out DBOS step numbers on a replay in the order the record holds (see the module
    docstring). One per workflow execution; fresh runs have an empty record and never wait."""

    def __init__(self, recorded: dict[int, str]) -> None:
        self._recorded = dict(recorded)
        """Step number → name, of the records no step of this execution has taken yet."""
        self._names = Counter(self._recorded.values())
        self._moved = asyncio.Event()

    @classmethod
    async def load(cls, workflow_id: str) -> StepOrder:
        """The record of `workflow_id` so far (read directly: a DBOS call made as a step would
        replay its first answer)."""
        from dbos._dbos import _get_dbos_instance  # DBOS exposes the record only as a step

        sys_db = _get_dbos_instance()._sys_db
        steps = await asyncio.to_thread(sys_db.list_workflow_steps, workflow_id, load_output=False)
        return cls({int(step["function_id"]): str(step["function_name"]) for step in steps})

    @staticmethod
    def _next() -> int:
        from dbos._context import assert_current_dbos_context  # the workflow's step counter

        return assert_current_dbos_context().function_id + 1

    def _forget_before(self, number: int) -> None:
        """Records passed by steps that took their numbers without asking (DBOS's own: events,
        messages) are no longer due."""
        for passed in [n for n in self._recorded if n < number]:
            self._names[self._recorded.pop(passed)] -= 1

    async def run(self, name: str, func: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
        """Run `func(*args)` as the step `name`, at its recorded number on a replay."""
        options: StepOptions = {"name": name}
        if not self._recorded:  # a fresh run, or the replay is past its record
            return await DBOS.run_step_async(options, func, *args)
        reservation = await self._turn(name)
        result: T = await reservation.run_async(options, func, *args)
        return result

    async def _turn(self, name: str) -> Any:
        started = time.monotonic()
        last = -1
        while True:
            number = self._next()
            self._forget_before(number)
            due = self._recorded.get(number)
            if due == name or (due is None and self._names[name] <= 0):
                reservation = DBOS.reserve_step()  # draws `number`, synchronously after the check
                if due is not None:
                    del self._recorded[number]
                    self._names[name] -= 1
                moved, self._moved = self._moved, asyncio.Event()
                moved.set()
                return reservation
            if number != last:
                started, last = time.monotonic(), number
            elif time.monotonic() - started > REPLAY_STALL_LIMIT:
                raise ReplayDivergedError(
                    f"the recovered run diverged from its record: step {name!r} waited "
                    f"{REPLAY_STALL_LIMIT:g} s for step {number} ({due or 'unrecorded'}) to start"
                )
            # Woken by the next reservation; DBOS's own steps (events, messages) advance unannounced.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._moved.wait(), 0.2)


_order: ContextVar[StepOrder | None] = ContextVar("jianmu_durable_step_order", default=None)


def use_step_order(order: StepOrder) -> None:
    """Make `order` number the steps of this workflow execution (set in the workflow's task)."""
    _order.set(order)


async def _run_step(name: str, func: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
    order = _order.get()
    if order is None:
        return await DBOS.run_step_async({"name": name}, func, *args)
    return await order.run(name, func, *args)


def _digest(value: Any) -> str:
    raw = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


async def _model_step(
    call: ModelCall, request: ModelRequest, on_event: ModelEventCallback | None
) -> ModelResponse:
    return await call(request, on_event)


async def durable_model_call(
    call: ModelCall, request: ModelRequest, on_event: ModelEventCallback | None
) -> ModelResponse:
    """The model-call hook: one logical call (retries and fallbacks inside) is one step, named
    after what it asks (so two concurrent branches' replies are never swapped)."""
    return await _run_step(f"{MODEL_STEP}:{request_digest(request)}", _model_step, call, request, on_event)


def request_digest(request: ModelRequest) -> str:
    """What a model call asks, as a short digest (a model step's name). The whole request is
    hashed, since two branches' calls may differ only early in their conversations; pydantic's
    own JSON writer does it (fields in declaration order, dicts in insertion order, both the same
    on a replay, which runs the same code on the same recorded data), 4x and more cheaper than
    dumping to Python and sorting keys: this runs once per model call over the whole
    conversation (bench/dbos_floor.py --components)."""
    raw = request.model_dump_json(exclude={"timeout", "stream"}, fallback=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


async def _tool_step(
    invoke: ToolInvoke, tool: Tool, arguments: dict[str, Any]
) -> tuple[str, str | None, list[Artifact]]:
    """Run the tool; the observation, a `finish()` answer and its artifacts are what the step
    records (a replay hands them back without the tool running)."""
    context = current_tool_call()
    workflow, step = DBOS.workflow_id, DBOS.step_id
    if context is not None and workflow is not None and step is not None:
        # Stable across recovery: the same call of the same run gets the same key on any worker.
        context.idempotency_key = f"{workflow}/{step}"
    output: Any = await invoke(tool, arguments)
    text = output if isinstance(output, str) else render_result(output)
    if context is None:
        return text, None, []
    return text, context.final_answer, list(context.artifacts)


async def durable_tool_call(invoke: ToolInvoke, tool: Tool, arguments: dict[str, Any]) -> str:
    """The tool-call hook: each call is one step, named after the tool, the call id and the
    arguments (DBOS refuses a replay that would hand one call's outcome to another)."""
    context = current_tool_call()
    call_id = context.call_id if context is not None else "-"
    name = f"{TOOL_STEP}:{tool.name}:{call_id}:{_digest(arguments)}"
    text, final_answer, artifacts = await _run_step(name, _tool_step, invoke, tool, arguments)
    if context is not None:  # replayed: the tool did not run to say these again
        if final_answer is not None:
            context.final_answer = final_answer
        if artifacts and not context.artifacts:
            context.artifacts.extend(artifacts)
    return text
