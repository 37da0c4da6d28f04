"""SynthesisNode: the second phase of a two-phase answer.

The ReAct loop's answer is written by a model busy choosing tools; the user reads it. After the
loop, one streaming call (no tools) writes the user-facing answer from the execution trace —
the question, each tool call with its result cut to `tool_chars`, the loop's draft — in the
question's language, without meta-commentary. Its tokens are `text.delta` events. Any failure
(a model error, an empty reply) keeps the loop's own answer: the phase can only improve a run,
never fail it.
"""

from __future__ import annotations

from py_trees.common import Status

from .._base.config import get_config
from ..bt._async_behaviour import AsyncBehaviour
from ..models._client import ModelClient
from ..models._errors import ModelError
from ..models._messages import Message, ai, human, system
from ..telemetry import events as ev
from ._one_call import request_for
from ._settings import ModelCallConfig
from ._trace import Trace, read_trace, render_steps

SYNTHESIS_PROMPT = (
    "You write the final answer to the user's question, from the work already done to answer "
    "it (below: the tool calls made and their results, and a draft answer). Use only facts found "
    "there. Answer in the same language as the question. Format it in Markdown where structure "
    "helps (lists, tables, code), plain prose otherwise. Write the answer itself and nothing "
    "else: no meta-commentary, do not mention tools, steps, the draft or these instructions."
)

PHASE = "synthesizing"
"""The `phase` of this node's `phase` events (status started | completed | failed)."""


def synthesis_messages(trace: Trace, tool_chars: int) -> list[Message]:
    """The synthesis request: the instructions, then the question, the trace and the draft."""
    steps = render_steps(trace.steps, tool_chars) if trace.steps else "(no tool was called)"
    body = (
        f"Question:\n{trace.request()}\n\nTool calls and results:\n{steps}\n\n"
        f"Draft answer:\n{trace.answer or '(none)'}"
    )
    return [system(SYNTHESIS_PROMPT), human(body)]


class SynthesisNode(AsyncBehaviour):
    """Rewrite `final_answer` from the run's trace with one streaming call (module docstring).

    On success the new answer replaces `final_answer` (and `streaming_output`), is appended to
    the history as an assistant message (what the user saw is what the conversation continues
    from), and its usage is added to the run's. Always SUCCESS.
    """

    def __init__(
        self,
        name: str,
        model_client: ModelClient,
        *,
        config: ModelCallConfig | None = None,
        namespace: str | None = None,
        tool_chars: int | None = None,
    ) -> None:
        super().__init__(name)
        self.config = config or ModelCallConfig()
        self.tool_chars = tool_chars if tool_chars is not None else get_config().answers.synthesis_tool_chars
        """Each tool result is cut to this many characters in the prompt (answers.synthesis_tool_chars)."""
        self.keys = self.config.keys
        self.namespace = namespace
        resilience = self.config.resilience
        self.model_client = model_client.with_resilience(resilience) if resilience else model_client

    async def update_async(self) -> Status:
        sm, keys, ns, config = self.state_manager, self.keys, self.namespace, self.config
        trace = read_trace(sm.get(keys.messages, ns))
        request = request_for(
            config,
            synthesis_messages(trace, self.tool_chars),
            stream=True,
            extra_params={k: v for k, v in config.extra_params.items() if k != "tool_choice"},
        )
        self.emit(ev.Phase, phase=PHASE, status="started", tool_calls=len(trace.steps))
        try:
            response = await self.model_client.complete(request, on_event=self.emit)
        except ModelError as exc:
            return self._keep(f"the synthesis call failed: {exc}")
        answer = (response.message.content or "").strip()
        if not answer:
            sm.update({keys.usage: response.usage}, ns)
            return self._keep("the synthesis call returned an empty answer")
        sm.update(
            {
                keys.final_answer: answer,
                keys.streaming_output: answer,
                keys.messages: [ai(answer)],
                keys.usage: response.usage,
            },
            ns,
        )
        self.emit(
            ev.Phase, phase=PHASE, status="completed", content=answer, usage=response.usage.model_dump()
        )
        return Status.SUCCESS

    def _keep(self, reason: str) -> Status:
        """A failed synthesis: the loop's answer stands."""
        self.feedback_message = reason
        self.emit(ev.Phase, phase=PHASE, status="failed", error=reason)
        return Status.SUCCESS
