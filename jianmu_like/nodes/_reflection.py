"""ReflectionNode: after every N tool calls, one call asks the model whether its chain holds.

A long tool chain drifts: a result contradicts an earlier one, the same search is repeated, the
plan was abandoned halfway. The hand-written loops' remedy (a reflection step after more than a
few tool calls) is opt-in here (`ReActConfig.reflect_after`): once the run's tool calls reach N,
2N, ..., one call without tools reads the question and the calls with their results and says
whether the chain is consistent and what to do next. Its verdict enters the conversation as an
observation (a user-side note opening with `[Reflection]`, which no part of the framework takes
for the user's question), so the next model round reads it. A failed reflection call changes
nothing: the check can only help a run, never fail it.
"""

from __future__ import annotations

from collections.abc import Sequence

from py_trees.common import Status

from ..bt._async_behaviour import AsyncBehaviour
from ..models._client import ModelClient
from ..models._errors import ModelError
from ..models._messages import Message, human, system
from ..telemetry import events as ev
from ._one_call import request_for
from ._settings import ModelCallConfig
from ._trace import REFLECTION_PREFIX, is_corrective, read_trace, render_steps

REFLECTION_PROMPT = (
    "You check the work of an AI assistant that uses tools. Below are the user's question and "
    "the tool calls made so far with their results. Is the chain consistent: do the results fit "
    "together and support the direction taken, or is something contradictory, repeated, "
    "missing or off-track? Answer in at most three sentences, starting with 'Consistent.' or "
    "'Inconsistent.', and say what to do next."
)

RESULT_CHARS = 600
"""Each tool result is cut to this many characters for the reflection call."""


def reflections_this_run(messages: Sequence[Message]) -> int:
    """Reflection notes after the latest question of the user's."""
    count = 0
    for message in reversed(messages):
        if message.role != "user":
            continue
        if not is_corrective(message):
            break
        count += (message.content or "").startswith(REFLECTION_PREFIX)
    return count


class ReflectionNode(AsyncBehaviour):
    """The reflection check (module docstring); always SUCCESS."""

    def __init__(
        self,
        name: str,
        model_client: ModelClient,
        every: int,
        *,
        config: ModelCallConfig | None = None,
        namespace: str | None = None,
    ) -> None:
        super().__init__(name)
        if every < 1:
            raise ValueError(f"reflect_after must be >= 1, got {every}")
        self.every = every
        self.config = config or ModelCallConfig()
        self.keys = self.config.keys
        self.namespace = namespace
        resilience = self.config.resilience
        self.model_client = model_client.with_resilience(resilience) if resilience else model_client

    def _calls(self) -> int:
        counts: dict[str, int] = self.state_manager.get(self.keys.call_counts, self.namespace) or {}
        return sum(counts.values())

    def update_sync(self) -> Status | None:
        sm, keys, ns = self.state_manager, self.keys, self.namespace
        if not sm.get(keys.actions, ns):
            return Status.SUCCESS  # the model answered: nothing to reflect on
        due = self._calls() // self.every
        if due == 0 or reflections_this_run(sm.get(keys.messages, ns)) >= due:
            return Status.SUCCESS
        return None

    async def update_async(self) -> Status:
        sm, keys, ns = self.state_manager, self.keys, self.namespace
        trace = read_trace(sm.get(keys.messages, ns))
        steps = render_steps(trace.steps, RESULT_CHARS)
        body = f"Question:\n{trace.question}\n\nTool calls and results:\n{steps}"
        request = request_for(
            self.config,
            [system(REFLECTION_PROMPT), human(body)],
            extra_params={k: v for k, v in self.config.extra_params.items() if k != "tool_choice"},
        )
        calls = self._calls()
        try:
            response = await self.model_client.complete(request, on_event=self.emit)
        except ModelError as exc:
            self.emit(ev.ReflectionFailed, tool_calls=calls, error=str(exc))
            return Status.SUCCESS
        verdict = (response.message.content or "").strip()
        if not verdict:
            self.emit(ev.ReflectionFailed, tool_calls=calls, error="the reply was empty")
            return Status.SUCCESS
        note = human(f"{REFLECTION_PREFIX} after {calls} tool calls: {verdict}")
        sm.update({keys.messages: [note], keys.usage: response.usage}, ns)
        self.emit(ev.ReflectionCompleted, tool_calls=calls, verdict=verdict)
        return Status.SUCCESS
