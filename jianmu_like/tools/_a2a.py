"""Remote A2A agents (Agent2Agent 1.0, on `a2a-sdk`) as tools of this agent.

`A2AAgentProvider(name=..., url=..., token_env=...)` (or `a2a_agents: [{name, url, auth}]` in an
agent file) reads the remote agent's card at `initialize` and offers one tool, `name`, described
by the card (its description and skills), taking a `message`. A call streams one A2A task:

- the remote task's status updates are this run's `tool.progress` events (as an MCP server's
  progress is), so a console or an SSE client sees the remote work as it happens;
- a remote `input-required` becomes a question of this agent (a `QuestionBox`, the path MCP
  elicitations take: `Agent.pending_elicitations`, `/api/elicitations`, the A2A face's own
  `input-required`): a person here answers, and the answer is the next message on the remote
  task. When the remote agent asks for an approval in this server's shape (a data part with
  `approvals`), the question asks `{decision, reason}` and the answer goes back as that data part;
  otherwise it asks for a `reply` text. Unanswered within `question_timeout`, the task is
  cancelled and the model reads so;
- the remote answer (its artifacts' text, or its last message) is the tool's result; a failed,
  rejected or cancelled task, an HTTP or protocol error, or no end within `timeout` seconds is a
  `ToolError` the model reads as the call's observation (a call past `timeout` cancels the remote
  task, within a bounded time too).

The call goes through the tool executor like any tool, so the journal's exactly-once holds: the
tool is not `idempotent` (after a crash mid-call the model is told the outcome is unknown rather
than the remote agent asked twice), and the message id is the call's idempotency key, so a remote
server that deduplicates messages sees one. The token is read from the environment (`token_env`),
never from the file, and registered as a secret (redacted by value everywhere).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .._base.redact import register_secret
from ..telemetry import events as ev
from ._base import Tool
from ._call_context import current_tool_call, tool_event_emitter
from ._errors import ToolError
from ._questions import QuestionBox

EXTRA_HINT = "remote A2A agents need the `a2a` extra: pip install 'jianmu_like[a2a]'"
_TERMINAL = ("TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED")
_WAITING = ("TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED")
DECISION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {"type": "string", "enum": ["approve", "deny"]},
        "reason": {"type": "string"},
    },
    "required": ["decision"],
}
REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reply": {"type": "string"}},
    "required": ["reply"],
}


class A2AAgentError(ToolError):
    """A remote A2A agent that cannot be used: its token missing, its card unreadable, the
    `a2a` extra not installed (at start, the run's provider error names it)."""


class A2AAuth(BaseModel):
    """How to authenticate to the remote agent: a bearer token read from an environment variable
    (the token itself is never written in an agent file)."""

    model_config = ConfigDict(extra="forbid")

    token_env: str


class A2AAgentConfig(BaseModel):
    """One remote A2A agent (`a2a_agents:` of an agent file)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """The tool's name (what the model calls)."""
    url: str
    """The agent's base URL: its card is at `<url>/.well-known/agent-card.json`."""
    auth: A2AAuth | None = None
    description: str | None = None
    """Overrides the card's description (what the model reads about the tool)."""
    timeout: float = Field(300.0, gt=0)
    """Seconds one call may take, remote questions answered here included."""
    connect_timeout: float = Field(15.0, gt=0)
    """Seconds to read the card at start and for each HTTP exchange to begin."""
    question_timeout: float = Field(600.0, gt=0)
    """Seconds a remote `input-required` waits for a person's answer here."""


def _sdk() -> Any:
    try:
        import a2a.client
        import a2a.helpers.proto_helpers
    except ImportError as exc:
        raise A2AAgentError(f"{EXTRA_HINT} ({exc})") from None
    return a2a.client


class A2AAgentProvider:
    """A remote A2A agent as one tool (see the module)."""

    def __init__(self, config: A2AAgentConfig | None = None, **options: Any) -> None:
        self.config = config if config is not None else A2AAgentConfig.model_validate(options)
        self.name = self.config.name
        self.elicitations = QuestionBox(self.name, self.config.question_timeout)
        """The remote agent's questions to a person here (its `input-required`)."""
        self._card: Any = None
        self._tool: Tool | None = None

    def _token(self) -> str | None:
        auth = self.config.auth
        if auth is None:
            return None
        token = os.environ.get(auth.token_env)
        if not token:
            raise A2AAgentError(
                f"A2A agent {self.name!r}: the environment variable {auth.token_env} (its token) is not set"
            )
        register_secret(token, source=f"A2A agent {self.name} token")
        return token

    def _http(self) -> Any:
        import httpx

        token = self._token()
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        timeout = httpx.Timeout(self.config.timeout, connect=self.config.connect_timeout)
        return httpx.AsyncClient(headers=headers, timeout=timeout)

    async def initialize(self) -> None:
        """Read the remote agent's card (at most `connect_timeout` seconds)."""
        client = _sdk()
        from a2a.client import A2ACardResolver

        async with self._http() as http:
            try:
                self._card = await asyncio.wait_for(
                    A2ACardResolver(http, self.config.url).get_agent_card(), self.config.connect_timeout
                )
            except TimeoutError:
                raise A2AAgentError(
                    f"A2A agent {self.name!r}: no agent card from {self.config.url} within "
                    f"{self.config.connect_timeout:g} s"
                ) from None
            except (client.A2AClientError, OSError, ValueError) as exc:
                raise A2AAgentError(
                    f"A2A agent {self.name!r}: cannot read its card at {self.config.url}: {exc}"
                ) from None
        self._tool = None

    async def get_tools(self, **kwargs: Any) -> Sequence[Tool]:
        if self._card is None:
            raise A2AAgentError(f"A2A agent {self.name!r} is not initialised (`await initialize()`)")
        if self._tool is None:
            card = self._card
            skills = "; ".join(f"{s.name}: {s.description}" for s in card.skills if s.description)
            description = self.config.description or card.description or card.name
            if skills:
                description = f"{description} (skills: {skills})"
            self._tool = Tool(
                name=self.name,
                description=f"Ask the remote agent {card.name}. {description}",
                parameters={
                    "type": "object",
                    "properties": {"message": {"type": "string", "description": "what to ask the agent"}},
                    "required": ["message"],
                },
                fn=self.call,
                effect_tags=frozenset({"network"}),
                timeout=self.config.timeout + self.config.connect_timeout,
            )
        return [self._tool]

    async def close(self) -> None:
        self._card = None

    # -- one call ------------------------------------------------------------------------------

    async def call(self, message: str) -> str:
        """Send `message` as a new task and follow it to its end (bounded by `timeout`)."""
        _sdk()
        from a2a.client import ClientConfig, ClientFactory

        context = current_tool_call()
        message_id = context.idempotency_key if context is not None else None
        async with self._http() as http:
            client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(self._card)
            state = _TaskState()
            try:
                return await asyncio.wait_for(
                    self._converse(client, message, message_id, state), self.config.timeout
                )
            except TimeoutError:
                await self._cancel(client, state.task_id)
                raise ToolError(
                    f"A2A agent {self.name!r} did not finish within {self.config.timeout:g} s "
                    "(its task was cancelled)"
                ) from None
            except asyncio.CancelledError:
                await self._cancel(client, state.task_id)  # this run was cancelled: so is the remote task
                raise
            except ToolError:
                raise
            except Exception as exc:  # an HTTP, protocol or remote error: an observation
                raise ToolError(f"A2A agent {self.name!r} failed: {type(exc).__name__}: {exc}") from None

    async def _cancel(self, client: Any, task_id: str | None) -> None:
        from a2a.types import a2a_pb2 as pb

        if task_id is None:
            return
        with contextlib.suppress(Exception):  # best effort: the call's own outcome is decided
            await asyncio.wait_for(
                client.cancel_task(pb.CancelTaskRequest(id=task_id)), self.config.connect_timeout
            )

    async def _converse(self, client: Any, text: str, message_id: str | None, state: _TaskState) -> str:
        from a2a.helpers.proto_helpers import new_data_part, new_message, new_text_part
        from a2a.types import a2a_pb2 as pb

        parts = [new_text_part(text)]
        while True:
            outgoing = new_message(
                parts, context_id=state.context_id, task_id=state.task_id, role=pb.Role.ROLE_USER
            )
            if message_id is not None and state.task_id is None:
                outgoing.message_id = message_id
            await self._follow(client.send_message(pb.SendMessageRequest(message=outgoing)), state)
            if state.state in _TERMINAL:
                return self._outcome(state)
            if state.state not in _WAITING:
                raise ToolError(
                    f"A2A agent {self.name!r}: its stream ended with the task {state.state or 'unknown'}"
                )
            answer = await self._ask(state)
            if answer is None:
                await self._cancel(client, state.task_id)
                raise ToolError(
                    f"A2A agent {self.name!r} asked a question nobody here answered "
                    f"({state.question!r}); its task was cancelled"
                )
            parts = (
                [new_data_part(answer)]
                if state.wants_decision
                else [new_text_part(str(answer.get("reply", "")))]
            )

    async def _follow(self, events: AsyncIterator[Any], state: _TaskState) -> None:
        from a2a.types import a2a_pb2 as pb

        emit = tool_event_emitter()
        async for event in events:
            if event.HasField("task"):
                state.take_task(event.task)
            elif event.HasField("status_update"):
                update = event.status_update
                state.task_id, state.context_id = update.task_id, update.context_id
                state.take_status(update.status)
            elif event.HasField("artifact_update"):
                state.take_artifact(event.artifact_update.artifact, append=event.artifact_update.append)
            elif event.HasField("message"):
                state.reply = _text(event.message.parts)
                state.state = "TASK_STATE_COMPLETED"
            if emit is not None and state.state:
                emit(
                    ev.ToolProgress,
                    server=self.name,
                    progress=float(state.updates),
                    total=None,
                    message=f"{pb.TaskState.Name(pb.TaskState.Value(state.state))}: {state.note}"[:500],
                )
            state.updates += 1

    async def _ask(self, state: _TaskState) -> dict[str, Any] | None:
        """A person's answer here to the remote agent's question (None: declined or timed out)."""
        emit = tool_event_emitter()
        schema = DECISION_SCHEMA if state.wants_decision else REPLY_SCHEMA
        answer = await self.elicitations.ask_human(
            message=f"{self.name} asks: {state.question}", requested_schema=schema, emit=emit
        )
        if answer.action != "accept":
            return None
        return dict(answer.content or {})

    def _outcome(self, state: _TaskState) -> str:
        if state.state == "TASK_STATE_COMPLETED":
            return state.answer() or "(the remote agent answered nothing)"
        what = {
            "TASK_STATE_FAILED": "failed",
            "TASK_STATE_CANCELED": "was cancelled",
            "TASK_STATE_REJECTED": "refused",
        }
        raise ToolError(f"A2A agent {self.name!r} {what[state.state]}: {state.note or 'no reason given'}")


class _TaskState:
    """What one call knows of its remote task."""

    def __init__(self) -> None:
        self.task_id: str | None = None
        self.context_id: str | None = None
        self.state = ""
        self.note = ""
        self.question = ""
        self.wants_decision = False
        self.artifacts: dict[str, list[str]] = {}
        self.reply = ""
        self.updates = 0

    def take_task(self, task: Any) -> None:
        self.task_id, self.context_id = task.id, task.context_id
        for artifact in task.artifacts:
            self.take_artifact(artifact, append=False)
        self.take_status(task.status)

    def take_status(self, status: Any) -> None:
        from a2a.types import a2a_pb2 as pb

        self.state = pb.TaskState.Name(status.state)
        self.note = _text(status.message.parts) if status.HasField("message") else ""
        if self.state in _WAITING:
            self.question = self.note or "the remote agent needs input"
            self.wants_decision = any(
                isinstance(d, dict) and "approvals" in d for d in _data(status.message.parts)
            )

    def take_artifact(self, artifact: Any, *, append: bool) -> None:
        key = artifact.artifact_id or artifact.name
        texts = self.artifacts.setdefault(key, [])
        if not append:
            texts.clear()
        texts.append(_text(artifact.parts))

    def answer(self) -> str:
        found = ["".join(texts) for texts in self.artifacts.values() if "".join(texts)]
        return "\n\n".join(found) or self.reply or self.note


def _text(parts: Any) -> str:
    from a2a.helpers.proto_helpers import get_text_parts

    return "\n".join(get_text_parts(parts))


def _data(parts: Any) -> list[Any]:
    from a2a.helpers.proto_helpers import get_data_parts

    return get_data_parts(parts)


def a2a_providers(entries: Sequence[dict[str, Any] | A2AAgentConfig]) -> list[A2AAgentProvider]:
    """The providers of an agent file's `a2a_agents:` (validated: unknown keys are errors)."""
    return [
        A2AAgentProvider(entry if isinstance(entry, A2AAgentConfig) else A2AAgentConfig.model_validate(entry))
        for entry in entries
    ]
