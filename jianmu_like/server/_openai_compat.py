"""The OpenAI-compatible face: `POST /v1/chat/completions` and `GET /v1/models`.

Chat front-ends (Open WebUI, LibreChat) and every OpenAI SDK speak the chat completions API, so
the served agent answers it too: the agent is a model (named by `model`), the request's messages
are the conversation, the reply is the agent's final answer. A run started here is an ordinary
run of the registry (seen in the console, `GET /api/runs/{id}`, its approvals in
`/api/approvals`), so there is one way runs happen, whoever asked.

Conversations: without `thread_id` (an extra body field) or `user`, every request is a fresh
conversation whose history is the request's messages. With either, the server keeps the
conversation (thread `thread_id`, or `user:<user>`): the first request's messages start it, a
later one adds only its last user message (front-ends resend the whole history each time).

Client tools and structured output: a request's `tools` are offered to the agent's model
beside its own, and a call of one ends the response with `finish_reason: "tool_calls"`; the next
request, answering those calls with `tool` messages, resumes the run (`server.client_tools`). A
`response_format` becomes the run's output schema (`server.response_format`).

A run that needs a human approval cannot answer: the response is an error (409 `approval_required`,
or an error chunk in a stream) telling where to approve and how to read the answer afterwards.

Streaming sends the role at once, the model's reasoning as it arrives (`delta.reasoning_content`,
as llama.cpp and DeepSeek do; the whole reply carries it on `message.reasoning_content`: see
`server.chat_reasoning`), and the final answer when the agent knows it is final: a reply's text
may turn out to be a thought before a tool call, which a chat-completions stream cannot withdraw.
Usage comes in the last chunk (per the spec's empty-choices chunk when
`stream_options.include_usage` is set).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as ASGIMessage

from ..errors import JianmuError
from ..models._messages import Message, ai, human, system
from ._chat_reasoning import ChatReasoning
from ._client_tools import (
    ClientRequestError,
    NamedChoice,
    ToolAnswers,
    ToolSpec,
    agent_tool_names,
    answer_decision,
    check_answers,
    client_calls,
    find_answered,
    find_waiting,
    history_message,
    parse_client_tools,
    refuse_clashes,
    tool_call_items,
)
from ._response_format import ResponseFormat, output_schema
from ._routes import ApiRoute
from ._runs import NotFound, RunConflict, RunRecord, RunRegistry
from ._schemas import ChatCompletion, ModelCard, ModelList

OWNER = "jianmu-like"


class TextPart(BaseModel):
    """One part of a multi-part message: only text is taken (the agent reads text)."""

    model_config = ConfigDict(extra="allow")

    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    """One message of the conversation, as the chat completions API sends it."""

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[TextPart] | None = None
    name: str | None = None


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class ChatCompletionRequest(BaseModel):
    """`POST /v1/chat/completions`. Sampling parameters (temperature, max_tokens, ...) are
    accepted and ignored: the agent file's model settings apply, the agent decides how often to
    call its model."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1)
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    user: str | None = Field(default=None, min_length=1, max_length=190)
    thread_id: str | None = Field(default=None, min_length=1, max_length=200)
    n: int = Field(default=1, ge=1, le=1)
    tools: list[ToolSpec] | None = None
    """Client tools: offered to the agent's model beside its own; the client runs their calls."""
    tool_choice: Literal["auto", "none", "required"] | NamedChoice | None = None
    parallel_tool_calls: bool | None = None
    response_format: ResponseFormat | None = None
    """The answer's shape (`json_schema`, `json_object`): the run's output schema."""


class OpenAIError(JianmuError):
    """An error answered in the OpenAI shape: `{"error": {"message", "type", "param", "code"}}`."""

    def __init__(self, status: int, message: str, kind: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.code = code

    def body(self) -> dict[str, Any]:
        return {"error": {"message": str(self), "type": self.kind, "param": None, "code": self.code}}

    def response(self) -> Response:
        return JSONResponse(self.body(), status_code=self.status)


def _text(message: ChatMessage, index: int) -> str:
    content = message.content
    if content is None or isinstance(content, str):
        return content or ""
    texts = []
    for part in content:
        if part.type != "text" or part.text is None:
            raise OpenAIError(
                422,
                f"messages[{index}]: a {part.type!r} content part is not accepted (the agent reads text)",
                "invalid_request_error",
                "unsupported_content",
            )
        texts.append(part.text)
    return "".join(texts)


def conversation(messages: list[ChatMessage]) -> tuple[list[Message], str, ToolAnswers | None]:
    """The history before the last message, and the last message (the question); or, when the
    messages end with `tool` messages, the client's answers to the calls it was asked to run
    (the question is then empty: the waiting run goes on)."""
    last_asked = len(messages)
    while last_asked > 0 and messages[last_asked - 1].role == "tool":
        last_asked -= 1
    history: list[Message] = []
    for index, message in enumerate(messages):
        text = _text(message, index)
        extra = message.model_extra or {}
        earlier = history_message(message.role, text, extra, index)
        if earlier is not None:
            history.append(earlier)
        elif message.role in ("system", "developer"):
            history.append(system(text))
        elif message.role == "user":
            history.append(human(text))
        else:
            history.append(ai(text))
    if last_asked < len(messages):
        asked = history[last_asked - 1] if last_asked > 0 else None
        if asked is None or not asked.tool_calls:
            raise ClientRequestError(
                f"messages[{last_asked}]: tool messages answer the tool calls of the assistant message "
                "before them, and there is none",
                "messages",
            )
        answers = ToolAnswers(
            results={m.tool_call_id or "": m.content or "" for m in history[last_asked:]},
            calls=list(asked.tool_calls),
        )
        return history[: last_asked - 1], "", answers
    last = messages[-1]
    if last.role != "user" or not history[-1].content:
        raise OpenAIError(
            422,
            f"the last message must be the user's question (got a {last.role} message"
            + (")" if history[-1].content else " without text)"),
            "invalid_request_error",
            "invalid_messages",
        )
    return history[:-1], str(history[-1].content), None


def _usage(usage: dict[str, Any] | None, spent: dict[str, int] | None = None) -> dict[str, int]:
    """The usage of a response; `spent` (the run's usage reported by earlier responses: a run
    resumed by a client's tool results) is left out, so a client summing its responses counts
    each model call once."""
    usage = usage or {}
    prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    total = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": int(usage.get("total_tokens") or prompt + completion),
    }
    if spent:
        total = {key: max(0, value - spent.get(key, 0)) for key, value in total.items()}
    return total


def _approval_error(record: RunRecord, base_url: str) -> OpenAIError:
    waiting = [item for item in record.pending() if item.get("kind") != "client_tool"]
    calls = "; ".join(
        f"{a['tool']}({json.dumps(a['arguments'], ensure_ascii=False)}) [approval id {a['id']}]"
        for a in waiting
    )
    return OpenAIError(
        409,
        f"the agent is waiting for a human approval of {calls} before it can answer. Approve or deny "
        f"it in the web console ({base_url}/), with POST {base_url}/api/approvals/<approval id> "
        f'{{"decision": "approve"}} or `jianmu-like approvals`; the run (id {record.run_id}, thread '
        f"{record.thread_id}) then resumes by itself and its answer is at "
        f"GET {base_url}/api/runs/{record.run_id}",
        "approval_required",
        "approval_required",
    )


async def progress(
    record: RunRecord, reasoning: ChatReasoning, after: int = 0
) -> AsyncIterator[tuple[Literal["reasoning", "answer", "approval", "tool_calls", "failure"], Any]]:
    """Follow a run (from its message `after`) until it answers, suspends or fails:
    ("reasoning", text) for each piece of the model's reasoning as it arrives (`reasoning` keeps
    the whole), then one of ("answer", done payload), ("approval", {}), ("tool_calls", the calls
    the client must run: the run waits for nothing else) or ("failure", done payload)."""
    async for message in record.follow(after):
        if piece := reasoning.take(message.event, message.data):
            yield "reasoning", piece
        if message.event == "approval" and message.data.get("status") == "pending":
            kinds = {item.get("kind") for item in message.data.get("approvals", ())}
            if kinds == {"client_tool"}:
                yield "tool_calls", tool_call_items(record)
            else:
                yield "approval", {}
            return
        if message.event == "done":
            yield ("answer" if message.data.get("status") == "success" else "failure"), message.data
            return
    yield "failure", {"error": record.error or "the run ended without an answer"}


def _failure(done: dict[str, Any]) -> OpenAIError:
    termination = done.get("termination") or {}
    code = "invalid_output" if termination.get("reason") == "invalid_output" else "agent_failed"
    return OpenAIError(500, f"the agent failed: {done.get('error') or 'no answer'}", "agent_error", code)


def _content(record: RunRecord, done: dict[str, Any], structured: bool) -> str:
    """The response's content: for a request with a `response_format`, the validated value as
    JSON (whatever the model wrapped around it); else the answer as the agent gave it."""
    output = record.result.output if record.result is not None else None
    if output is None or not structured:
        return str(done.get("answer") or "")
    if isinstance(output, BaseModel):
        return output.model_dump_json()
    return json.dumps(output, ensure_ascii=False, separators=(",", ":"))


def openai_routes(
    registry: RunRegistry,
    model_name: Callable[[], str],
    read_body: Callable[[Request], Awaitable[ChatCompletionRequest]],
) -> list[ApiRoute]:
    """The `/v1/` routes over `registry`; `model_name()` names the served agent."""
    created = int(time.time())

    async def list_models(_request: Request, _body: None) -> ModelList:
        model = ModelCard(id=model_name(), object="model", created=created, owned_by=OWNER)
        return ModelList(object="list", data=[model])

    async def chat_completions(request: Request, _body: None) -> Response:
        try:
            return await _complete(request)
        except OpenAIError as exc:
            return exc.response()
        except ClientRequestError as exc:
            return OpenAIError(400, str(exc), "invalid_request_error", exc.code).response()
        except RunConflict as exc:
            return OpenAIError(409, str(exc), "conflict", "thread_busy").response()
        except NotFound as exc:
            return OpenAIError(404, str(exc), "not_found", "thread_not_found").response()

    async def _complete(request: Request) -> Response:
        try:
            body = await read_body(request)
        except JianmuError as exc:
            raise OpenAIError(422, str(exc), "invalid_request_error", "invalid_body") from None
        name = model_name()
        if body.model != name:
            raise OpenAIError(
                404,
                f"no model {body.model!r}: this server serves {name!r} (GET /v1/models)",
                "invalid_request_error",
                "model_not_found",
            )
        history, question, answers = conversation(body.messages)
        structured = body.response_format is not None and body.response_format.type != "text"
        thread = body.thread_id or (f"user:{body.user}" if body.user else None)
        after, spent = 0, None
        if answers is not None:
            record, after, spent = _answer(answers, thread)
        else:
            record = _start(body, question, thread, history)
        base = str(request.base_url).rstrip("/")
        ident = f"chatcmpl-{record.run_id}"
        extra = {"run_id": record.run_id, "thread_id": record.thread_id}
        if body.stream:
            include_usage = body.stream_options is not None and body.stream_options.include_usage
            return _stream(record, ident, name, base, include_usage, extra, after, structured, spent)
        reasoning = ChatReasoning()
        finish = "stop"
        async for kind, done in progress(record, reasoning, after):
            if kind == "approval":
                raise _approval_error(record, base)
            if kind == "failure":
                raise _failure(done)
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if kind == "tool_calls":
            finish, message["tool_calls"] = "tool_calls", done
            usage = record.result.usage.model_dump() if record.result is not None else None
        else:
            message["content"], usage = _content(record, done, structured), done.get("usage")
        if reasoning.whole is not None:
            message["reasoning_content"] = reasoning.whole
        completion = ChatCompletion(
            id=ident,
            object="chat.completion",
            created=int(time.time()),
            model=name,
            choices=[
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": finish,
                }
            ],
            usage=_usage(usage, spent),
            **extra,
        )
        return JSONResponse(completion.model_dump(mode="json"))

    def _start(
        body: ChatCompletionRequest, question: str, thread: str | None, history: list[Message]
    ) -> RunRecord:
        """A new run for the request's question, with its client tools and output schema."""
        client = parse_client_tools(body.tools, body.tool_choice, body.parallel_tool_calls)
        schema = output_schema(body.response_format)
        inputs: dict[str, Any] = {}
        if client is not None:
            inputs["client_tools"] = client
        if schema is not None:
            inputs["output_schema"] = schema
        if thread is not None:
            waiting = registry.active.get(thread)
            if waiting is not None and client_calls(waiting):
                ids = ", ".join(client_calls(waiting))
                raise RunConflict(
                    f"run {waiting.run_id} of thread {thread!r} waits for the results of client tool "
                    f"calls {ids}: send the conversation with a tool message answering each"
                )

        def check(agent: Any) -> None:
            for key in inputs:
                if not agent.accepts(key):
                    field = "tools" if key == "client_tools" else "response_format"
                    raise ClientRequestError(
                        f"{field}: the served agent takes no {key.replace('_', ' ')} (only a ReAct "
                        "agent does)",
                        field,
                    )
            if client is not None:
                refuse_clashes(client, agent_tool_names(agent))

        return registry.start(question, thread, history=history, inputs=inputs, check=check)

    def _answer(answers: ToolAnswers, thread: str | None) -> tuple[RunRecord, int, dict[str, int] | None]:
        """Resume the run waiting for these tool results; returns it, where its log stood and
        the usage the client was already told of."""
        record = find_waiting(registry, answers, thread)
        if record is None and (answered := find_answered(registry, answers.results, thread)) is not None:
            raise RunConflict(
                f"tool call {', '.join(map(repr, answers.results))} was already answered: run "
                f"{answered.run_id} took that answer (its outcome: GET /api/runs/{answered.run_id})"
            )
        if record is None and thread is not None:  # waiting in the store since an earlier server
            decisions = {call_id: answer_decision(text) for call_id, text in answers.results.items()}
            stored = registry.resume_stored(thread, decisions)
            if stored is not None:
                return stored, 0, None
        if record is None:
            ids = ", ".join(map(repr, answers.results))
            raise ClientRequestError(
                f"tool message for unknown tool call id {ids}: no run waits for it (answered "
                "already, expired, or never asked)",
                "messages",
                "unknown_tool_call",
            )
        check_answers(record, answers)
        after = len(record.log)
        spent = _usage(record.result.usage.model_dump()) if record.result is not None else None
        for call_id, content in answers.results.items():
            decision = answer_decision(content)
            registry.decide(call_id, True, decision.reason, record.thread_id, output=decision.output)
        return record, after, spent

    def _stream(
        record: RunRecord,
        ident: str,
        name: str,
        base: str,
        include_usage: bool,
        extra: dict[str, Any],
        after: int = 0,
        structured: bool = False,
        spent: dict[str, int] | None = None,
    ) -> Response:
        stamp = int(time.time())

        def chunk(choices: list[dict[str, Any]], **fields: Any) -> ServerSentEvent:
            data = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": stamp,
                "model": name,
                "choices": choices,
                **fields,
                **extra,
            }
            return ServerSentEvent(data=json.dumps(data, ensure_ascii=False))

        async def events() -> AsyncIterator[ServerSentEvent]:
            yield chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
            async for kind, done in progress(record, ChatReasoning(), after):
                if kind == "reasoning":
                    yield chunk([{"index": 0, "delta": {"reasoning_content": done}, "finish_reason": None}])
                elif kind == "tool_calls":
                    for position, item in enumerate(done):
                        delta = {"tool_calls": [{"index": position, **item}]}
                        yield chunk([{"index": 0, "delta": delta, "finish_reason": None}])
                elif kind != "answer":
                    error = _approval_error(record, base) if kind == "approval" else _failure(done)
                    yield ServerSentEvent(data=json.dumps(error.body(), ensure_ascii=False))
                    return
            if kind == "tool_calls":
                reason = "tool_calls"
                usage = _usage(record.result.usage.model_dump() if record.result is not None else None, spent)
            else:
                reason = "stop"
                answer = _content(record, done, structured)
                if answer:
                    yield chunk([{"index": 0, "delta": {"content": answer}, "finish_reason": None}])
                usage = _usage(done.get("usage"), spent)
            finish = [{"index": 0, "delta": {}, "finish_reason": reason}]
            if include_usage:
                yield chunk(finish)
                yield chunk([], usage=usage)
            else:
                yield chunk(finish, usage=usage)
            yield ServerSentEvent(data="[DONE]")

        return EventSourceResponse(events(), ping=15, headers={"Cache-Control": "no-store"})

    return [
        ApiRoute("GET", "/v1/models", list_models, "the served agent, as a model", ModelList, tag="openai"),
        ApiRoute(
            "POST",
            "/v1/chat/completions",
            chat_completions,
            "ask the agent, as a chat completion (`stream: true`: text/event-stream of chunks)",
            ChatCompletion,
            ChatCompletionRequest,
            errors=(400, 404, 409, 422),
            tag="openai",
            read_body=False,  # refusals in the OpenAI shape, with their codes
        ),
    ]


class OpenAIErrorShape:
    """Answers every error of a `/v1/` request in the OpenAI shape, whatever refused it (the
    security middlewares, Starlette's 404/405, a route): OpenAI clients show only
    `error.message`, so the server's `{"error": "<what and why>"}` becomes
    `{"error": {"message": "<what and why>", "type": ..., "param": null, "code": null}}`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        held: list[ASGIMessage] = []

        async def reshape(message: ASGIMessage) -> None:
            if message["type"] == "http.response.start" and message["status"] >= 400:
                held.append(message)
                return
            if not held:
                await send(message)
                return
            held.append(message)
            if message.get("more_body"):
                return
            start, *parts = held
            body = b"".join(part.get("body", b"") for part in parts)
            headers = MutableHeaders(raw=list(start["headers"]))
            try:
                data = json.loads(body)
            except ValueError:
                data = None
            error = data.get("error") if isinstance(data, dict) else None
            if isinstance(error, str):
                kind = _ERROR_TYPES.get(start["status"], "invalid_request_error")
                shaped = {**data, "error": {"message": error, "type": kind, "param": None, "code": None}}
                body = json.dumps(shaped, ensure_ascii=False).encode()
                headers["content-length"] = str(len(body))
            await send({**start, "headers": headers.raw})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, reshape)


_ERROR_TYPES = {401: "authentication_error", 403: "permission_error", 404: "not_found_error"}
