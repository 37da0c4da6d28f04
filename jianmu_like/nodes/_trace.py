"""The execution trace of a ReAct run, read back from the history: question, tool calls, results.

No extra state is kept for it: the run's part of the history starts after its question, the
last user message that is neither a corrective message (the tool protocol's, the output check's
or the answer check's, all recognised by their opening words) nor a follow-up injected during the
run (`[USER INTERRUPT] ...`): a follow-up continues the run, so the question and the tool results
before it stay in the trace, and the follow-ups are part of what the run was asked. The synthesis
phase writes the user-facing answer from it; a run that stops without an answer summarises it as
its fallback; the research preset's tool cap counts the run's calls from the same start.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from ..models._messages import Message
from ..models._text_protocol import CORRECTION_PREFIX
from ._compaction import INTERRUPT_PREFIX

ANSWER_CORRECTION_PREFIX = "Your final answer "
"""Opens the corrective messages about a final answer (output validation, answer check)."""

REFLECTION_PREFIX = "[Reflection]"
"""Opens the verdict of a reflection check (`nodes._reflection`), a framework's note too."""

_CORRECTIVE = (CORRECTION_PREFIX, ANSWER_CORRECTION_PREFIX, REFLECTION_PREFIX)


class ToolStep(BaseModel):
    """One tool call of the run and the observation it produced."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: str = ""
    failed: bool = False


class Trace(BaseModel):
    """What a run was asked, which tools it ran with what results, and its answer so far."""

    question: str = ""
    follow_ups: list[str] = Field(default_factory=list)
    """Follow-ups the user injected during the run (`Agent.inject`), oldest first."""
    steps: list[ToolStep] = Field(default_factory=list)
    answer: str | None = None

    def request(self) -> str:
        """What the user asked: the question, then any follow-ups sent while the run worked."""
        if not self.follow_ups:
            return self.question
        later = "\n".join(f"- {text}" for text in self.follow_ups)
        return f"{self.question}\n\nFollow-ups the user sent during the work:\n{later}"


def is_corrective(message: Message) -> bool:
    """Whether a user message is a framework's corrective message rather than the user's."""
    return message.role == "user" and (message.content or "").startswith(_CORRECTIVE)


def is_follow_up(message: Message) -> bool:
    """Whether a user message carries follow-ups injected into a run in progress."""
    return message.role == "user" and (message.content or "").startswith(INTERRUPT_PREFIX)


def run_start(messages: Sequence[Message]) -> int:
    """The index of the latest run's question in `messages` (its last user message that is
    neither corrective nor a follow-up); -1 when there is none."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "user" and not is_corrective(message) and not is_follow_up(message):
            return index
    return -1


def read_trace(messages: Sequence[Message]) -> Trace:
    """The trace of the latest run in `messages` (see the module docstring)."""
    asked = run_start(messages)
    start = asked + 1
    question = (messages[asked].content or "") if asked >= 0 else ""
    results = {m.tool_call_id: m.content or "" for m in messages[start:] if m.role == "tool"}
    steps: list[ToolStep] = []
    follow_ups: list[str] = []
    answer: str | None = None
    for message in messages[start:]:
        if is_follow_up(message):
            follow_ups.append((message.content or "")[len(INTERRUPT_PREFIX) :].strip())
            continue
        if message.role != "assistant":
            continue
        if message.tool_calls:
            for call in message.tool_calls:
                result = results.get(call.id, "")
                steps.append(
                    ToolStep(
                        name=call.name,
                        arguments=call.arguments,
                        result=result,
                        failed=result.startswith("Error:"),
                    )
                )
        elif message.content is not None:
            answer = message.content
    return Trace(question=question, follow_ups=follow_ups, steps=steps, answer=answer)


def cut(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} [... {len(text) - limit} more characters cut]"


def render_steps(steps: Sequence[ToolStep], limit: int) -> str:
    """A numbered list of calls and their results, each result cut to `limit` characters."""
    lines = []
    for number, step in enumerate(steps, 1):
        arguments = json.dumps(step.arguments, ensure_ascii=False, default=str)
        lines.append(f"{number}. {step.name}({arguments}) -> {cut(step.result, limit)}")
    return "\n".join(lines)


_STOPPED = {
    "max_iterations": "it reached its limit of {max_iterations} iterations",
    "budget_exhausted": "it spent its token budget ({total_tokens} of {max_budget_tokens} tokens)",
    "tool_failures": "{consecutive_failures} tool calls failed in a row",
    "truncated": "its answer was cut off at the length limit (max_tokens)",
}

FALLBACK_REASONS = frozenset(_STOPPED)
"""Termination reasons for which a ReAct run writes a fallback answer."""


def fallback_answer(trace: Trace, termination: Mapping[str, Any], *, limit: int = 500) -> str:
    """A plain summary for a run that stopped without an answer: why, and which tools ran with
    what results (each cut to `limit` characters). No model call: the budget may be spent."""
    reason = str(termination.get("reason", "stopped"))
    template = _STOPPED.get(reason)
    try:
        why = template.format(**termination) if template is not None else reason
    except (KeyError, IndexError):
        why = reason
    head = f"No final answer: the run stopped because {why}."
    if not trace.steps:
        return f"{head} No tool was run."
    return f"{head} Tools run ({len(trace.steps)}):\n{render_steps(trace.steps, limit)}"
