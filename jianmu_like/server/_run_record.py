"""One run served over HTTP: its record (status, result, the approvals and client calls it waits
for) and its event log, which late clients replay and then follow.

The registry (`server._runs`) owns the records; a record drives its run's task and publishes every
event of the run, mapped to SSE channels, into its log. Split from the registry so each module is
one concept: what a run is here, and how a server keeps its runs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from .._base.redact import redact, redact_secrets_in, redact_text
from .._run.explain import failure_text
from .._run.protocol import AgentLike
from .._run.recording import node_of, request_data
from .._run.result import AgentResult
from ..checkpoint._store import Checkpointer
from ..errors import JianmuError
from ..guard._approvals import Approval, ApprovalDecision
from ..guard._interruptions import Interruption, from_approval, from_question
from ..models._hooks import ModelCall, ModelCallHook, model_call_hook, use_model_call_hook
from ..models._types import ModelEventCallback, ModelRequest, ModelResponse
from ..telemetry import events as ev
from ..telemetry.events import AnyEvent
from ._channels import Channel, ChannelMapper
from ._nodes import NodeChange, NodeWatcher
from ._schemas import ServedInterruption, ServedRunStatus
from ._state_diff import state_patch

_API_HINT = (
    "decide them first (POST /api/approvals/{id}; the run resumes by itself), or run on another thread"
)
_RUN_EDGES = (ev.RUN_STARTED, ev.RUN_RESUMED, ev.RUN_COMPLETED)


class RunConflict(JianmuError):
    """A request that contradicts the run's state (busy thread, decided approval): HTTP 409;
    `extra` goes into the JSON body next to `error`."""

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.extra = extra


class NotFound(JianmuError):
    """An unknown run or approval id: HTTP 404."""


class SSEMessage(BaseModel):
    """One message of a run's stream; `id` counts from 1 (the SSE `id:` field)."""

    id: int
    event: Channel | Literal["node"]
    data: dict[str, Any]


class Retention(BaseModel):
    """How long finished runs stay answerable: `ttl` seconds after they finish and `max_runs`
    at most (the oldest go first); None is no limit."""

    max_runs: int | None = Field(1000, ge=1)
    ttl: float | None = Field(3600.0, gt=0)
    remembered: int = Field(10_000, ge=0)
    """Evicted run and conversation ids remembered to say "evicted" rather than "unknown"."""

    def describe(self) -> str:
        parts = []
        if self.ttl is not None:
            parts.append(f"for {self.ttl:g} s after they finish")
        if self.max_runs is not None:
            parts.append(f"{self.max_runs} at most")
        return "finished runs are kept " + (", ".join(parts) or "forever")


class RunRecord:
    """One run: its agent, status, result and the log of everything it published."""

    def __init__(self, run_id: str, thread_id: str, agent: AgentLike, question: str) -> None:
        self.run_id = run_id
        self.thread_id = thread_id
        self.agent = agent
        self.question = question
        self.status: ServedRunStatus = "running"
        self.result: AgentResult | None = None
        self.error: str | None = None
        self.elapsed = 0.0
        self.log: list[SSEMessage] = []
        self.node_log: list[SSEMessage] = []
        """`node` messages (`GET /api/runs/{run_id}/nodes`): a stream of their own, so the
        event stream's ids stay those of its channels."""
        self.nodes = NodeWatcher(self._publish_nodes)
        self._requests: list[tuple[str | None, ModelRequest]] = []
        """What each model call of the run sent (`sent_requests`), kept as the request objects:
        a request shares its messages with the one before, so keeping them costs little."""
        self._state_seen: dict[str, Any] = {}
        self._state_version = -1
        """The state the node messages last showed, and its manager's version then."""
        self.mapper = ChannelMapper()
        self.decisions: dict[str, ApprovalDecision] = {}
        """Decisions (by the agent's approval id) gathered while the run is suspended."""
        self.decided: dict[str, ApprovalDecision] = {}
        """Every decision this run took (by approval id): a late second decider hears of it."""
        self.task: asyncio.Task[None] | None = None
        self.cancelling = False
        """A client asked to cancel the run (`cancel`): it ends as `cancelled`."""
        self.suspended_at: float | None = None
        """When the run last suspended (the registry's clock): a wait for a client expires."""
        self.model_failure: dict[str, Any] | None = None
        """The last `model.call.failed` of the run's own agent (its status code and `Retry-After`:
        the `/v1/` face answers an upstream rate limit as a 429)."""
        self._changed = asyncio.Event()
        self._unsubscribe: Callable[[], None] | None = None
        self.replay: str | None = None
        """The recording this run replays (`server._recordings`): it ends when the replay does,
        even where the recorded run waited for a decision (a replay is watched, not continued)."""

    @property
    def injects(self) -> list[str]:
        """Follow-ups waiting for the agent's next iteration boundary (`Agent.inject`)."""
        return self.agent.interrupts.contents()

    @property
    def finished(self) -> bool:
        return self.status in ("success", "failure", "cancelled")

    def cancel(self) -> None:
        """End the run as `cancelled`: its tree is halted (running nodes terminated, their tasks
        cancelled: no further model or tool call); the agent still saves its checkpoint and
        reports the run's end. Before the run's task starts, it never starts the agent."""
        self.cancelling = True
        runner = self.agent.runner  # None: a conversation between runs
        if runner is not None:
            runner.halt()  # a no-op unless the tree is running

    @property
    def store(self) -> Checkpointer | None:
        """The checkpoint store the run is saved in (None for a conversation kept in memory)."""
        return self.agent.checkpointer

    def calls(self) -> list[Approval]:
        """The calls this run waits on: its suspension's; while it runs, those its agent's state
        holds already (a call waits as soon as its guard says so, while a parallel sibling may
        still work: listed and decidable then, without waiting for the run to suspend)."""
        if self.status == "suspended" and self.result is not None:
            return list(self.result.pending_approvals)
        if self.status != "running":
            return []
        return [i.approval for i in self.agent.pending_interruptions() if i.approval is not None]

    def is_decided(self, call_id: str) -> bool:
        """Whether a waiting call has its decision here (while suspended: of this suspension)."""
        return call_id in (self.decisions if self.status == "suspended" else self.decided)

    def waiting(self) -> list[str]:
        """The ids of the approvals this run waits for that nobody has decided yet."""
        return [a.id for a in self.calls() if not self.is_decided(a.id)]

    def publish(self, channel: Channel, data: dict[str, Any]) -> None:
        self.log.append(SSEMessage(id=len(self.log) + 1, event=channel, data=data))
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def _publish_nodes(self, changes: list[NodeChange]) -> None:
        # `after`: the id of the last event before these changes (AG-UI orders its steps by it)
        data: dict[str, Any] = {"changes": changes, "after": len(self.log)}
        patch = self._state_changes()
        if patch:
            data["state"] = patch
        self._node_message(data)

    def publish_recorded(self, changes: list[NodeChange], event: dict[str, Any]) -> None:
        """A step of a diverged replay shown as its recording's `event` says (`server._recordings`):
        a node message with `recorded`, the event, and no state (the replay no longer has it)."""
        self._node_message({"changes": changes, "after": len(self.log), "recorded": event})

    def _node_message(self, data: dict[str, Any]) -> None:
        self.node_log.append(SSEMessage(id=len(self.node_log) + 1, event="node", data=data))
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def _state_changes(self) -> list[dict[str, Any]]:
        """The state's keys that changed since the last node message (the first one: all of
        them, the state the run began from), an RFC 6902 patch: the console's timeline shows
        each step's state changes and rebuilds the state at any step from them. Redacted like
        every event; without the messages (the model and tool calls on the event stream show
        them, and a list resent whole at each step would grow the log quadratically). Ephemeral
        fields are kept: a debugger looks at a step's pending actions. Keys as `GET
        /api/runs/{id}/state` spells them (a breakpoint's edit uses them). Built only when the
        state manager's version moved, so a tick that wrote nothing costs a comparison."""
        manager = self.agent.state_manager
        if manager.version == self._state_version:
            return []
        self._state_version = manager.version
        messages = self.agent.keys.messages
        now: dict[str, Any] = redact(
            {
                key: value
                for key, value in manager.state.model_dump(mode="json", by_alias=True).items()
                if key.rsplit(".", 1)[-1] != messages
            }
        )
        patch = state_patch(self._state_seen, now)
        self._state_seen = now
        return patch

    def _watch_requests(self, outer: ModelCallHook | None) -> ModelCallHook:
        """A model-call hook that keeps each request the run sends, then calls on (through the
        hook it found, if any; the run's recording and substitution hooks chain after it, so a
        scripted reply, never sent, is not kept)."""

        async def hook(
            call: ModelCall, request: ModelRequest, on_event: ModelEventCallback | None
        ) -> ModelResponse:
            self._requests.append((node_of(on_event), request))
            if outer is not None:
                return await outer(call, request, on_event)
            return await call(request, on_event)

        return hook

    def sent_requests(self) -> list[dict[str, Any]]:
        """Each model call's request, in order, redacted as a recording's is (`request_data`):
        the console's timeline shows what the model was sent at a step."""
        return [
            {"n": n, "node": node, "request": request_data(request)}
            for n, (node, request) in enumerate(self._requests, 1)
        ]

    async def follow(self, after: int = 0, *, nodes: bool = False) -> AsyncIterator[SSEMessage]:
        """The messages (`nodes`: node messages) after id `after`, then live ones until the run
        is finished."""
        index = max(after, 0)
        while True:
            changed = self._changed
            log = self.node_log if nodes else self.log
            while index < len(log):
                yield log[index]
                index += 1
            if self.finished:
                return
            await changed.wait()

    # ------------------------------------------------------------------ driving
    def on_event(self, event: AnyEvent) -> None:
        """Telemetry subscriber from the run's start to its end (suspensions included, so a
        follow-up queued while it waits for an approval is published too)."""
        agent = self.agent
        if event.type in _RUN_EDGES and event.namespace == agent.namespace:
            runner = agent.runner  # the tree in hand (a Conversation's borrowed one)
            if runner is not None and event.node == agent.tree.name:  # not a nested agent's run
                if event.type == ev.RUN_COMPLETED:
                    self.nodes.detach(look=True)
                else:
                    self.nodes.attach(runner)
        elif event.node is not None and event.type != ev.TEXT_DELTA:  # reply.started came first
            self.nodes.look(active=event.node)
            if event.type == ev.MODEL_CALL_FAILED:
                self.model_failure = dict(event.data)
        for channel, data in self.mapper.map(event):
            self.publish(channel, data)

    async def drive(self, start: Callable[[], Awaitable[AgentResult]]) -> None:
        """Run `start()` (a run or a resume) to its end or suspension and publish the outcome."""
        if self._unsubscribe is None:
            self._unsubscribe = self.agent.telemetry.subscribe(self.on_event)
        self.status = "running"
        began = time.perf_counter()
        result: AgentResult | None = None
        try:
            with use_model_call_hook(self._watch_requests(model_call_hook())):
                result = None if self.cancelling else await start()
        except Exception as exc:  # a run that raises still ends its stream, with the cause
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.nodes.detach()
            self.elapsed += time.perf_counter() - began
        self.result = result
        ended_waiting = result is not None and result.status == "suspended" and self.replay is not None
        if result is not None and result.status == "suspended" and not ended_waiting:
            self.decisions = {}
            self.status = "suspended"
            self.publish(
                "approval",
                {
                    "status": "pending",
                    "approvals": self.pending(),
                    "interruptions": [
                        {**item.model_dump(mode="json"), "state": "pending"} for item in self.interruptions()
                    ],
                },
            )
            return
        self._unsubscribe()
        self._unsubscribe = None
        if result is not None:  # a failure's cause and what to do, worded as the CLI words it
            self.error = failure_text(result) if result.status == "failure" else result.error
        status: ServedRunStatus = (
            result.status if result is not None and result.status == "success" else "failure"
        )
        termination = redact(result.termination) if result is not None else None
        if ended_waiting:  # the replay went through; the recorded run waited for a decision there
            status, self.error = "success", None
            termination = {"reason": "suspended", "replayed": self.replay}
        if self.cancelling and status != "success":  # an answer that came first stands
            status = "cancelled"
            self.error = "cancelled by a client (POST /api/runs/{run_id}/cancel)"
        if self.error:  # what `GET /api/runs/{id}` and `done` show: no secret, whoever quoted it
            self.error = redact_text(self.error)
        messages = self.mapper.finish(
            answer=result.final_answer if result is not None else None,
            status=status,
            usage=result.usage.model_dump() if result is not None else {},
            elapsed=self.elapsed,
            termination=termination,
            error=self.error,
        )
        for channel, data in messages[:-1]:
            self.publish(channel, data)
        self.status = status  # before `done`, so a follower stops right after it
        self.publish(*messages[-1])

    def waits_for_client(self) -> bool:
        """The run waits only for a client's tool results (nobody else decides them)."""
        result = self.result
        if self.status != "suspended" or result is None or not result.pending_approvals:
            return False
        return all(a.kind == "client_tool" for a in result.pending_approvals)

    def expire(self, why: str) -> None:
        """End a run whose client never sent its tool results: a failure saying so (its tree
        stays as it stopped; the conversation goes with the run)."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self.error = why
        messages = self.mapper.finish(
            answer=None,
            status="failure",
            usage=self.result.usage.model_dump() if self.result is not None else {},
            elapsed=self.elapsed,
            termination={"reason": "client_timeout"},
            error=why,
        )
        for channel, data in messages[:-1]:
            self.publish(channel, data)
        self.status = "failure"
        self.publish(*messages[-1])

    def pending(self) -> list[dict[str, Any]]:
        """The approvals this run waits for; `id` is the approval id (the tool call's id, as the
        command line and the store name it) within the conversation `thread_id`."""
        return [
            {
                "id": a.id,
                "run_id": self.run_id,
                "thread_id": self.thread_id,
                "call_id": a.id,
                "tool": a.tool,
                "arguments": redact(a.arguments),  # like every event: no secrets in streams
                "reason": a.reason,
                "policy": a.policy,
                "decided": self.is_decided(a.id),
                "kind": a.kind,
            }
            for a in self.calls()
        ]

    def interruptions(self) -> list[ServedInterruption]:
        """What this run waits for someone to answer (`GET /api/interruptions`): the calls of its
        suspension, then its tools' open questions; redacted like every event."""
        if self.finished:
            return []
        found = [self._served(from_approval(a), decided=self.is_decided(a.id)) for a in self.calls()]
        return found + [self._served(from_question(q)) for q in self.agent.pending_elicitations()]

    def _served(self, interruption: Interruption, *, decided: bool = False) -> ServedInterruption:
        payload = interruption.payload.model_dump(mode="json")
        if interruption.approval is not None:
            payload["arguments"] = redact(payload.get("arguments"))  # like every event
        else:
            payload = redact_secrets_in(payload)  # a server's text may quote a secret
        return ServedInterruption(
            id=interruption.id,
            kind=interruption.kind,
            run_id=self.run_id,
            thread_id=self.thread_id,
            namespace=interruption.namespace,
            requested_at=interruption.requested_at,
            decided=decided,
            payload=payload,
        )

    def summary(self) -> dict[str, Any]:
        result = self.result
        return {
            "run_id": self.run_id,
            "thread_id": self.thread_id,
            "status": self.status,
            "input": self.question,
            "answer": result.final_answer if result is not None and self.finished else None,
            "usage": result.usage.model_dump() if result is not None else None,
            "termination": result.termination if result is not None else None,
            "error": self.error,
            "iterations": self.mapper.iteration,
            "elapsed": self.elapsed,
            "pending_approvals": self.pending(),
            "events": len(self.log),
        }


def all_decided(items: dict[str, dict[str, Any]], decisions: Mapping[str, ApprovalDecision]) -> bool:
    """Whether a suspended run can go on: every call waiting for a human is decided. Calls
    waiting for a client do not hold up a human's decisions (the run goes on and waits for the
    client again); without any human's, every client call must be answered (they come together)."""
    human = [call_id for call_id, item in items.items() if item.get("kind") != "client_tool"]
    needed = human or list(items)
    return all(call_id in decisions for call_id in needed)


def run_messages(record: RunRecord) -> list[dict[str, Any]]:
    """The conversation's messages at the run's end or suspension (its output namespace's, as
    the model received them), redacted like every event; a run still working is a RunConflict."""
    result = record.result
    if result is None or record.status == "running":
        raise RunConflict(
            f"run {record.run_id!r} is {record.status}: its messages are read when it finishes or "
            f"waits for approvals (follow GET /api/runs/{record.run_id}/events meanwhile)"
        )
    state = result.state
    if result.output_namespace is not None:
        state = getattr(state, result.output_namespace, None)
    messages = getattr(state, "messages", None)
    if not isinstance(messages, list):
        raise RunConflict(f"run {record.run_id!r}: this agent keeps no `messages` in its state")
    return [redact(m.to_openai()) if hasattr(m, "to_openai") else redact(m) for m in messages]
