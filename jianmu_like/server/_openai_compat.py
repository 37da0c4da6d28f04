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
request, answering those calls with `tool` messages, resumes the run (`server._client_tools`). A
`response_format` becomes the run's output schema (`server._response_format`).

A run that needs a human approval cannot answer: the response is an error (409 `approval_required`,
or an error chunk in a stream) telling where to approve and how to read the answer afterwards.

Streaming sends the role at once, the model's reasoning as it arrives (`delta.reasoning_content`,
as llama.cpp and DeepSeek do; the whole reply carries it on `message.reasoning_content`: see
`server._chat_reasoning`), and the final answer when the agent knows it is final: a reply's text
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
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..models._messages import Message, ai, human, system
from ._chat_reasoning import ChatReasoning
from ._client_tools import (
    ClientRequestError,
    NamedChoice,
    ToolAnswers,
    ToolSpec,
    client_calls,
    history_message,
    parse_client_tools,
    tool_call_items,
)
from ._idempotency import IdempotencyKeys, Remembered, identify
from ._openai_errors import OpenAIError, OpenAIErrorShape, invalid, refuse_legacy_functions
from ._response_format import ResponseFormat, output_schema
from ._routes import ApiRoute, BadRequest
from ._run_record import NotFound, RunConflict, RunRecord
from ._runs import RunRegistry
from ._schemas import ChatCompletion, ModelCard, ModelList
from ._v1_runs import (
    StreamStops,
    failure_error,
    replayed,
    resume_client_run,
    start_client_run,
    stored_approval_error,
    usage_totals,
)

__all__ = ["ChatCompletionRequest", "OpenAIError", "OpenAIErrorShape", "conversation", "openai_routes"]

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


def _article(word: str) -> str:
    """ "an" before a vowel ("an assistant message"), else "a"."""
    return "an" if word[:1].lower() in "aeiou" else "a"


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
            f"the last message must be the user's question (got {_article(last.role)} {last.role} message"
            + (")" if history[-1].content else " without text)"),
            "invalid_request_error",
            "invalid_messages",
        )
    return history[:-1], str(history[-1].content), None


def approval_error(record: RunRecord, base_url: str) -> OpenAIError:
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
        retry=False,  # a retry changes nothing until someone decides (see server._idempotency)
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
        pending = message.event == "approval" and message.data.get("status") == "pending"
        if pending and record.status == "suspended":  # else decided since (a retry replaying the log)
            if client_calls(record) and record.waits_for_client():
                yield "tool_calls", {"tool_calls": tool_call_items(record)}
            else:
                yield "approval", {}
            return
        if message.event == "done":
            yield ("answer" if message.data.get("status") == "success" else "failure"), message.data
            return
    yield "failure", {"error": record.error or "the run ended without an answer"}


class V1RunOutcome:
    """What a `/v1` request reads of its run: the live run (`record`, followed from its message
    `after`) or, for a retry its idempotency key answers, the run remembered (`found`). One rule
    for chat completions and Responses: how the run's steps are read and which error an ending
    other than an answer is."""

    def __init__(self, record: RunRecord | None, found: Remembered | None, after: int, base_url: str) -> None:
        self.record, self.found, self.after, self.base_url = record, found, after, base_url

    def steps(self, reasoning: ChatReasoning) -> AsyncIterator[tuple[str, Any]]:
        if self.record is not None:
            return progress(self.record, reasoning, self.after)
        assert self.found is not None
        return replayed(self.found)

    def error(self, kind: str, done: dict[str, Any]) -> OpenAIError:
        record, found = self.record, self.found
        if record is not None and kind == "approval":
            return approval_error(record, self.base_url)
        if record is None and found is not None and kind in ("approval", "interrupted"):
            return stored_approval_error(found, kind, self.base_url)
        failure = record.model_failure if record is not None else None
        if record is None and found is not None and found.outcome is not None:
            failure = found.outcome.get("model_failure")
        return failure_error(done, failure)


def answer_content(record: RunRecord | None, done: dict[str, Any], structured: bool) -> str:
    """The response's content: for a request with a `response_format`, the validated value as
    JSON (whatever the model wrapped around it); else the answer as the agent gave it."""
    output = record.result.output if record is not None and record.result is not None else None
    if output is None or not structured:
        return str(done.get("answer") or "")
    if isinstance(output, BaseModel):
        return output.model_dump_json()
    return json.dumps(output, ensure_ascii=False, separators=(",", ":"))


def openai_routes(
    registry: RunRegistry,
    model_name: Callable[[], str],
    read_body: Callable[[Request], Awaitable[ChatCompletionRequest]],
    keys: IdempotencyKeys | None = None,
) -> list[ApiRoute]:
    """The `/v1/` routes over `registry`; `model_name()` names the served agent; `keys` maps a
    request's retries to its run (see `server._idempotency`; None: memory only)."""
    created = int(time.time())
    ids = keys if keys is not None else IdempotencyKeys(lambda: None)
    stops = StreamStops(registry)

    def model_card() -> ModelCard:
        return ModelCard(id=model_name(), object="model", created=created, owned_by=OWNER)

    def unknown_model(wanted: str) -> OpenAIError:
        name = model_name()
        return OpenAIError(
            404,
            f"no model {wanted!r}: this server serves {name!r} (GET /v1/models)",
            "invalid_request_error",
            "model_not_found",
            param="model",
        )

    async def list_models(_request: Request, _body: None) -> ModelList:
        return ModelList(object="list", data=[model_card()])

    async def retrieve_model(request: Request, _body: None) -> ModelCard | Response:
        wanted = request.path_params["model_id"]
        if wanted != model_name():
            return unknown_model(wanted).response()
        return model_card()

    async def chat_completions(request: Request, _body: None) -> Response:
        try:
            return await _complete(request)
        except OpenAIError as exc:
            return exc.response()
        except ClientRequestError as exc:
            return invalid(str(exc), exc.code, exc.param).response()
        except RunConflict as exc:
            return OpenAIError(409, str(exc), "conflict", "thread_busy").response()
        except NotFound as exc:
            return OpenAIError(404, str(exc), "not_found", "thread_not_found").response()

    async def _complete(request: Request) -> Response:
        try:
            body = await read_body(request)
        except BadRequest as exc:  # a body over the limit is not one: BodyLimit answers 413
            field = exc.detail[0]["field"] if exc.detail else None
            raise invalid(str(exc), "invalid_body", None if field == "body" else field) from None
        name = model_name()
        if body.model != name:
            raise unknown_model(body.model)
        refuse_legacy_functions(body)
        history, question, answers = conversation(body.messages)
        structured = body.response_format is not None and body.response_format.type != "text"
        thread = body.thread_id or (f"user:{body.user}" if body.user else None)
        base = str(request.base_url).rstrip("/")
        after, spent = 0, None
        async with ids.claim(identify(request.headers, body)) as claim:
            found = claim.found
            record = registry.runs.get(found.run_id) if found is not None else None
            if found is None:
                if thread is not None:
                    await stops.settle(thread)
                if answers is not None:
                    record, after, spent = resume_client_run(registry, answers, thread)
                else:
                    client = parse_client_tools(body.tools, body.tool_choice, body.parallel_tool_calls)
                    schema = output_schema(body.response_format)
                    record = start_client_run(registry, question, thread, history, client, schema)
                claim.remember(record)
        run_id = record.run_id if record is not None else found.run_id if found is not None else ""
        thread_id = record.thread_id if record is not None else found.thread_id if found is not None else ""
        ident = f"chatcmpl-{run_id}"
        extra = {"run_id": run_id, "thread_id": thread_id}

        outcome = V1RunOutcome(record, found, after, base)
        steps, error = outcome.steps, outcome.error

        if body.stream:
            include_usage = body.stream_options is not None and body.stream_options.include_usage
            return _stream(record, steps, error, ident, name, include_usage, extra, structured, spent)
        reasoning = ChatReasoning()
        async for kind, done in steps(reasoning):
            if kind not in ("reasoning", "answer", "tool_calls"):
                raise error(kind, done)
        message: dict[str, Any] = {"role": "assistant", "content": None}
        finish = "stop"
        if kind == "tool_calls":
            finish, message["tool_calls"] = "tool_calls", done["tool_calls"]
            usage = (
                record.result.usage.model_dump() if record is not None and record.result is not None else None
            )
        else:
            message["content"], usage = answer_content(record, done, structured), done.get("usage")
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
            usage=usage_totals(usage, spent),
            **extra,
        )
        return JSONResponse(completion.model_dump(mode="json"))

    def _stream(
        record: RunRecord | None,
        steps: Callable[[ChatReasoning], AsyncIterator[tuple[str, Any]]],
        error: Callable[[str, dict[str, Any]], OpenAIError],
        ident: str,
        name: str,
        include_usage: bool,
        extra: dict[str, Any],
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
            async for kind, done in steps(ChatReasoning()):
                if kind == "reasoning":
                    yield chunk([{"index": 0, "delta": {"reasoning_content": done}, "finish_reason": None}])
                elif kind == "tool_calls":
                    for position, item in enumerate(done["tool_calls"]):
                        delta = {"tool_calls": [{"index": position, **item}]}
                        yield chunk([{"index": 0, "delta": delta, "finish_reason": None}])
                elif kind != "answer":  # as OpenAI streams an error: its object in a data chunk, then stop
                    yield ServerSentEvent(data=json.dumps(error(kind, done).body(), ensure_ascii=False))
                    return
            if kind == "tool_calls":
                reason = "tool_calls"
                result = record.result if record is not None else None
                usage = usage_totals(result.usage.model_dump() if result is not None else None, spent)
            else:
                reason = "stop"
                answer = answer_content(record, done, structured)
                if answer:
                    yield chunk([{"index": 0, "delta": {"content": answer}, "finish_reason": None}])
                usage = usage_totals(done.get("usage"), spent)
            finish = [{"index": 0, "delta": {}, "finish_reason": reason}]
            if include_usage:
                yield chunk(finish)
                yield chunk([], usage=usage)
            else:
                yield chunk(finish, usage=usage)
            yield ServerSentEvent(data="[DONE]")

        source = events() if record is None else stops.watched(record, events())
        return EventSourceResponse(source, ping=15, headers={"Cache-Control": "no-store"})

    return [
        ApiRoute("GET", "/v1/models", list_models, "the served agent, as a model", ModelList, tag="openai"),
        ApiRoute(
            "GET",
            "/v1/models/{model_id}",
            retrieve_model,
            "the served agent, as a model (404 `model_not_found` for another name)",
            ModelCard,
            errors=(404,),
            tag="openai",
        ),
        ApiRoute(
            "POST",
            "/v1/chat/completions",
            chat_completions,
            "ask the agent, as a chat completion (`stream: true`: text/event-stream of chunks; "
            "`Idempotency-Key`: retries get the same run)",
            ChatCompletion,
            ChatCompletionRequest,
            errors=(400, 404, 409, 429, 500),
            tag="openai",
            read_body=False,  # refusals in the OpenAI shape, with their codes
        ),
    ]
