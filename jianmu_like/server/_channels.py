"""The SSE channels of a run, mapped from the framework's telemetry events.

Browsers render a run from a handful of channels (`step`, `answer`, `reasoning`, `compact`,
`phase`, `inject`, `approval`, `artifact`, `done`), not from the framework's finer telemetry
(a tool's progress reports and an MCP server's log lines are `step` notes on its call);
this module is the one place that translates. It is stateful per run: it numbers iterations,
and makes sure the `answer` channel carries the run's final answer (`result.final_answer`,
also `done.answer`).

The answer channel's messages are `start`, `delta`s, `reset` and `done`. A streamed reply's
tokens go out live as deltas, before anyone knows whether that reply will be the answer; any
text that turns out not to be — thinking before tool calls, an attempt cut off and retried, a
final reply that the answer check or the output type re-asks, one held back by a follow-up, a
draft a synthesis phase rewrites — is withdrawn with one `reset` (the console empties the
answer) before the next text streams. `done` comes once, when the run ends, and its content is
the final answer: the streamed text when that is the answer, otherwise a reset and the whole
answer as one delta (a reply that was not streamed, the synthesis' stripped text). The answer's
`done` (and the run's `done`, as `answer_html`) also carries the answer's markdown as sanitised
HTML (`_markdown`), which a page may insert as is (null for an answer too long to render). A run that
ends without an answer withdraws whatever was streamed and sends no `done` on the channel.
"""

from __future__ import annotations

from typing import Any, Literal

from ..telemetry import events as ev
from ..telemetry.events import Event
from ._markdown import answer_html

Channel = Literal["step", "answer", "reasoning", "compact", "phase", "inject", "approval", "artifact", "done"]
CHANNELS: tuple[Channel, ...] = (
    "step",
    "answer",
    "reasoning",
    "compact",
    "phase",
    "inject",
    "approval",
    "artifact",
    "done",
)

Message = tuple[Channel, dict[str, Any]]
ARTIFACT_CHANNEL: Channel = "artifact"
"""The channel of the documents tools made (`server._artifacts` numbers them in its order)."""


class ChannelMapper:
    """Turns one run's telemetry events into (channel, payload) messages."""

    def __init__(self) -> None:
        self.iteration = 0
        self._streamed: list[str] = []
        """Deltas sent on the answer channel since its last start (what a client shows)."""
        self._held = False
        """The streamed text is a completed final reply, the answer unless more text follows."""
        self._answer_done = False
        self._tool_args: dict[str, Any] = {}

    def map(self, event: Event) -> list[Message]:
        """The messages `event` amounts to (often none)."""
        kind, data = event.type, event.data
        if kind == ev.REPLY_STARTED:
            self.iteration += 1
            return [*self._withdraw(), ("step", self._step("thinking", "start"))]
        if kind == ev.TEXT_DELTA:
            return self._delta(str(data.get("delta") or ""))
        if kind == ev.TEXT_RESET:
            if data.get("reasoning_discarded"):
                return [*self._withdraw(), ("reasoning", self._reasoning("reset", ""))]
            return self._withdraw()
        if kind == ev.REASONING_DELTA:
            return [("reasoning", self._reasoning("delta", str(data.get("delta") or "")))]
        if kind == ev.REPLY_COMPLETED:
            return self._reply_completed(data)
        if kind == ev.TOOL_CALL_STARTED:
            self._tool_args[str(data.get("call_id"))] = data.get("arguments")
            return [
                (
                    "step",
                    self._step(
                        "iteration",
                        "start",
                        tool_name=data.get("tool"),
                        tool_args=data.get("arguments"),
                        call_id=data.get("call_id"),
                    ),
                )
            ]
        if kind in (ev.TOOL_CALL_COMPLETED, ev.TOOL_CALL_FAILED):
            failed = kind == ev.TOOL_CALL_FAILED
            call_id = data.get("call_id")
            return [
                (
                    "step",
                    self._step(
                        "iteration",
                        "done",
                        tool_name=data.get("tool"),
                        tool_args=self._tool_args.pop(str(call_id), None) or data.get("arguments"),
                        call_id=call_id,
                        observation=None if failed else data.get("output"),
                        error=data.get("error") if failed else None,
                        iter_elapsed=data.get("duration"),
                        denied=bool(data.get("denied")) if failed else False,
                    ),
                )
            ]
        if kind == ev.TOOL_PROGRESS:  # a long tool call reporting (MCP progress): its card
            return [("step", self._tool_note("progress", data, ("progress", "total", "message")))]
        if kind == ev.MCP_LOG:  # an MCP server's log line while it works on a call
            return [("step", self._tool_note("log", data, ("server", "level", "logger", "data")))]
        if kind == ev.INJECT:
            inject = {"type": "inject", "status": data.get("status"), "content": data.get("content")}
            if data.get("status") == "applied":
                inject["iteration"] = self.iteration
            return [("inject", inject)]
        if kind.startswith("context.compact"):
            return [("compact", _compact(data))]
        if kind.startswith("phase"):
            return [("phase", _phase(kind, data))]
        if kind == ev.ARTIFACT:
            return [("artifact", dict(data))]
        if kind == ev.ELICITATION_REQUESTED:  # a question for a person: the human channel
            return [("approval", {"status": "elicitation", "elicitation": data.get("request")})]
        if kind == ev.ELICITATION_RESOLVED:
            return [("approval", {"status": "elicitation_resolved", **data})]
        return []

    def finish(
        self,
        *,
        answer: str | None,
        status: str,
        usage: dict[str, Any],
        elapsed: float,
        termination: dict[str, Any] | None,
        error: str | None,
    ) -> list[Message]:
        """The closing messages of a run: the answer channel's `done` with the final answer
        (after a reset and the whole answer when the streamed text is not it), then `done`."""
        messages: list[Message] = []
        html = answer_html(answer)
        if not self._answer_done:
            shown = "".join(self._streamed)
            if answer is not None and self._streamed and shown.strip() == answer.strip():
                messages.append(("answer", {"status": "done", "content": answer, "html": html}))
            else:
                messages.extend(self._withdraw())
                if answer is not None:
                    messages.extend(self._whole_answer(answer, html))
            self._answer_done = True
        done = {
            "answer": answer,
            "answer_html": html,
            "status": status,
            "iterations": self.iteration,
            "usage": usage,
            "elapsed": elapsed,
            "termination": termination,
            "error": error,
        }
        messages.append(("done", done))
        return messages

    # ------------------------------------------------------------------ helpers
    def _step(self, type_: str, status: str, **fields: Any) -> dict[str, Any]:
        return {"type": type_, "status": status, "iteration": self.iteration, **fields}

    def _tool_note(self, status: str, data: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
        """`step` `iteration` `progress` / `log` (extensions of FIM One's table): a note on the
        running call's card, named by its `call_id` and `tool_name`."""
        note = {key: data.get(key) for key in fields}
        return self._step(
            "iteration", status, tool_name=data.get("tool"), call_id=data.get("call_id"), **note
        )

    def _reasoning(self, status: str, content: str) -> dict[str, Any]:
        return {"status": status, "iteration": self.iteration, "content": content}

    def _delta(self, delta: str) -> list[Message]:
        if not delta or self._answer_done:
            return []
        messages = self._withdraw() if self._held else []  # a later call rewrites the answer
        if not self._streamed:
            messages.append(("answer", {"status": "start", "content": ""}))
        self._streamed.append(delta)
        messages.append(("answer", {"status": "delta", "content": delta}))
        return messages

    def _withdraw(self) -> list[Message]:
        """The text on the answer channel is not the answer (see the module): empty it."""
        self._held = False
        if not self._streamed or self._answer_done:
            return []
        self._streamed = []
        return [("answer", {"status": "reset", "content": ""})]

    def _reply_completed(self, data: dict[str, Any]) -> list[Message]:
        """`thinking` `done`: `reasoning` as FIM One's table means it (the text beside the tool
        calls, falling back to the model's own reasoning), `reasoning_content` that reasoning."""
        final = bool(data.get("final"))
        reasoning = data.get("reasoning")
        thought = None if final else data.get("content")
        messages: list[Message] = [
            (
                "step",
                self._step("thinking", "done", reasoning=thought or reasoning, reasoning_content=reasoning),
            )
        ]
        if not final:  # the streamed text was thinking before tool calls, not the answer
            return [*messages, *self._withdraw()]
        messages.append(("step", self._step("answer", "start")))
        self._held = bool(self._streamed)  # the answer until a later reply or the run's end says
        return messages

    def _whole_answer(self, answer: str, html: str | None) -> list[Message]:
        return [
            ("answer", {"status": "start", "content": ""}),
            ("answer", {"status": "delta", "content": answer}),
            ("answer", {"status": "done", "content": answer, "html": html}),
        ]


# FIM One's protocol names these payloads' fields; the telemetry's own names stay as extra fields.
def _compact(data: dict[str, Any]) -> dict[str, Any]:
    """`compact`: `original_messages` and `kept_messages` (the event's `messages_before` and
    `messages_after`), then the rest of the event."""
    return {
        "original_messages": data.get("messages_before"),
        "kept_messages": data.get("messages_after"),
        **data,
    }


def _phase(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    """`phase`: the phase's name and, when it chooses among tools, `total_tools` (the event's
    `total`)."""
    payload = {"phase": data.get("phase", kind.partition(".")[2] or kind), **data}
    if data.get("total") is not None:
        payload["total_tools"] = data["total"]
    return payload
