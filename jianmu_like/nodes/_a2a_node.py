"""A2AAgentNode: a remote A2A agent as a fixed step of a tree.

Where a tree's author, not a model, knows that a remote agent must be asked (hand the user's
request to the billing agent, then summarise its answer), the remote agent is a leaf. The node
sends one message built from the state — a state field's text, or by default the last user
message of its namespace's `messages` — and writes the remote answer (its artifacts' text, or its
last message) to `output_key`.

Everything about talking to the remote agent is `tools._a2a.A2AAgentProvider`'s, the same client a
model's tool call uses, so there is one rule for each of: streamed updates re-emitted as this
run's `tool.progress` events, a remote `input-required` asked of a person here (a
`QuestionBox`: `Agent.pending_interruptions`, `/api/interruptions`, this server's A2A face), the
bounded time (`timeout`, `connect_timeout`, `question_timeout`) and the secret token. A failure
(an HTTP or protocol error, a failed, refused or cancelled remote task, no end in time, a
question nobody answered) is the node's FAILURE with the reason as its feedback message and a
`tool.call.failed` event — which a Selector or a loop can act on.

Exactly-once, as for the tool: with a checkpointer the call is journaled as started before it
is sent and as finished with its outcome after. The journal key is the node, its namespace, the
history's length (one call per node per turn) and an attempt number. On resume a finished
call is not sent again: a success is replayed into the state, a failure lets a retry send a new
attempt (the remote task ended); a call that started with no outcome (a crash mid-call) is a
failure saying its outcome is unknown rather than a second message to the remote agent. The
message id is `<thread>/<journal key>`, so a remote server that deduplicates messages sees one.
"""

from __future__ import annotations

import uuid
from typing import Any

from py_trees.common import Status

from ..bt._async_behaviour import AsyncBehaviour
from ..models._messages import Message, ToolCall
from ..state._contract import StateContract, declare
from ..state._journal import ToolJournal
from ..telemetry import events as ev
from ..tools._a2a import A2AAgentConfig, A2AAgentProvider
from ..tools._call_context import ToolCallContext, reset_current_tool_call, set_current_tool_call
from ..tools._toolset import ToolSet
from ._tool_calls import ToolCallRunner
from ._tool_outcome import ToolOutcome

OUTCOME_UNKNOWN = (
    "the call to the remote agent was interrupted (the process stopped) and its outcome is "
    "unknown; it was not sent again"
)


class A2AAgentNode(AsyncBehaviour):
    """Asks the remote A2A agent `agent` once and writes its answer to `output_key` (see the module).

    `agent`: an `A2AAgentProvider`, an `A2AAgentConfig` or its fields as a dict (`name`, `url`,
    `auth`, `timeout`, ...). `message_key`: the state key (of `namespace`) whose text is sent;
    None sends the last user message of `messages`. The provider's card is read on the node's
    first tick (its tool set is the agent's like any other: closed with the agent).
    """

    def __init__(
        self,
        name: str,
        agent: A2AAgentProvider | A2AAgentConfig | dict[str, Any],
        *,
        message_key: str | None = None,
        output_key: str = "a2a_reply",
        namespace: str | None = None,
        max_output_chars: int = 8000,
    ) -> None:
        super().__init__(name)
        if isinstance(agent, A2AAgentProvider):
            self.agent = agent
        else:
            config = agent if isinstance(agent, A2AAgentConfig) else A2AAgentConfig.model_validate(agent)
            self.agent = A2AAgentProvider(config)
        self.tools = ToolSet.from_providers([self.agent])
        self.message_key = message_key
        self.output_key = output_key
        self.namespace = namespace
        self.calls = ToolCallRunner(self.tools, emit=self.emit, max_output_chars=max_output_chars)
        owner = f"A2A agent node {name!r}" + (f" (namespace {namespace!r})" if namespace else "")
        declare(self, StateContract(owner, (), namespace, reads=(message_key or "messages",)))

    def on_clone(self) -> None:
        """A clone emits as itself (bt.clone)."""
        self.calls = ToolCallRunner(self.tools, emit=self.emit, max_output_chars=self.calls.max_output_chars)

    def _message(self, history: list[Message]) -> str | None:
        if self.message_key is not None:
            value = self.state_manager.get(self.message_key, self.namespace)
            return None if value is None else str(value)
        users = [m for m in history if m.role == "user" and m.content]
        return str(users[-1].content) if users else None

    async def update_async(self) -> Status:
        sm, ns = self.state_manager, self.namespace
        if not self.tools.ready:
            await self.tools.ensure_ready()  # reads the card; a failure is the run's provider error
        history: list[Message] = list(sm.get("messages", ns) or ())
        text = self._message(history)
        if not text:
            where = self.message_key or "the last user message of `messages`"
            self.feedback_message = f"A2A agent node {self.name!r}: nothing to send ({where} is empty)"
            self.emit(
                ev.ToolCallFailed,
                tool=self.agent.name,
                call_id=self.name,
                error=self.feedback_message,
                denied=False,
            )
            return Status.FAILURE
        journal = sm.journal if sm.journal is not None and sm.journal.thread_id is not None else None
        key = self._journal_key(len(history), journal)
        call = ToolCall(id=key, name=self.agent.name, arguments={"message": text})
        outcome = await self._replayed(key, call, journal) if journal is not None else None
        if outcome is None:
            outcome = await self._send(call, key, journal)
        if outcome.failed:
            self.feedback_message = outcome.content
            return Status.FAILURE
        sm.update({self.output_key: outcome.content}, ns)
        return Status.SUCCESS

    # ------------------------------------------------------------------ journal
    def _journal_key(self, turn: int, journal: ToolJournal | None) -> str:
        """`a2a-node/<namespace>/<node>/<turn>#<attempt>`: the next attempt after the finished
        failures of this turn, or the last attempt if it is not one (it is replayed). It is the
        message id too, which a remote server deduplicates on: without a journal it is unique."""
        base = f"a2a-node/{self.namespace or ''}/{self.name}/{turn}"
        if journal is None:  # nothing to replay: a fresh id, never one a remote server has seen
            return f"{base}#{uuid.uuid4().hex}"
        entries = journal.entries()
        attempt = 0
        while (entry := entries.get(f"{base}#{attempt}")) is not None:
            if entry.status != "finished" or not (entry.outcome or {}).get("failed"):
                break
            attempt += 1
        return f"{base}#{attempt}"

    async def _replayed(self, key: str, call: ToolCall, journal: ToolJournal) -> ToolOutcome | None:
        entry = journal.entries().get(key)
        if entry is None:
            return None
        if entry.status == "finished" and entry.outcome is not None:
            return ToolOutcome.model_validate(entry.outcome)
        outcome = self.calls.fail(call, OUTCOME_UNKNOWN)
        await journal.finished(key, outcome.model_dump(mode="json"))
        return outcome

    async def _send(self, call: ToolCall, key: str, journal: ToolJournal | None) -> ToolOutcome:
        tool = self.tools.get(self.agent.name)
        assert tool is not None  # the provider's one tool, listed by ensure_ready
        idempotency = f"{journal.thread_id}/{key}" if journal is not None else key
        if journal is not None:
            await journal.started([(key, call.id, call.name)], serial=False)
        context = ToolCallContext(
            call_id=call.id, tool=call.name, idempotency_key=idempotency, emit=self.emit
        )
        token = set_current_tool_call(context)
        try:
            outcome = await self.calls.run(call, tool)
        finally:
            reset_current_tool_call(token)
        if journal is not None:
            await journal.finished(key, outcome.model_dump(mode="json"))
        return outcome
