"""One run as AG-UI events (`ag-ui-protocol`'s types): what `POST /ag-ui` streams.

The run's channel messages (`server._channels`, the one mapping of the telemetry) and its
node statuses (`server._nodes`) become, in order:

- `RUN_STARTED` with the client's `threadId` and `runId`, then `STATE_SNAPSHOT` of the shown
  state (`shown_state`);
- `STEP_STARTED` / `STEP_FINISHED` as the tree's nodes start and stop working (a node is a step,
  named by its name; every step this stream opened is finished before the run's end);
- `REASONING_*` for the model's reasoning as it arrives;
- `TEXT_MESSAGE_START/CONTENT/END` for the answer as it streams. A streamed reply that turns out
  not to be the answer (thinking before tool calls, a retried attempt) is ended where the run
  withdraws it: AG-UI cannot take text back, so the closing `MESSAGES_SNAPSHOT` (the run's
  conversation as the model has it) replaces the drafts on the front-end;
- `TOOL_CALL_START/ARGS/END` and `TOOL_CALL_RESULT` for the agent's own tool calls; the
  front-end's tools (client tools) the model called end the run with `TOOL_CALL_*` for each and
  `RUN_FINISHED` with `pendingToolCallIds`: the next input's tool messages answer them;
- `STATE_DELTA` (RFC 6902) when the shown state changed after a model reply or a tool call;
- `CUSTOM` events `jianmu.<channel>` for the rest (artifacts, compaction, phases, follow-ups);
- the end: `MESSAGES_SNAPSHOT`, then `RUN_FINISHED` (success; `outcome: interrupt` with the
  approvals and questions a person must answer; `outcome: cancelled`) or `RUN_ERROR`.

The shown state: the agent's state without secrets (`redact`), without `messages` (they are
`MESSAGES_SNAPSHOT`'s, the protocol's own channel for them) and without `Ephemeral` fields. An
ephemeral field is the tree's scratch space (a step's pending actions, a run's counters), reset
at each iteration or run: a front-end binding to shared state expects values that persist across
runs of its thread, and deltas of resets every iteration would be noise that no client can act
on. Its durable result is elsewhere in the state (the messages, the answer).
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from .._base.extras import missing_extra
from .._base.redact import redact
from ..state._schema import schema_spec
from ._run_record import RunConflict, RunRecord, SSEMessage, run_messages
from ._state_diff import state_patch

try:
    from ag_ui.core import (
        AssistantMessage,
        BaseEvent,
        CustomEvent,
        FunctionCall,
        Interrupt,
        MessagesSnapshotEvent,
        ReasoningEndEvent,
        ReasoningMessageContentEvent,
        ReasoningMessageEndEvent,
        ReasoningMessageStartEvent,
        ReasoningStartEvent,
        RunErrorEvent,
        RunFinishedCancelledOutcome,
        RunFinishedEvent,
        RunFinishedInterruptOutcome,
        RunFinishedSuccessOutcome,
        RunStartedEvent,
        StateDeltaEvent,
        StateSnapshotEvent,
        StepFinishedEvent,
        StepStartedEvent,
        SystemMessage,
        TextMessageContentEvent,
        TextMessageEndEvent,
        TextMessageStartEvent,
        ToolCall,
        ToolCallArgsEvent,
        ToolCallEndEvent,
        ToolCallResultEvent,
        ToolCallStartEvent,
        ToolMessage,
        UserMessage,
    )
    from ag_ui.encoder import EventEncoder
except ImportError as exc:
    raise missing_extra("agui", "The AG-UI endpoint", exc) from exc

__all__ = [
    "APPROVAL_SCHEMA",
    "EventEncoder",
    "RunEvents",
    "approval_interrupt",
    "question_interrupt",
    "shown_state",
]

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {"enum": ["approve", "deny"]},
        "reason": {"type": "string"},
        "arguments": {"type": "object", "description": "corrected arguments (approve only)"},
    },
    "required": ["decision"],
}
"""What answers an approval interrupt (`resume[].payload`)."""
_CUSTOM = ("artifact", "compact", "phase", "inject")


def shown_state(record: RunRecord) -> dict[str, Any]:
    """The state a front-end is shown (see the module): redacted, without messages and
    ephemeral fields (of any namespace)."""
    agent = record.agent
    manager = agent.state_manager
    fields = schema_spec(manager.schema).fields
    messages = agent.keys.messages
    shown: dict[str, Any] = {}
    for key, value in manager.snapshot().items():
        name = key.rsplit(".", 1)[-1]
        spec = fields.get(name)
        if name == messages or (spec is not None and spec.scope == "step"):
            continue
        shown[key] = value
    result: dict[str, Any] = redact(shown)
    return result


def agui_messages(record: RunRecord) -> list[Any]:
    """The run's conversation (as its model has it) as AG-UI messages, numbered in order."""
    found: list[Any] = []
    for index, message in enumerate(run_messages(record)):
        ident = f"{record.thread_id}-{index}"
        role, content = message.get("role"), message.get("content")
        text = content if isinstance(content, str) else json.dumps(content) if content is not None else None
        if role == "assistant":
            calls = [
                ToolCall(
                    id=str(call["id"]),
                    type="function",
                    function=FunctionCall(
                        name=str(call["function"]["name"]), arguments=str(call["function"]["arguments"])
                    ),
                )
                for call in message.get("tool_calls") or ()
            ]
            found.append(AssistantMessage(id=ident, content=text, tool_calls=calls or None))
        elif role == "tool":
            found.append(
                ToolMessage(id=ident, content=text or "", tool_call_id=str(message.get("tool_call_id")))
            )
        elif role == "user":
            found.append(UserMessage(id=ident, content=text or ""))
        else:
            found.append(SystemMessage(id=ident, content=text or ""))
    return found


class RunEvents:
    """The AG-UI events of one AG-UI run (one request) of `record`: stateful, as the text
    message, reasoning, tool calls and steps it has opened must be closed in order."""

    def __init__(self, record: RunRecord, thread_id: str, run_id: str, nodes_after: int = 0) -> None:
        self.record = record
        self.node_index = nodes_after
        """The next of the run's node messages to read (`GET /api/runs/{id}/nodes`' log)."""
        self.thread_id = thread_id
        self.run_id = run_id
        self.text: str | None = None
        """The open text message's id."""
        self.reasoning: str | None = None
        self.count = 0
        self.tools: set[str] = set()
        """Tool calls started in this stream (a result needs its start)."""
        self.steps: dict[str, str] = {}
        """Open steps: node id -> step name."""
        self.state: dict[str, Any] = {}

    def _id(self, kind: str) -> str:
        self.count += 1
        return f"{self.record.run_id}-{kind}-{self.count}"

    def start(self) -> list[BaseEvent]:
        self.state = shown_state(self.record)
        metadata = {"jianmu_run_id": self.record.run_id}
        return [
            RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id, metadata=metadata),
            StateSnapshotEvent(snapshot=self.state),
        ]

    def nodes(self, before: int | None = None) -> list[BaseEvent]:
        """Steps from the tree's node status changes published since the last look (before the
        run's event of id `before`: a stream read behind the run keeps the run's order)."""
        log = self.record.node_log
        changes: list[dict[str, Any]] = []
        while self.node_index < len(log):
            if before is not None and log[self.node_index].data.get("after", 0) >= before:
                break
            changes += log[self.node_index].data["changes"]
            self.node_index += 1
        events: list[BaseEvent] = []
        for change in changes:
            node_id, name, status = str(change["id"]), str(change["name"]), change["status"]
            if status == "RUNNING" and node_id not in self.steps:
                step = name if name not in self.steps.values() else f"{name} ({node_id})"
                self.steps[node_id] = step
                events.append(StepStartedEvent(step_name=step))
            elif status != "RUNNING" and node_id in self.steps:
                events.append(StepFinishedEvent(step_name=self.steps.pop(node_id)))
        return events

    def channel(self, message: SSEMessage) -> list[BaseEvent]:
        """The events of one channel message of the run (its end and waits: see `finish`)."""
        channel, data = message.event, message.data
        events = self.nodes(before=message.id)
        if channel == "reasoning":
            return [*events, *self._reasoning(data)]
        events += self._end_reasoning()
        if channel == "answer":
            events += self._answer(data)
        elif channel == "step":
            events += self._step(data)
        elif channel in _CUSTOM:
            events.append(CustomEvent(name=f"jianmu.{channel}", value=redact(data)))
        return events

    def _reasoning(self, data: dict[str, Any]) -> list[BaseEvent]:
        content = str(data.get("content") or "")
        if data.get("status") != "delta" or not content:
            return self._end_reasoning()
        events: list[BaseEvent] = []
        if self.reasoning is None:
            self.reasoning = self._id("reasoning")
            events.append(ReasoningStartEvent(message_id=self.reasoning))
            events.append(ReasoningMessageStartEvent(message_id=self.reasoning, role="reasoning"))
        events.append(ReasoningMessageContentEvent(message_id=self.reasoning, delta=content))
        return events

    def _end_reasoning(self) -> list[BaseEvent]:
        if self.reasoning is None:
            return []
        ident, self.reasoning = self.reasoning, None
        return [ReasoningMessageEndEvent(message_id=ident), ReasoningEndEvent(message_id=ident)]

    def _answer(self, data: dict[str, Any]) -> list[BaseEvent]:
        status = data.get("status")
        if status == "delta" and data.get("content"):
            events: list[BaseEvent] = []
            if self.text is None:
                self.text = self._id("text")
                events.append(TextMessageStartEvent(message_id=self.text, role="assistant"))
            events.append(TextMessageContentEvent(message_id=self.text, delta=str(data["content"])))
            return events
        if status in ("reset", "done"):
            return self._end_text()
        return []

    def _end_text(self) -> list[BaseEvent]:
        if self.text is None:
            return []
        ident, self.text = self.text, None
        return [TextMessageEndEvent(message_id=ident)]

    def _step(self, data: dict[str, Any]) -> list[BaseEvent]:
        kind, status = data.get("type"), data.get("status")
        events: list[BaseEvent] = []
        if kind == "iteration" and status == "start" and data.get("call_id"):
            events += self._tool_call(str(data["call_id"]), str(data.get("tool_name")), data.get("tool_args"))
        elif kind == "iteration" and status == "done" and data.get("call_id"):
            call_id = str(data["call_id"])
            if call_id not in self.tools:
                events += self._tool_call(call_id, str(data.get("tool_name")), data.get("tool_args"))
            output = data.get("observation") if data.get("error") is None else f"error: {data['error']}"
            text = output if isinstance(output, str) else json.dumps(redact(output), default=str)
            events.append(
                ToolCallResultEvent(message_id=self._id("tool"), tool_call_id=call_id, content=redact(text))
            )
            events += self._delta()
        elif kind == "thinking" and status == "done":
            events += self._delta()
        return events

    def _tool_call(self, call_id: str, name: str, arguments: Any) -> list[BaseEvent]:
        self.tools.add(call_id)
        text = json.dumps(redact(arguments if arguments is not None else {}), ensure_ascii=False, default=str)
        return [
            ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name),
            ToolCallArgsEvent(tool_call_id=call_id, delta=text),
            ToolCallEndEvent(tool_call_id=call_id),
        ]

    def _delta(self) -> list[BaseEvent]:
        now = shown_state(self.record)
        patch = state_patch(self.state, now)
        self.state = now
        return [StateDeltaEvent(delta=patch)] if patch else []

    def close(self) -> list[BaseEvent]:
        """End what is open (reasoning, text, steps) and send the state and the messages."""
        events = [*self.nodes(), *self._end_reasoning(), *self._end_text()]
        events += [StepFinishedEvent(step_name=step) for step in self.steps.values()]
        self.steps = {}
        events += self._delta()
        with contextlib.suppress(RunConflict):  # a run still working (a question), or without messages
            events.append(MessagesSnapshotEvent(messages=agui_messages(self.record)))
        return events

    def client_calls(self, pending: list[dict[str, Any]]) -> list[BaseEvent]:
        """The front-end tool calls the run waits for, then the run's end naming them."""
        events = self.close()
        ids = []
        for item in pending:
            ids.append(str(item["call_id"]))
            if item["call_id"] not in self.tools:
                events += self._tool_call(str(item["call_id"]), str(item["tool"]), item["arguments"])
        outcome = RunFinishedSuccessOutcome(pending_tool_call_ids=ids)
        events.append(RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, outcome=outcome))
        return events

    def interrupted(self, interrupts: list[Interrupt]) -> list[BaseEvent]:
        """The run waits for people: an interrupt per approval or question."""
        outcome = RunFinishedInterruptOutcome(interrupts=interrupts)
        return [
            *self.close(),
            RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, outcome=outcome),
        ]

    def finished(self, done: dict[str, Any]) -> list[BaseEvent]:
        """The run's end (`done`: its `done` message)."""
        status = done.get("status")
        events = self.close()
        if status == "success":
            events.append(RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id))
        elif status == "cancelled":
            cancelled = RunFinishedCancelledOutcome()
            events.append(RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, outcome=cancelled))
        else:
            termination = done.get("termination") or {}
            code = str(termination.get("reason") or "agent_failed")
            events.append(RunErrorEvent(message=str(done.get("error") or "the run failed"), code=code))
        return events

    def error(self, message: str, code: str) -> list[BaseEvent]:
        return [*self.close(), RunErrorEvent(message=message, code=code)]


def approval_interrupt(item: dict[str, Any]) -> Interrupt:
    """An approval the run waits for, as an interrupt (answered by `resume`)."""
    arguments = json.dumps(item.get("arguments"), ensure_ascii=False, default=str)
    return Interrupt(
        id=str(item["id"]),
        reason="tool_approval",
        message=f"approve {item.get('tool')}({arguments})? {item.get('reason') or ''}".strip(),
        tool_call_id=str(item["call_id"]),
        response_schema=APPROVAL_SCHEMA,
        metadata={"tool": item.get("tool"), "arguments": item.get("arguments"), "policy": item.get("policy")},
    )


def question_interrupt(request: dict[str, Any]) -> Interrupt:
    """A question (an MCP server's elicitation) the run waits for, as an interrupt."""
    schema = request.get("requested_schema") or {"type": "object"}
    return Interrupt(
        id=str(request["id"]),
        reason="question",
        message=str(request.get("message") or ""),
        response_schema=schema,
        metadata={"server": request.get("server"), "url": request.get("url")},
    )
