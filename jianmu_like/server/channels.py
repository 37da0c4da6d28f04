"""The SSE channels of a run, mapped from the framework's telemetry events.

Browsers render a run from a handful of channels (`step`, `answer`, `compact`, `phase`,
`inject`, `approval`, `artifact`, `done`), not from the framework's finer telemetry; this module is the one
place that translates. It is stateful per run: it numbers iterations, and makes sure the
`answer` channel always carries the final answer as start, delta(s), done — live deltas when the
model streams, the whole answer as one delta otherwise.
"""

from __future__ import annotations

from typing import Any, Literal

from ..telemetry import events as ev
from ..telemetry.events import Event

Channel = Literal["step", "answer", "compact", "phase", "inject", "approval", "artifact", "done"]
CHANNELS: tuple[Channel, ...] = (
    "step",
    "answer",
    "compact",
    "phase",
    "inject",
    "approval",
    "artifact",
    "done",
)

Message = tuple[Channel, dict[str, Any]]
ARTIFACT_CHANNEL: Channel = "artifact"
"""The channel of the documents tools made (`server.artifacts` numbers them in its order)."""


class ChannelMapper:
    """Turns one run's telemetry events into (channel, payload) messages."""

    def __init__(self) -> None:
        self.iteration = 0
        self._streamed: list[str] = []
        """Deltas of the current reply already sent on the answer channel."""
        self._answer_done = False
        self._tool_args: dict[str, Any] = {}

    def map(self, event: Event) -> list[Message]:
        """The messages `event` amounts to (often none)."""
        kind, data = event.type, event.data
        if kind == ev.REPLY_STARTED:
            self.iteration += 1
            self._streamed = []
            return [("step", self._step("thinking", "start"))]
        if kind == ev.TEXT_DELTA:
            return self._delta(str(data.get("delta") or ""))
        if kind == ev.TEXT_RESET:
            return self._void_stream()
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
        """The closing messages of a run: the answer (if no reply carried it yet), then `done`."""
        messages: list[Message] = []
        if self._streamed and not self._answer_done:  # a stream cut off without its reply
            messages.append(("answer", {"status": "done", "content": "".join(self._streamed)}))
            self._answer_done = True
        if answer is not None and not self._answer_done:
            messages.extend(self._whole_answer(answer))
        done = {
            "answer": answer,
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

    def _delta(self, delta: str) -> list[Message]:
        if not delta or self._answer_done:
            return []
        messages: list[Message] = []
        if not self._streamed:
            messages.append(("answer", {"status": "start", "content": ""}))
        self._streamed.append(delta)
        messages.append(("answer", {"status": "delta", "content": delta}))
        return messages

    def _void_stream(self) -> list[Message]:
        """A model call's attempt failed mid-stream: withdraw its text, the retry streams anew."""
        if not self._streamed or self._answer_done:
            return []
        self._streamed = []
        return [("answer", {"status": "reset", "content": ""})]

    def _reply_completed(self, data: dict[str, Any]) -> list[Message]:
        final = bool(data.get("final"))
        content = data.get("content")
        messages: list[Message] = [
            ("step", self._step("thinking", "done", reasoning=None if final else content))
        ]
        streamed, self._streamed = self._streamed, []
        if not final:
            if streamed:  # the streamed text was thinking before tool calls, not the answer
                messages.append(("answer", {"status": "reset", "content": ""}))
            return messages
        messages.append(("step", self._step("answer", "start")))
        if self._answer_done:
            return messages
        if streamed:
            messages.append(("answer", {"status": "done", "content": "".join(streamed)}))
            self._answer_done = True
        else:
            messages.extend(self._whole_answer(str(content or "")))
        return messages

    def _whole_answer(self, answer: str) -> list[Message]:
        self._answer_done = True
        return [
            ("answer", {"status": "start", "content": ""}),
            ("answer", {"status": "delta", "content": answer}),
            ("answer", {"status": "done", "content": answer}),
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
