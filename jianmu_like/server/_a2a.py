"""The A2A (Agent2Agent, protocol 1.0) face of the server, on the official `a2a-sdk`.

Another framework's agent reaches this one as an A2A agent: its card at
`/.well-known/agent-card.json` (public, like any discovery document: it says which auth scheme
the endpoint wants) and JSON-RPC at `/a2a/` (`SendMessage`, `SendStreamingMessage`, `GetTask`,
`CancelTask`, `SubscribeToTask`: the method names the SDK's own client sends). The SDK's
request handler keeps the tasks and their subscribers; this module is only its
`AgentExecutor`, which maps an A2A task onto one run of the `RunRegistry` (one way runs
happen, as `/api/runs` and `/v1/` do):

- a task's context id is the run's conversation (`thread_id`): a second task with the same
  context id continues the conversation;
- the run's channel messages (`server._channels`) stream as `working` status updates, each one a
  data part `{"channel": ..., **payload}`; a document a tool made is an A2A artifact (a URL part
  to `/api/runs/{run_id}/artifacts/{n}`); the final answer is the artifact `answer`, and the task
  ends `completed`, `failed` or `canceled` with the run;
- a pending approval (guard PENDING) or an open question (MCP elicitation) is `input-required`,
  with the approvals or the question as a data part; the client's next message on that task
  answers it (`decision_of`), and the run goes on streaming on that task; answered elsewhere
  (the console, `/api/approvals`, the CLI), the task goes on by itself (`RunExecutor._watch`);
- `CancelTask` cancels the run (a run waiting for approvals: they are denied, and it ends
  cancelled).

Everything here is behind the server's Host, Origin, body-size and token rules: `/a2a/` is a
protected prefix like `/api/` and `/v1/`.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.requests import Request
from starlette.responses import Response

from .._base.redact import redact
from .._base.validation import describe_validation
from .._run.protocol import AgentLike
from ..agentfile._spec import A2ACard, A2ASkill
from ..errors import JianmuError
from ..guard._approvals import InvalidEdit
from ..tools._questions import ElicitationError
from ._channels import ARTIFACT_CHANNEL
from ._errors import error_response
from ._interruptions import answer_question
from ._routes import ApiRoute
from ._run_record import NotFound, RunConflict, RunRecord
from ._runs import RunRegistry

if TYPE_CHECKING:
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.types import a2a_pb2

RPC_PATH = "/a2a/"
_TERMINAL = ("TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED")
CARD_PATH = "/.well-known/agent-card.json"
EXTRA_HINT = "the A2A protocol needs the `a2a` extra: pip install 'jianmu_like[a2a]'"
ANSWER_ARTIFACT = "answer"


class A2AUnavailable(ImportError, JianmuError):
    """`a2a-sdk` is not installed: the message names the extra to install."""


class AgentCardBody(BaseModel):
    """`GET /.well-known/agent-card.json`: the A2A 1.0 agent card (its JSON form, camelCase)."""

    model_config = ConfigDict(extra="allow")

    name: str
    description: str
    version: str
    supportedInterfaces: list[dict[str, Any]]
    capabilities: dict[str, Any]
    defaultInputModes: list[str]
    defaultOutputModes: list[str]
    skills: list[dict[str, Any]]
    securitySchemes: dict[str, Any] | None = None
    securityRequirements: list[dict[str, Any]] | None = None


class JsonRpcRequest(BaseModel):
    """`POST /a2a/`: one A2A JSON-RPC request (read by the SDK's dispatcher, which answers a
    malformed one with a JSON-RPC error)."""

    jsonrpc: Literal["2.0"]
    id: str | int | None = None
    method: str
    """`SendMessage`, `SendStreamingMessage` (answered as Server-Sent Events), `GetTask`,
    `CancelTask`, `SubscribeToTask` (Server-Sent Events), `ListTasks`."""
    params: dict[str, Any] = {}


class JsonRpcResponse(BaseModel):
    """A JSON-RPC answer: `result` (a task or a message) or `error` (code, message)."""

    jsonrpc: Literal["2.0"]
    id: str | int | None = None
    result: Any = None
    error: dict[str, Any] | None = None


class A2ADecision(BaseModel):
    """The client's answer to an `input-required` approval (a data part)."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["approve", "deny"]
    reason: str = ""
    arguments: dict[str, Any] | None = None
    id: str | None = None
    """Which approval (when several wait); without it the decision is every waiting one's."""


class Answer(BaseModel):
    """The client's answer to an `input-required` question (MCP elicitation), a data part: either
    `{"action": ..., "content": {...}}` or the content itself (accepted)."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["accept", "decline", "cancel"] = "accept"
    content: dict[str, Any] | None = None


def sdk() -> Any:
    """Import what the server needs of `a2a-sdk`, naming the extra when it is missing."""
    try:
        import a2a.server.agent_execution
        import a2a.server.request_handlers
        import a2a.server.routes
        import a2a.server.tasks
        import sse_starlette  # noqa: F401
    except ImportError as exc:
        raise A2AUnavailable(f"{EXTRA_HINT} ({exc})") from None
    import a2a

    return a2a


def _tool_skills(agent: AgentLike) -> list[A2ASkill]:
    """One skill per tool the agent's tree may call (what other agents can ask it to do)."""
    from ..tools._toolset import toolset_of
    from ._nodes import node_entries

    skills: dict[str, A2ASkill] = {}
    for _id, _path, node in node_entries(agent.tree):
        tools = toolset_of(node)
        if tools is not None and tools.listed:  # a provider's tools are listed at run time
            for tool in tools:
                skills.setdefault(
                    tool.name,
                    A2ASkill(id=tool.name, name=tool.name, description=tool.description, tags=["tool"]),
                )
    return list(skills.values())


def agent_card(agent: AgentLike, card: A2ACard, url: str, *, token: bool, version: str) -> a2a_pb2.AgentCard:
    """The agent card served at `/.well-known/agent-card.json`."""
    from a2a.types import a2a_pb2 as pb

    name = card.name or str(agent.tree.name)
    description = card.description or str(getattr(agent.tree, "description", "") or "") or name
    skills = card.skills if card.skills is not None else _tool_skills(agent)
    if not skills:
        skills = [A2ASkill(id="chat", name=name, description=description, tags=["chat"])]
    built = pb.AgentCard(
        name=name,
        description=description,
        version=card.version or version,
        supported_interfaces=[pb.AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=pb.AgentCapabilities(streaming=True),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=[
            pb.AgentSkill(
                id=s.id,
                name=s.name,
                description=s.description or s.name,
                tags=s.tags or [s.id],
                examples=s.examples,
            )
            for s in skills
        ],
    )
    if token:
        scheme = pb.SecurityScheme(
            http_auth_security_scheme=pb.HTTPAuthSecurityScheme(
                scheme="bearer", description="the server's token (jianmu-like serve --token)"
            )
        )
        built.security_schemes["bearer"].CopyFrom(scheme)
        requirement = built.security_requirements.add()
        requirement.schemes["bearer"].SetInParent()
    return built


@dataclass
class _Binding:
    """One A2A task's run and how far its events were sent."""

    run_id: str
    sent: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    ended: bool = False
    """The task's end was sent (a second follower of a finished run sends nothing)."""
    watch: asyncio.Task[None] | None = None
    """Follows a run waiting for input that may be answered elsewhere (see `_watch`)."""


class A2AInputError(JianmuError):
    """A message that does not answer what the task waits for (sent back as `input-required`)."""


def _parts_data(message: a2a_pb2.Message) -> tuple[list[dict[str, Any]], str]:
    from a2a.helpers.proto_helpers import get_data_parts, get_text_parts

    data: list[dict[str, Any]] = []
    for value in get_data_parts(message.parts):
        if not isinstance(value, dict):
            raise A2AInputError(f"a data part is a JSON object here, got {type(value).__name__}")
        data.append(value)
    return data, "\n".join(get_text_parts(message.parts)).strip()


def decision_of(message: a2a_pb2.Message) -> A2ADecision:
    """The decision a message makes: a data part `{"decision": "approve" | "deny", "reason"?,
    "arguments"?, "id"?}`, or the plain text `approve` / `deny` (anything after it, the reason)."""
    data, text = _parts_data(message)
    if data:
        try:
            return A2ADecision.model_validate(data[0])
        except ValidationError as exc:
            raise A2AInputError(f"the task waits for a decision: {_problems(exc)}") from None
    verb, _, rest = text.partition(" ")
    if verb.lower().rstrip(".:,") in ("approve", "deny"):
        return A2ADecision(
            decision="deny" if verb.lower().startswith("deny") else "approve", reason=rest.strip()
        )
    raise A2AInputError(
        'the task waits for a decision: send a data part {"decision": "approve" | "deny", '
        f'"reason"?, "arguments"?}} or the text "approve" / "deny", got {text[:80]!r}'
    )


def answer_of(message: a2a_pb2.Message) -> Answer:
    """The answer a message gives to a question: a data part (the content, or
    `{"action", "content"}`), or the text `decline` / `cancel`."""
    data, text = _parts_data(message)
    if data:
        item = data[0]
        if set(item) <= {"action", "content"} and "action" in item:
            try:
                return Answer.model_validate(item)
            except ValidationError as exc:
                raise A2AInputError(f"the task waits for an answer: {_problems(exc)}") from None
        return Answer(content=item)
    if text.lower() in ("decline", "cancel"):
        return Answer(action="decline" if text.lower() == "decline" else "cancel")
    raise A2AInputError(
        "the task waits for an answer to a question: send a data part with the values asked for "
        f'(or {{"action": "decline" | "cancel"}}), got {text[:80]!r}'
    )


def _problems(exc: ValidationError) -> str:
    return "; ".join(describe_validation(exc, inputs=False))


def _jsonable(value: dict[str, Any]) -> Any:
    """`value` as plain JSON (a data part holds only JSON values)."""
    return json.loads(json.dumps(value, default=str))


class RunExecutor:
    """The `AgentExecutor` of the SDK's request handler: each A2A task is one run (see module)."""

    def __init__(self, registry: RunRegistry, remembered: int = 10_000) -> None:
        self.registry = registry
        self.tasks: dict[str, _Binding] = {}
        self.messages: OrderedDict[str, str] = OrderedDict()
        """The run each recent first message (by `messageId`) started, `remembered` at most: a
        client that retries a `SendMessage` (same message id) follows that run, never a second."""
        self.remembered = remembered

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        from a2a.server.tasks import TaskUpdater
        from a2a.types import a2a_pb2 as pb

        task_id, context_id = str(context.task_id), str(context.context_id)
        updater = TaskUpdater(event_queue, task_id, context_id)
        message = context.message
        binding = self.tasks.get(task_id)
        if binding is None:
            if context.current_task is None:
                await event_queue.enqueue_event(
                    pb.Task(
                        id=task_id,
                        context_id=context_id,
                        status=pb.TaskStatus(state=pb.TaskState.TASK_STATE_SUBMITTED),
                        history=[message] if message is not None else [],
                    )
                )
            record = self._retried(message)
            if record is None:
                try:
                    record = self.registry.start(context.get_user_input(), context_id)
                except (RunConflict, NotFound) as exc:
                    await updater.failed(self._text(updater, str(exc)))
                    return
                if message is not None and message.message_id:
                    self.messages[message.message_id] = record.run_id
                    while len(self.messages) > self.remembered:
                        self.messages.popitem(last=False)
            binding = self.tasks[task_id] = _Binding(record.run_id)
            await updater.start_work()
        else:
            record = self.registry.get(binding.run_id)
            if record.finished:  # a message that queued behind the one that ended the run
                task = context.current_task
                done = task is not None and pb.TaskState.Name(task.status.state) in _TERMINAL
                if not done:
                    await self._finish(record, binding, {"error": record.error}, updater)
                return
            if message is not None:
                try:
                    self._answer(record, message)
                except A2AInputError as exc:
                    await updater.requires_input(self._text(updater, str(exc)))
                    return
        async with binding.lock:
            await self._follow(record, binding, updater, pb)

    def _retried(self, message: a2a_pb2.Message | None) -> RunRecord | None:
        """The run a retried message already started (still kept), or None."""
        if message is None or not message.message_id:
            return None
        run_id = self.messages.get(message.message_id)
        if run_id is None:
            return None
        try:
            return self.registry.get(run_id)
        except NotFound:
            return None

    def _answer(self, record: RunRecord, message: a2a_pb2.Message) -> None:
        """Apply the client's message to what the run waits for (its interruptions, as
        `GET /api/runs/{run_id}/interruptions` lists them): a question first, else approvals."""
        waits = record.interruptions()
        questions = [item.id for item in waits if item.kind == "question"]
        if questions:
            answer = answer_of(message)
            try:  # the answer path of every interruption (`POST /api/interruptions/{id}`)
                answer_question(record, questions[0], answer.action, answer.content)
            except (NotFound, RunConflict, ElicitationError) as exc:
                raise A2AInputError(str(exc)) from None
            return
        waiting = [item.id for item in waits if item.kind != "question" and not item.decided]
        if not waiting:
            if record.status == "running":  # a follow-up while it works
                try:
                    self.registry.inject(record.run_id, _parts_data(message)[1])
                except RunConflict as exc:
                    raise A2AInputError(str(exc)) from None
                return
            raise A2AInputError("the task waits for nothing")
        decision = decision_of(message)
        ids = [decision.id] if decision.id is not None else waiting
        for approval_id in ids:
            try:
                self.registry.decide(
                    approval_id,
                    decision.decision == "approve",
                    decision.reason,
                    record.thread_id,
                    arguments=decision.arguments,
                )
            except (InvalidEdit, RunConflict, NotFound) as exc:
                raise A2AInputError(str(exc)) from None

    def _text(self, updater: Any, text: str) -> Any:
        from a2a.helpers.proto_helpers import new_text_part

        return updater.new_agent_message([new_text_part(text)])

    async def _follow(self, record: RunRecord, binding: _Binding, updater: Any, pb: Any) -> None:
        """Stream the run's messages after those already sent, until it ends or waits."""
        from a2a.helpers.proto_helpers import new_data_part, new_text_part

        async for item in record.follow(binding.sent):
            binding.sent = item.id
            channel, data = item.event, item.data
            if channel == ARTIFACT_CHANNEL:
                artifact = dict(data.get("artifact") or {})
                n = sum(1 for m in record.log[: item.id] if m.event == ARTIFACT_CHANNEL) - 1
                part = pb.Part(
                    url=f"/api/runs/{record.run_id}/artifacts/{n}",
                    filename=str(artifact.get("name") or f"artifact-{n}"),
                    media_type=str(artifact.get("mime_type") or artifact.get("media_type") or ""),
                )
                await updater.add_artifact([part], name=str(artifact.get("name") or f"artifact-{n}"))
                continue
            if channel == "approval" and data.get("status") in ("pending", "elicitation"):
                await updater.requires_input(
                    updater.new_agent_message(
                        [
                            new_text_part(_ask(data)),
                            new_data_part(_jsonable(redact({"channel": channel, **data}))),
                        ]
                    )
                )
                # The run is suspended (an approval) or waits inside a tool call (a question): the
                # client's next message on the task answers, and this task follows on from here;
                # answered elsewhere (the console, /api/approvals, the CLI), the watch does.
                if binding.watch is None or binding.watch.done():
                    binding.watch = asyncio.create_task(self._watch(record, binding, updater, pb))
                return
            if channel == "done":
                await self._finish(record, binding, data, updater)
                return
            if channel == "answer" and data.get("type") == "delta":
                continue  # the answer is the `answer` artifact at the end, not its drafts
            await updater.update_status(
                pb.TaskState.TASK_STATE_WORKING,
                updater.new_agent_message([new_data_part(_jsonable({"channel": channel, **data}))]),
            )
        if record.finished:  # the log ended before this follower saw `done`
            await self._finish(record, binding, {"status": record.status, "error": record.error}, updater)

    async def _watch(self, record: RunRecord, binding: _Binding, updater: Any, pb: Any) -> None:
        """Once the run says anything after its `input-required` (an approval decided or a
        question answered elsewhere, or the client's message), follow it on the task's queue,
        which the SDK keeps open between requests: `GetTask` and `SubscribeToTask` then see the
        task go on (`working`, then its end) without the client having to send a message. Bounded
        by the run: its log ends when the run does."""
        async for _ in record.follow(binding.sent):
            break
        async with binding.lock:
            await self._follow(record, binding, updater, pb)

    async def _finish(self, record: RunRecord, binding: _Binding, data: dict[str, Any], updater: Any) -> None:
        from a2a.helpers.proto_helpers import new_text_part

        if binding.ended:  # a second follower (the watch, a queued message) of a finished run
            return
        binding.ended = True

        status = record.status
        answer = record.result.final_answer if record.result is not None else None
        if status == "success":
            if answer is not None:
                await updater.add_artifact([new_text_part(str(answer))], name=ANSWER_ARTIFACT)
            await updater.complete()
        elif status == "cancelled":
            await updater.cancel(self._text(updater, str(data.get("error") or "cancelled")))
        else:
            await updater.failed(
                self._text(updater, str(data.get("error") or record.error or "the run failed"))
            )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        from a2a.server.tasks import TaskUpdater

        binding = self.tasks.get(str(context.task_id))
        if binding is not None:
            try:
                record = self.registry.get(binding.run_id)
            except NotFound:
                record = None
            if record is not None and not record.finished:
                if record.status == "suspended":
                    record.cancelling = True  # the run ends cancelled once its approvals are denied
                    for approval_id in record.waiting():
                        self.registry.decide(
                            approval_id, False, "the A2A task was cancelled", record.thread_id
                        )
                else:
                    self.registry.cancel(record.run_id)
        updater = TaskUpdater(event_queue, str(context.task_id), str(context.context_id))
        await updater.cancel()


def _ask(data: dict[str, Any]) -> str:
    """The human-readable line of an `input-required` status."""
    if data.get("status") == "elicitation":
        question = data.get("elicitation") or {}
        return f"question: {question.get('message', '')} (answer with a data part of the values asked for)"
    tools = ", ".join(
        f"{a.get('tool')} {json.dumps(a.get('arguments'), default=str)}" for a in data.get("approvals", [])
    )
    return f'approval needed: {tools} (answer {{"decision": "approve" | "deny", "reason"?}})'


def a2a_routes(
    registry: RunRegistry,
    sample: Callable[[], AgentLike],
    card: A2ACard | None,
    *,
    token: bool,
    version: str,
) -> list[ApiRoute]:
    """The A2A routes (the card and the JSON-RPC endpoint), as entries of the route table;
    `a2a-sdk` is imported on the first request, and its absence is a 501 naming the extra."""
    state: dict[str, Any] = {}
    config = card or A2ACard()

    def handler(url: str) -> Any:
        if "handler" not in state:
            sdk()
            from a2a.server.request_handlers import DefaultRequestHandler
            from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
            from a2a.server.tasks import InMemoryTaskStore

            executor = cast("AgentExecutor", RunExecutor(registry))  # duck-typed: a2a is imported lazily
            built = agent_card(sample(), config, url, token=token, version=version)
            request_handler = DefaultRequestHandler(
                agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=built
            )
            state["handler"] = request_handler
            state["dispatcher"] = JsonRpcDispatcher(request_handler=request_handler)
        return state["dispatcher"]

    def endpoint_url(request: Request) -> str:
        return str(request.base_url).rstrip("/") + RPC_PATH

    async def get_card(request: Request, _body: None) -> AgentCardBody | Response:
        try:
            sdk()
        except A2AUnavailable as exc:
            return error_response(501, str(exc))
        from a2a.server.request_handlers.response_helpers import agent_card_to_dict

        built = agent_card(sample(), config, endpoint_url(request), token=token, version=version)
        return AgentCardBody.model_validate(agent_card_to_dict(built))

    async def rpc(request: Request, _body: None) -> Response:
        try:
            dispatcher = handler(endpoint_url(request))
        except A2AUnavailable as exc:
            return error_response(501, str(exc))
        answer: Response = await dispatcher.handle_requests(request)
        return answer

    return [
        ApiRoute(
            "GET", CARD_PATH, get_card, "the A2A agent card (name, skills, the JSON-RPC endpoint, its "
            "auth scheme)", AgentCardBody, errors=(501,), tag="a2a",
        ),
        ApiRoute(
            "POST", RPC_PATH, rpc, "A2A 1.0 JSON-RPC: SendMessage, SendStreamingMessage (SSE), GetTask, "
            "CancelTask, SubscribeToTask (SSE)", JsonRpcResponse, JsonRpcRequest, errors=(501,), tag="a2a",
            read_body=False,
        ),
    ]  # fmt: skip


__all__ = ["A2ACard", "A2ASkill", "A2AUnavailable", "a2a_routes", "agent_card"]
