"""CriticNode: a second opinion on a sub-agent's answer (reflexion).

A sub-agent can answer confidently and wrong. The critic asks the model, in one structured call,
whether the answer holds up; a rejected answer goes back to the sub-agent with the critique as
a new user message, and the enclosing loop runs the sub-agent again. The number of re-runs is
bounded (`max_retries`): at the limit the last answer is kept, never discarded. A critic call
that fails keeps the answer too — a broken reviewer must not cost the work it reviews.
"""

from __future__ import annotations

from typing import Any

from py_trees.common import Status
from pydantic import BaseModel

from ..bt._async_behaviour import AsyncBehaviour
from ..models._client import ModelClient
from ..models._errors import ModelError
from ..models._messages import Message, human, system
from ..models._structured import StructuredOutputError
from ..telemetry import events as ev
from ._context import with_date
from ._llm import configured_client
from ._one_call import spent, structured_call
from ._results import read_key
from ._settings import ModelCallConfig

REVIEWS = "critic_reviews"
"""Sub-agent-namespace key: the critic's verdicts of this run, oldest first."""

DEFAULT_CRITIC_PROMPT = (
    "You review a research assistant's answer to one question. Accept it if it answers the "
    "question correctly and completely; otherwise reject it and say precisely what is wrong or "
    "missing in `critique`."
)


class CriticVerdict(BaseModel):
    """Whether the answer is accepted; if not, what must change."""

    accept: bool
    critique: str = ""


def _first_question(messages: list[Message] | None) -> str:
    """The task of a namespace: its first user message."""
    return next((m.content or "" for m in messages or () if m.role == "user"), "")


class CriticNode(AsyncBehaviour):
    """Judges `namespace`'s `final_answer` to `question` (None: the namespace's first user
    message, the run's task): SUCCESS keeps it; FAILURE (rejected, re-runs left) appends the
    critique to the namespace's messages for the next attempt.

    Verdicts are kept in the sub-agent's `critic_reviews`; the critic's usage goes to
    `usage_namespace` (the supervisor's), so a sub-agent's own budget counts only its own calls.
    """

    def __init__(
        self,
        name: str,
        model_client: ModelClient,
        *,
        question: str | None,
        namespace: str,
        usage_namespace: str | None,
        max_retries: int = 1,
        system_prompt: str = DEFAULT_CRITIC_PROMPT,
        config: ModelCallConfig | None = None,
    ) -> None:
        super().__init__(name)
        self.config = config or ModelCallConfig()
        self.keys = self.config.keys
        self.model_client = configured_client(model_client, self.config)
        self.question = question
        self.namespace = namespace
        self.usage_namespace = usage_namespace
        self.max_retries = max_retries
        self.system_prompt = system_prompt

    async def update_async(self) -> Status:
        sm, keys, ns = self.state_manager, self.keys, self.namespace
        answer = sm.get(keys.final_answer, ns) or ""
        question = self.question if self.question is not None else _first_question(sm.get(keys.messages, ns))
        reviews: list[dict[str, Any]] = list(read_key(sm, REVIEWS, ns, []))
        rejected_before = sum(1 for review in reviews if not review["accept"])
        prompt = [
            system(with_date(self.system_prompt)),
            human(f"Question: {question}\n\nAnswer: {answer}"),
        ]
        try:
            result = await structured_call(
                self.model_client, prompt, CriticVerdict, self.config, on_event=self.emit
            )
        except (ModelError, StructuredOutputError) as exc:
            review = {"accept": True, "critique": "", "error": f"critic failed, answer kept: {exc}"}
            sm.update({REVIEWS: [*reviews, review]}, ns)
            if (cost := spent(exc)) is not None:
                sm.update({keys.usage: cost}, self.usage_namespace)
            self.emit(ev.CriticFailed, error=str(exc))
            return Status.SUCCESS
        verdict: CriticVerdict = result.value
        sm.update({keys.usage: result.usage}, self.usage_namespace)
        rerun = not verdict.accept and rejected_before < self.max_retries
        review = {"accept": verdict.accept, "critique": verdict.critique, "rerun": rerun}
        sm.update({REVIEWS: [*reviews, review]}, ns)
        self.emit(ev.CriticReview, accept=verdict.accept, critique=verdict.critique, rerun=rerun)
        if not rerun:
            return Status.SUCCESS
        critique = verdict.critique or "it does not answer the question"
        retry = human(f"A reviewer rejected your answer: {critique}\nAnswer the question again, fixing that.")
        sm.update({keys.messages: [retry]}, ns)
        return Status.FAILURE
