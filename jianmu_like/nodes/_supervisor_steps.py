"""The supervisor's own model calls: split the task, gather the sub-agents' answers, answer.

The sub-agents themselves are ReAct subtrees built per run (presets._supervisor); these nodes
are the supervisor's side. Each call's usage is added to the supervisor's namespace, so
`AgentResult.agents[<supervisor>]` says what supervising cost and `AgentResult.usage` the total.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from py_trees.common import Status
from pydantic import BaseModel, Field

from ..bt._async_behaviour import AsyncBehaviour
from ..bt._node import Node
from ..models._client import ModelClient
from ..models._errors import ModelError
from ..models._keys import StateKeys
from ..models._messages import Message, ai, human, system
from ..models._structured import StructuredOutputError, TextReading
from ..models._types import Usage
from ..state._manager import StateManager
from ..telemetry import events as ev
from ._context import with_date
from ._critic import REVIEWS
from ._llm import configured_client, fail_with_model_error
from ._one_call import reply_completed, request_for, spent, structured_call
from ._results import outcome, read_key
from ._settings import ModelCallConfig

SUB_QUESTIONS = "sub_questions"
"""Supervisor-namespace key: the sub-questions of this run, in order."""
FOLLOW_UPS = "follow_ups"
"""Supervisor-namespace key: the follow-up questions of this run (empty: none asked)."""


class SupervisorPlan(BaseModel):
    """Split the task into independent sub-questions, one per sub-agent."""

    sub_questions: list[str] = Field(min_length=1)


class SupervisorDecision(BaseModel):
    """The answer to the task from the sub-agents' results, or follow-up questions to ask first."""

    answer: str = ""
    follow_ups: list[str] = Field(default_factory=list)


def sub_namespaces(sm: StateManager, namespace: str) -> list[str]:
    """The sub-agent namespaces under `namespace` that hold state (`<ns>.q1`, `<ns>.f1`, ...)."""
    prefix = f"{namespace}."
    return sorted(ns for ns in sm.namespaces() if ns.startswith(prefix))


def clear_sub_namespaces(sm: StateManager, namespace: str) -> None:
    """Forget the last run's sub-agents: sub-agents exist per run, and a run with fewer of them
    must not report the stale ones (the state manager has no call to drop a namespace)."""
    extra = sm.state.__pydantic_extra__
    if not extra:
        return
    prefix = f"{namespace}."
    stale = [key for key in extra if "." in key and key.rsplit(".", 1)[0].startswith(prefix)]
    for key in stale:
        del extra[key]
    if stale:
        sm.version += 1


ROUNDS = "follow_up_rounds"
"""Supervisor-namespace key: the follow-up rounds this run has run (with `max_rounds` > 1)."""

ROUND_START = "round_start"
"""Supervisor-namespace key: where the current round's questions start in `follow_ups`."""

LABELS = {SUB_QUESTIONS: "q", FOLLOW_UPS: "f"}
"""Sub-agent namespace labels: `<ns>.q1`, ... for sub-questions, `<ns>.f1`, ... for follow-ups."""


def asked(sm: StateManager, namespace: str, list_key: str) -> list[dict[str, Any]]:
    """One item per question under `list_key`: its label, sub-agent namespace and question."""
    label = LABELS[list_key]
    return [
        {"label": f"{label}{i + 1}", "namespace": f"{namespace}.{label}{i + 1}", "question": question}
        for i, question in enumerate(read_key(sm, list_key, namespace, []))
    ]


def current_round(sm: StateManager, namespace: str) -> list[dict[str, Any]]:
    """The follow-up questions of the current round (earlier rounds' keep their namespaces)."""
    start: int = read_key(sm, ROUND_START, namespace, 0)
    return asked(sm, namespace, FOLLOW_UPS)[start:]


def results_text(sm: StateManager, config: ModelCallConfig, items: Sequence[dict[str, Any]]) -> str:
    """The sub-agents' questions and answers as the supervisor reads them."""
    keys = config.keys
    blocks: list[str] = []
    for item in items:
        ns = item["namespace"]
        found = outcome(sm, keys, ns)
        answer = found.final_answer
        if answer is None:
            fallback = read_key(sm, keys.fallback_answer, ns, None)
            reason = (found.termination or {}).get("reason") or found.error or found.status
            answer = f"(no answer: {reason})" + (f"\n{fallback}" if fallback else "")
        blocks.append(f"[{ns}] question: {item['question']}\nanswer: {answer}")
    return "\n\n".join(blocks)


class Asked(NamedTuple):
    """What one supervisor call got: the value, its cost, and the model's reasoning on it."""

    value: Any
    usage: Usage
    reasoning: str | None


class SupervisorCall(AsyncBehaviour):
    """Base of the supervisor's steps: a model client, a config, the supervisor namespace and
    the supervisor's system prompt."""

    def __init__(
        self,
        name: str,
        model_client: ModelClient,
        config: ModelCallConfig,
        namespace: str,
        *,
        system_prompt: str,
    ) -> None:
        super().__init__(name)
        self.system_prompt = system_prompt
        self.config = config
        self.keys = config.keys
        self.model_client = configured_client(model_client, config)
        self.namespace = namespace
        self.ns = namespace
        """The supervisor namespace (typed as set: `namespace` may be None on other nodes)."""

    def prompt(self, instruction: str) -> list[Message]:
        """System prompt, the supervisor's conversation (the user's task), the instruction."""
        history = self.state_manager.get(self.keys.messages, self.namespace)
        return [system(with_date(self.system_prompt)), *history, human(instruction)]

    async def structured(self, prompt: list[Message], schema: type[BaseModel], reading: TextReading) -> Asked:
        """A structured value; a reply in prose is read by `reading` (a model that answers the
        supervisor in plain text still answers: both schemas have a plain-text meaning)."""
        result = await structured_call(
            self.model_client,
            prompt,
            schema,
            self.config,
            on_event=self.emit,
            regex_fallback=reading,
        )
        return Asked(result.value, result.usage, result.reasoning)

    async def text(self, prompt: list[Message]) -> Asked:
        request = request_for(self.config, prompt)
        response = await self.model_client.complete(request, on_event=self.emit)
        return Asked(response.message.content or "", response.usage, response.message.reasoning_content)

    def fail(self, exc: Exception) -> Status:
        reason = f"{self.name}: {exc}"
        termination = {"reason": "model_error", "error": reason, "failed_node": self.path}
        updates: dict[str, Any] = {self.keys.error: reason, self.keys.termination: termination}
        if (cost := spent(exc)) is not None:
            updates[self.keys.usage] = cost
        return fail_with_model_error(self, exc, reason, updates)

    def answer(self, text: str, usage: Usage, reasoning: str | None) -> None:
        """Write the supervisor's final answer (and the run's termination)."""
        keys = self.keys
        sm = self.state_manager
        subs = len(read_key(sm, SUB_QUESTIONS, self.namespace, []))
        follow_ups = len(read_key(sm, FOLLOW_UPS, self.namespace, []))
        termination = {"reason": "completed", "sub_agents": subs, "follow_ups": follow_ups}
        sm.update(
            {
                keys.final_answer: text,
                keys.done: True,
                keys.messages: [ai(text).model_copy(update={"reasoning_content": reasoning})],
                keys.usage: usage,
                keys.termination: termination,
            },
            self.namespace,
        )
        reply_completed(self.emit, text, usage, reasoning)


_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)]|[a-z][.)])\s+", re.IGNORECASE)


def plan_from_text(text: str) -> dict[str, Any] | None:
    """A prose plan: its list items (bullets or numbers) as sub-questions, else the whole text
    as one; None for an empty reply."""
    lines = [line for line in text.splitlines() if line.strip()]
    items = [_ITEM.sub("", line).strip() for line in lines if _ITEM.match(line)]
    if items:
        return {"sub_questions": items}
    return {"sub_questions": [text.strip()]} if text.strip() else None


def decision_from_text(text: str) -> dict[str, Any] | None:
    """A prose gather reply is the answer (None for an empty reply)."""
    return {"answer": text.strip()} if text.strip() else None


class SplitStep(SupervisorCall):
    """Splits the task into at most `max_agents` sub-questions (a structured call), written to
    `sub_questions`; the last run's sub-agents are forgotten first."""

    def __init__(
        self,
        name: str,
        model_client: ModelClient,
        config: ModelCallConfig,
        namespace: str,
        *,
        max_agents: int,
        system_prompt: str,
    ) -> None:
        super().__init__(name, model_client, config, namespace, system_prompt=system_prompt)
        self.max_agents = max_agents

    async def update_async(self) -> Status:
        sm, ns = self.state_manager, self.ns
        clear_sub_namespaces(sm, ns)
        fresh = {SUB_QUESTIONS: [], FOLLOW_UPS: [], REVIEWS: [], ROUNDS: 0, ROUND_START: 0}
        sm.update(fresh, ns)  # this run's questions, reviews and rounds only
        instruction = (
            f"Split the task above into at most {self.max_agents} independent sub-questions, "
            "each answerable on its own by a research assistant with tools."
        )
        try:
            plan, usage, _ = await self.structured(self.prompt(instruction), SupervisorPlan, plan_from_text)
        except (ModelError, StructuredOutputError) as exc:
            return self.fail(exc)
        questions = [q.strip() for q in plan.sub_questions if q.strip()][: self.max_agents]
        sm.update({SUB_QUESTIONS: questions, self.keys.usage: usage}, ns)
        self.emit(ev.SupervisorPlanned, sub_questions=questions, asked=len(plan.sub_questions))
        return Status.SUCCESS


class GatherStep(SupervisorCall):
    """Reads every sub-agent's answer and either answers (`final_answer`) or, when follow-ups
    are allowed, lists at most `max_follow_ups` follow-up questions (`follow_ups`)."""

    def __init__(
        self,
        name: str,
        model_client: ModelClient,
        config: ModelCallConfig,
        namespace: str,
        *,
        max_follow_ups: int,
        system_prompt: str,
        max_rounds: int = 1,
    ) -> None:
        super().__init__(name, model_client, config, namespace, system_prompt=system_prompt)
        self.max_follow_ups = max_follow_ups
        self.max_rounds = max_rounds

    async def update_async(self) -> Status:
        sm, ns = self.state_manager, self.ns
        items = asked(sm, ns, SUB_QUESTIONS)
        instruction = "Your sub-agents' results:\n\n" + results_text(sm, self.config, items) + "\n\n"
        if self.max_follow_ups:
            instruction += (
                "Write the final answer to the task in `answer`. Only if a result is missing or "
                f"contradictory, leave `answer` empty and list at most {self.max_follow_ups} "
                "follow-up questions in `follow_ups` instead "
                + ("(you get one round)." if self.max_rounds == 1 else f"(up to {self.max_rounds} rounds).")
            )
        else:
            instruction += "Write the final answer to the task in `answer`."
        try:
            decision, usage, reasoning = await self.structured(
                self.prompt(instruction), SupervisorDecision, decision_from_text
            )
        except (ModelError, StructuredOutputError) as exc:
            return self.fail(exc)
        follow_ups = [q.strip() for q in decision.follow_ups if q.strip()][: self.max_follow_ups]
        if follow_ups:
            sm.update({FOLLOW_UPS: follow_ups, self.keys.usage: usage}, ns)
            self.emit(ev.SupervisorFollowUps, follow_ups=follow_ups)
            return Status.SUCCESS
        self.answer(decision.answer, usage, reasoning)
        return Status.SUCCESS


class ContextPruner(Node):
    """Drops the raw notes (the message history: tool calls and their results) of every
    sub-agent of this run whose notes exceed `max_chars`, keeping its summary — the question
    and its final answer — so the state, its checkpoints and any later reader carry the
    summaries, not the raw tool output. Always SUCCESS; `supervisor.pruned` says what went."""

    def __init__(self, name: str, keys: StateKeys, namespace: str, *, max_chars: int) -> None:
        super().__init__(name)
        if max_chars < 1:
            raise ValueError(f"prune_notes_above must be >= 1, got {max_chars}")
        self.keys, self.ns, self.max_chars = keys, namespace, max_chars

    def update(self) -> Status:
        sm, keys = self.state_manager, self.keys
        pruned: dict[str, int] = {}
        for item in asked(sm, self.ns, SUB_QUESTIONS) + asked(sm, self.ns, FOLLOW_UPS):
            ns = item["namespace"]
            messages: list[Message] = read_key(sm, keys.messages, ns, [])
            size = sum(len(m.content or "") + len(str(m.tool_calls or "")) for m in messages)
            if size <= self.max_chars:
                continue
            summary = read_key(sm, keys.final_answer, ns, None) or read_key(
                sm, keys.fallback_answer, ns, None
            )
            kept = [m for m in messages[:1] if m.role == "user"] + ([ai(summary)] if summary else [])
            sm.set(keys.messages, kept, ns)
            pruned[ns] = size
        if pruned:
            self.emit(ev.SupervisorPruned, notes=pruned, max_chars=self.max_chars)
        return Status.SUCCESS


class AnswerStep(SupervisorCall):
    """After a follow-up round: one call writes the final answer from every result. Without
    follow-ups the gather step has answered already and this step does nothing."""

    def update_sync(self) -> Status | None:
        if read_key(self.state_manager, FOLLOW_UPS, self.namespace, []):
            return None
        return Status.SUCCESS

    async def update_async(self) -> Status:
        sm, ns = self.state_manager, self.ns
        items = asked(sm, ns, SUB_QUESTIONS) + asked(sm, ns, FOLLOW_UPS)
        instruction = (
            "Your sub-agents' results, follow-ups included:\n\n"
            + results_text(sm, self.config, items)
            + "\n\nWrite the final answer to the task."
        )
        try:
            text, usage, reasoning = await self.text(self.prompt(instruction))
        except ModelError as exc:
            return self.fail(exc)
        self.answer(text, usage, reasoning)
        return Status.SUCCESS


class ReviseStep(AnswerStep):
    """Rewrites the supervisor's answer after the draft critic rejected it (the critique is in
    the supervisor's messages, after the draft); does nothing when the last review asked for
    no re-run (or there is none yet: the first pass of the review loop)."""

    def update_sync(self) -> Status | None:
        reviews = read_key(self.state_manager, REVIEWS, self.namespace, [])
        return None if reviews and reviews[-1].get("rerun") else Status.SUCCESS


class RoundStep(SupervisorCall):
    """After each follow-up round (with `max_rounds` > 1, document 004's routing after every
    step): the answer, or the next round's follow-up questions — FAILURE, so the rounds loop
    runs them; the last round answers from every result. Nothing to do when the gather step
    answered without follow-ups."""

    def __init__(
        self,
        name: str,
        model_client: ModelClient,
        config: ModelCallConfig,
        namespace: str,
        *,
        max_follow_ups: int,
        max_rounds: int,
        system_prompt: str,
    ) -> None:
        super().__init__(name, model_client, config, namespace, system_prompt=system_prompt)
        self.max_follow_ups = max_follow_ups
        self.max_rounds = max_rounds

    def update_sync(self) -> Status | None:
        return None if current_round(self.state_manager, self.ns) else Status.SUCCESS

    async def update_async(self) -> Status:
        sm, ns = self.state_manager, self.ns
        rounds = read_key(sm, ROUNDS, ns, 0) + 1
        sm.update({ROUNDS: rounds}, ns)
        items = asked(sm, ns, SUB_QUESTIONS) + asked(sm, ns, FOLLOW_UPS)
        results = "Your sub-agents' results, follow-ups included:\n\n" + results_text(sm, self.config, items)
        try:
            if rounds >= self.max_rounds:
                text, usage, reasoning = await self.text(
                    self.prompt(results + "\n\nWrite the final answer to the task.")
                )
                self.answer(text, usage, reasoning)
                return Status.SUCCESS
            left = self.max_rounds - rounds
            instruction = results + (
                "\n\nWrite the final answer to the task in `answer`. Only if a result is still missing "
                f"or contradictory, leave `answer` empty and list at most {self.max_follow_ups} "
                f"follow-up questions in `follow_ups` instead ({left} more round(s) at most)."
            )
            decision, usage, reasoning = await self.structured(
                self.prompt(instruction), SupervisorDecision, decision_from_text
            )
        except (ModelError, StructuredOutputError) as exc:
            return self.fail(exc)
        follow_ups = [q.strip() for q in decision.follow_ups if q.strip()][: self.max_follow_ups]
        if follow_ups:
            before = list(read_key(sm, FOLLOW_UPS, ns, []))
            sm.update(
                {FOLLOW_UPS: [*before, *follow_ups], ROUND_START: len(before), self.keys.usage: usage}, ns
            )
            self.emit(ev.SupervisorFollowUps, follow_ups=follow_ups)
            return Status.FAILURE  # the rounds loop runs the next round
        self.answer(decision.answer, usage, reasoning)
        return Status.SUCCESS
