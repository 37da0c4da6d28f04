"""The task `pydantic-evals` runs for each case: the agent file, loaded afresh, run once.

A case runs live, or replays its `recording` on the agent file (`jianmu_like.replay`: zero model
calls, zero tool side effects, so a CI job scores yesterday's conversations for nothing, and an
agent changed so that it diverges fails the case with the first difference).

A fresh agent per case keeps concurrent cases apart (an `Agent` runs one run at a time, and a
case must not see another's state); loading happens inside the task, so no more agents exist at
once than the concurrency allows. The run's answer is the case's output (the structured output,
as JSON data, for an agent with an `output` type), so `pydantic-evals`' own evaluators
(`EqualsExpected`, `Contains`, ...) read it unchanged; its `RunTrace` is the case attribute
`trace` that the trajectory evaluators read. A run that does not succeed raises
`CaseRunFailed`, which `pydantic-evals` turns into a failed case carrying the reason: a broken
case never stops the others.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .._run.agent import Agent
from ..agentfile._loader import load_agent
from ..models._describe import clients_in
from ..models._messages import Message, human
from ..replay import areplay
from ..telemetry.events import AnyEvent
from ._errors import CaseRunFailed
from ._library import increment_eval_metric, set_eval_attribute
from ._trace import RunTrace, build_trace

TRACE = "trace"
"""The case attribute holding the run's `RunTrace` (as JSON data)."""


class CaseInputs(BaseModel):
    """A case's inputs: the question, optionally the thread before it and other input fields.

    A plain string is the question alone (`inputs: "What is 2 + 2?"`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    question: str = ""
    messages: list[Message] = Field(default_factory=list)
    """Earlier turns of the conversation (OpenAI-shaped messages), sent before the question;
    checked when the dataset loads."""
    input: dict[str, Any] = Field(default_factory=dict)
    """Other input fields the agent file declares (`inputs:`), merged into the run's input."""
    recording: str | None = None
    """A recording of the run (`jianmu-like run --record FILE`; relative to the dataset file):
    the case replays it on the agent file instead of running live (no model, no tool side
    effects); the question, thread and input are the recording's. An agent that changed so the
    replay diverges fails the case with the first difference."""

    @model_validator(mode="before")
    @classmethod
    def _question_alone(cls, value: Any) -> Any:
        return {"question": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _something_to_run(self) -> CaseInputs:
        if not self.question and self.recording is None:
            raise ValueError("a case needs a question (or a recording to replay)")
        if self.recording is not None and (self.question or self.messages or self.input):
            raise ValueError("a replayed case takes its question from the recording: give recording alone")
        return self

    def input_data(self) -> dict[str, Any]:
        """The run's input: the agent file's `task` and `messages` (as `jianmu-like run` gives
        them) plus `input`."""
        return {**self.input, "task": self.question, "messages": [*self.messages, human(self.question)]}


async def close_agent(agent: Agent) -> None:
    """Close the agent's tool providers and its model clients' connections."""
    await agent.aclose()
    for client in clients_in(agent.root):
        await client.aclose()


class AgentTask:
    """Runs a case's inputs through a fresh agent from `agent_file`; `traces` keeps each case's
    trace by its inputs' identity (a failed case's report has no attributes to carry it)."""

    def __init__(
        self,
        agent_file: str | Path,
        *,
        allow_modules: Sequence[str] = (),
        max_ticks: int = 100_000,
        on_done: Callable[[], None] | None = None,
        recordings: Path | None = None,
    ) -> None:
        self.agent_file = Path(agent_file)
        self.recordings = recordings or Path.cwd()
        """Where a case's relative `recording` path starts (the dataset file's folder)."""
        self.allow_modules = tuple(allow_modules)
        self.max_ticks = max_ticks
        self.on_done = on_done
        self.traces: dict[int, RunTrace] = {}
        self.__name__ = self.agent_file.stem  # the task's name in pydantic-evals' report

    async def __call__(self, inputs: CaseInputs) -> Any:
        try:
            return await self._run(inputs)
        finally:
            if self.on_done is not None:
                self.on_done()

    async def _run(self, inputs: CaseInputs) -> Any:
        agent = load_agent(self.agent_file, allow_modules=self.allow_modules)
        events: list[AnyEvent] = []
        started = time.perf_counter()
        if inputs.recording is not None:
            try:
                result = await areplay(
                    self.recordings / inputs.recording, agent=agent, on_event=events.append
                )
            finally:
                await close_agent(agent)
        else:
            unsubscribe = agent.telemetry.subscribe(events.append)
            try:
                result = await agent.run(inputs.input_data(), max_ticks=self.max_ticks)
            finally:
                unsubscribe()
                await close_agent(agent)
        output = result.output
        if isinstance(output, BaseModel):
            output = output.model_dump(mode="json")
        trace = build_trace(
            events,
            status=result.status,
            answer=result.final_answer,
            usage=result.usage.model_dump(),
            termination=result.termination,
            error=result.error,
            elapsed=time.perf_counter() - started,
        )
        self.traces[id(inputs)] = trace
        set_eval_attribute(TRACE, trace.model_dump(mode="json"))
        increment_eval_metric("iterations", trace.iterations)
        increment_eval_metric("tool_calls", len(trace.tool_calls))
        increment_eval_metric("tokens", trace.total_tokens)
        if result.status != "success":
            raise CaseRunFailed(_why(result.status, result.termination, result.error))
        return output if output is not None else result.final_answer


def _why(status: str, termination: dict[str, Any] | None, error: str | None) -> str:
    """The reason a run did not succeed, in one line."""
    if status == "suspended":
        return "the run suspended, waiting for approvals (an evaluation decides none)"
    reason = str((termination or {}).get("reason") or "error")
    return f"the run failed ({reason})" + (f": {error}" if error else "")
