"""The Responses API: `POST /v1/responses` (whole, or streamed as its typed events) and
`GET /v1/responses/{id}`, for the SDKs and tools that default to it (OpenAI's successor to chat
completions, also published as the Open Responses specification).

It is the same face as `/v1/chat/completions` (`server.openai_compat`), on the same run core:
the agent is the model named by `model`, a response is a run of the registry (seen in the
console and `GET /api/runs/{id}`), and everything a chat completion does with a run is done the
same way here, in `server._v1_runs`: a request's function `tools` are client tools (a call of one
ends the response with `function_call` items; the next request's `function_call_output` items
resume the run), `text.format` is the run's output schema (`server.response_format`), a run
waiting for a human is a 409 `approval_required`, a failed one a 500, errors in the OpenAI shape
(`server.openai_errors`), and an `Idempotency-Key` (or an SDK's retry) names one run.

Conversations: a response id names its conversation (a thread of the server: `resp_<thread>_
<run>_<n>`), so `previous_response_id` continues it, also after a restart of a server with a
checkpoint store; its `input` is then the next user message (or the function call outputs the
previous response asked for). Without it, `input` is the whole conversation (a string is one
user message) and `instructions` its system message. `reasoning` items a client sends back are
skipped: the agent's model already had its reasoning in its own run.

Output: the model's reasoning as a `reasoning` item (streamed as `response.reasoning_text.delta`
as it arrives), then the answer as a `message` item with one `output_text` part, or the client
tool calls as `function_call` items. As on chat completions, the answer is streamed once the
agent knows it is final (a reply's text may turn out to be a thought before a tool call).

Fields of the API this server cannot honour are refused (400 naming the field), never ignored:
`background`, `conversation`, `prompt`, `store: false` (every run is kept by the server for the
console, within its retention), non-function tools, non-text input. Sampling fields
(`temperature`, `max_output_tokens`, `reasoning`, ...) are accepted and left to the agent
file's model settings, as on chat completions.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..models._messages import Message, ToolCall, ai, human, system, tool_message
from ._chat_reasoning import ChatReasoning
from ._client_tools import (
    ClientRequestError,
    FunctionDefinition,
    NamedChoice,
    ToolAnswers,
    ToolSpec,
    parse_client_tools,
)
from ._idempotency import IdempotencyKeys, identify
from ._openai_compat import V1RunOutcome, answer_content
from ._openai_errors import OpenAIError, invalid
from ._response_format import JSONSchemaFormat, ResponseFormat, output_schema
from ._responses_stream import function_calls, message_item, reasoning_item, typed_events, usage_of
from ._routes import ApiRoute, BadRequest, read_body
from ._run_record import NotFound, RunConflict
from ._runs import RunRegistry
from ._v1_runs import (
    StreamStops,
    resume_client_run,
    start_client_run,
)

__all__ = ["ResponseObject", "ResponsesRequest", "responses_routes"]

_ID = re.compile(r"resp_([0-9a-f]{16})_([0-9a-f]{16})_(\d{1,9})")
KEPT = 10_000
"""Finished responses kept for `GET /v1/responses/{id}` at most (and only while their run is)."""


class ContentPart(BaseModel):
    """One part of an input message: text is taken (the agent reads text)."""

    model_config = ConfigDict(extra="allow")

    type: str
    text: str | None = None


class InputItem(BaseModel):
    """One item of `input`: a message (`role`, `content`), a `function_call` the model made, a
    `function_call_output` answering one, or a `reasoning` item (skipped)."""

    model_config = ConfigDict(extra="allow")

    type: str = "message"
    role: Literal["user", "assistant", "system", "developer"] | None = None
    content: str | list[ContentPart] | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None
    output: str | list[ContentPart] | None = None


class FunctionTool(BaseModel):
    """One entry of `tools` (the Responses API's flat function tool)."""

    model_config = ConfigDict(extra="allow")

    type: str
    name: str | None = None
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class FunctionChoice(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: Literal["function"]
    name: str


class TextFormat(BaseModel):
    """`text.format`: `text`, `json_object`, or `json_schema` (its name and schema inline)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    type: Literal["text", "json_object", "json_schema"]
    name: str | None = Field(default=None, min_length=1, max_length=64)
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None
    description: str | None = None


class TextConfig(BaseModel):
    model_config = ConfigDict(extra="allow")

    format: TextFormat | None = None


class ResponsesRequest(BaseModel):
    """`POST /v1/responses`."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1)
    input: str | list[InputItem]
    instructions: str | None = None
    previous_response_id: str | None = Field(default=None, max_length=200)
    tools: list[FunctionTool] | None = None
    """Client tools: offered to the agent's model beside its own; the client runs their calls."""
    tool_choice: Literal["auto", "none", "required"] | FunctionChoice | None = None
    parallel_tool_calls: bool | None = None
    text: TextConfig | None = None
    """`text.format`: the answer's shape (the run's output schema)."""
    stream: bool = False
    store: bool | None = None
    background: bool | None = None
    conversation: Any = None
    prompt: Any = None
    metadata: dict[str, str] | None = None


class ResponseObject(BaseModel):
    """A response (`object: "response"`): its status, output items and usage; streamed, the
    same object arrives in `response.completed`."""

    model_config = ConfigDict(extra="allow")

    id: str
    object: Literal["response"]
    created_at: int
    status: Literal["completed", "failed", "in_progress", "incomplete"]
    model: str
    output: list[dict[str, Any]]
    usage: dict[str, Any] | None = None
    previous_response_id: str | None = None
    run_id: str
    thread_id: str


def response_id(thread_id: str, run_id: str, after: int) -> str:
    """A response's id: its conversation, its run and where in the run's log it starts."""
    return f"resp_{thread_id}_{run_id}_{after}"


def _refuse_unsupported(body: ResponsesRequest) -> None:
    if body.background:
        raise invalid(
            "background responses are not supported: ask without background", "unsupported", "background"
        )
    if body.conversation is not None:
        raise invalid(
            "conversation objects are not supported: continue a conversation with previous_response_id",
            "unsupported",
            "conversation",
        )
    if body.prompt is not None:
        raise invalid(
            "prompt templates are not supported: send instructions and input", "unsupported", "prompt"
        )
    if body.store is False:
        raise invalid(
            "store: false is not supported: the server keeps every run (its console shows them, "
            "within its retention); leave store out",
            "unsupported",
            "store",
        )


def _text(content: str | list[ContentPart] | None, where: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    texts = []
    for part in content:
        if part.type not in ("input_text", "output_text", "text") or part.text is None:
            raise invalid(
                f"{where}: a {part.type!r} content part is not accepted (the agent reads text)",
                "unsupported_content",
                where,
            )
        texts.append(part.text)
    return "".join(texts)


def _items(body: ResponsesRequest) -> list[InputItem]:
    if isinstance(body.input, str):
        return [InputItem(type="message", role="user", content=body.input)]
    return body.input


def conversation(items: list[InputItem]) -> tuple[list[Message], str, ToolAnswers | None]:
    """The history before the last user message and that message; or, when the items end with
    `function_call_output` items, the client's results for the calls (the question is empty)."""
    history: list[Message] = []
    for index, item in enumerate(items):
        where = f"input[{index}]"
        if item.type == "message":
            if item.role is None:
                raise invalid(f"{where}: a message needs its role", "invalid_input", f"{where}.role")
            text = _text(item.content, f"{where}.content")
            if item.role == "user":
                history.append(human(text))
            elif item.role == "assistant":
                history.append(ai(text))
            else:
                history.append(system(text))
        elif item.type == "function_call":
            if not item.call_id or not item.name:
                raise invalid(f"{where}: a function_call needs its call_id and name", "invalid_input", where)
            call = ToolCall.from_raw(item.call_id, item.name, item.arguments or "{}")
            last = history[-1] if history else None
            if last is not None and last.role == "assistant" and not last.content and last.tool_calls:
                history[-1] = ai(None, tool_calls=[*last.tool_calls, call])
            elif last is not None and last.role == "assistant" and not last.tool_calls:
                history[-1] = ai(last.content or None, tool_calls=[call])
            else:
                history.append(ai(None, tool_calls=[call]))
        elif item.type == "function_call_output":
            if not item.call_id:
                raise invalid(f"{where}: a function_call_output needs its call_id", "invalid_input", where)
            history.append(tool_message(_text(item.output, f"{where}.output"), item.call_id))
        elif item.type != "reasoning":  # the agent's own reasoning, sent back: its run had it
            raise invalid(
                f"{where}: input items of type {item.type!r} are not accepted (messages, function_call, "
                "function_call_output, reasoning)",
                "unsupported_input",
                f"{where}.type",
            )
    if not history:
        raise invalid("input is empty: send the user's message", "invalid_input", "input")
    asked = len(history)
    while asked > 0 and history[asked - 1].role == "tool":
        asked -= 1
    if asked < len(history):
        calls = history[asked - 1].tool_calls if asked > 0 else None
        answers = ToolAnswers(
            results={m.tool_call_id or "": str(m.content or "") for m in history[asked:]},
            calls=list(calls or []),
        )
        return history[: max(asked - 1, 0)], "", answers
    last = history[-1]
    if last.role != "user" or not last.content:
        raise invalid(
            "the last input item must be the user's message (or function_call_output items)",
            "invalid_input",
            "input",
        )
    return history[:-1], str(last.content), None


def _client_tools(body: ResponsesRequest) -> Any:
    """The request's tools and tool choice in the shape chat completions' client tools take."""
    specs = None
    if body.tools:
        specs = []
        for index, spec in enumerate(body.tools):
            if spec.type != "function" or spec.name is None:
                raise ClientRequestError(
                    f"tools[{index}]: only function tools are supported (got type {spec.type!r})",
                    f"tools[{index}].type",
                )
            function = FunctionDefinition(
                name=spec.name, description=spec.description, parameters=spec.parameters, strict=spec.strict
            )
            specs.append(ToolSpec(type="function", function=function))
    choice: str | NamedChoice | None = None
    if isinstance(body.tool_choice, FunctionChoice):
        choice = NamedChoice(type="function", function=FunctionDefinition(name=body.tool_choice.name))
    else:
        choice = body.tool_choice
    return parse_client_tools(specs, choice, body.parallel_tool_calls)


def _format(body: ResponsesRequest) -> ResponseFormat | None:
    spec = body.text.format if body.text is not None else None
    if spec is None:
        return None
    if spec.type != "json_schema":
        return ResponseFormat(type=spec.type)
    if spec.name is None:
        raise ClientRequestError("text.format of type json_schema needs its name", "text.format.name")
    schema = JSONSchemaFormat.model_validate(
        {"name": spec.name, "schema": spec.schema_, "strict": spec.strict, "description": spec.description}
    )
    return ResponseFormat(type="json_schema", json_schema=schema)


def responses_routes(
    registry: RunRegistry, model_name: Callable[[], str], keys: IdempotencyKeys | None = None
) -> list[ApiRoute]:
    """The Responses API routes over `registry`; `model_name()` names the served agent; `keys`
    maps a request's retries to its run (see `server._idempotency`)."""
    ids = keys if keys is not None else IdempotencyKeys(lambda: None)
    stops = StreamStops(registry)
    kept: dict[str, dict[str, Any]] = {}
    """Finished responses by id (for GET), while their run is kept."""
    instructions: dict[str, str | None] = {}
    """Each conversation's instructions (by thread): a continuation may repeat, not change them."""

    def keep(response: dict[str, Any]) -> None:
        for old in [key for key, value in kept.items() if value["run_id"] not in registry.runs]:
            del kept[old]
        while len(kept) >= KEPT:
            del kept[next(iter(kept))]
        kept[response["id"]] = response

    async def create(request: Request, _body: None) -> Response:
        try:
            return await _create(request)
        except OpenAIError as exc:
            return exc.response()
        except ClientRequestError as exc:
            return invalid(str(exc), exc.code, exc.param).response()
        except RunConflict as exc:
            return OpenAIError(409, str(exc), "conflict", "thread_busy").response()
        except NotFound as exc:
            return OpenAIError(404, str(exc), "not_found", "previous_response_not_found").response()

    def previous_thread(body: ResponsesRequest) -> str | None:
        if body.previous_response_id is None:
            return None
        match = _ID.fullmatch(body.previous_response_id)
        if match is None:
            raise OpenAIError(
                404,
                f"no response {body.previous_response_id!r} (this server's response ids are "
                "resp_<thread>_<run>_<n>)",
                "invalid_request_error",
                "previous_response_not_found",
                param="previous_response_id",
            )
        thread = match.group(1)
        if body.instructions is not None and thread not in instructions:
            raise invalid(
                "instructions cannot be checked against the conversation's: this server did not start "
                "it (it restarted since); the server keeps the conversation, its system message "
                "included: send no instructions",
                "instructions_unknown",
                "instructions",
            )
        if body.instructions is not None and instructions[thread] != body.instructions:
            raise invalid(
                "instructions differ from those the conversation started with: the server keeps the "
                "conversation, its system message included; send the same instructions or none",
                "instructions_changed",
                "instructions",
            )
        return thread

    async def _create(request: Request) -> Response:
        try:
            body = await read_body(request, ResponsesRequest)
        except BadRequest as exc:
            field = exc.detail[0]["field"] if exc.detail else None
            raise invalid(str(exc), "invalid_body", None if field == "body" else field) from None
        name = model_name()
        if body.model != name:
            raise OpenAIError(
                404,
                f"no model {body.model!r}: this server serves {name!r} (GET /v1/models)",
                "invalid_request_error",
                "model_not_found",
                param="model",
            )
        _refuse_unsupported(body)
        thread = previous_thread(body)
        history, question, answers = conversation(_items(body))
        if thread is not None and (history or (answers is not None and answers.calls)):
            raise invalid(
                "with previous_response_id, input is the next user message or the function_call_output "
                "items the previous response asked for (the server keeps the conversation)",
                "invalid_input",
                "input",
            )
        if thread is None and body.instructions is not None:
            history = [system(body.instructions), *history]
        response_format = _format(body)
        structured = response_format is not None and response_format.type != "text"
        after, spent = 0, None
        async with ids.claim(identify(request.headers, body)) as claim:
            found = claim.found
            record = registry.runs.get(found.run_id) if found is not None else None
            if found is None:
                if thread is not None:
                    await stops.settle(thread)
                if answers is not None:
                    record, after, spent = resume_client_run(registry, answers, thread, field="input")
                else:
                    client = _client_tools(body)
                    schema = output_schema(response_format)
                    record = start_client_run(
                        registry, question, thread, history, client, schema, format_field="text.format"
                    )
                    if thread is None:  # a new conversation: its instructions are known from now on
                        for gone in [t for t in instructions if t not in registry.threads]:
                            del instructions[gone]  # conversations the server no longer holds
                        instructions[record.thread_id] = body.instructions
                claim.remember(record)
        run_id = record.run_id if record is not None else found.run_id if found is not None else ""
        thread_id = record.thread_id if record is not None else found.thread_id if found is not None else ""
        base = str(request.base_url).rstrip("/")
        skeleton: dict[str, Any] = {
            "id": response_id(thread_id, run_id, after),
            "object": "response",
            "created_at": int(time.time()),
            "model": name,
            "previous_response_id": body.previous_response_id,
            "instructions": body.instructions,
            "metadata": body.metadata or {},
            "parallel_tool_calls": body.parallel_tool_calls is not False,
            "tool_choice": body.tool_choice.model_dump()
            if isinstance(body.tool_choice, BaseModel)
            else body.tool_choice or "auto",
            "tools": [tool.model_dump(exclude_none=True) for tool in body.tools or ()],
            "text": body.text.model_dump(by_alias=True, exclude_none=True)
            if body.text
            else {"format": {"type": "text"}},
            "error": None,
            "incomplete_details": None,
            "run_id": run_id,
            "thread_id": thread_id,
        }

        outcome = V1RunOutcome(record, found, after, base)
        steps, error = outcome.steps, outcome.error

        def finished(kind: str, done: dict[str, Any], reasoning: ChatReasoning) -> dict[str, Any]:
            """The whole response of a run that answered or asked for client tool calls."""
            rid = skeleton["id"]
            output: list[dict[str, Any]] = []
            if reasoning.whole is not None:
                output.append(reasoning_item(f"rs_{rid[5:]}", reasoning.whole))
            if kind == "tool_calls":
                output += function_calls(done["tool_calls"])
                result = record.result if record is not None else None
                usage = usage_of(result.usage.model_dump() if result is not None else None, spent)
            else:
                output.append(message_item(f"msg_{rid[5:]}", answer_content(record, done, structured)))
                usage = usage_of(done.get("usage"), spent)
            response = {**skeleton, "status": "completed", "output": output, "usage": usage}
            keep(response)
            return response

        if body.stream:
            source = typed_events(skeleton, steps, error, finished)
            if record is not None:
                source = stops.watched(record, source)
            return EventSourceResponse(source, ping=15, headers={"Cache-Control": "no-store"})
        reasoning = ChatReasoning()
        async for kind, done in steps(reasoning):
            if kind not in ("reasoning", "answer", "tool_calls"):
                raise error(kind, done)
        return JSONResponse(finished(kind, done, reasoning))

    async def retrieve(request: Request, _body: None) -> Response:
        wanted = request.path_params["response_id"]
        if wanted in kept and kept[wanted]["run_id"] in registry.runs:
            return JSONResponse(kept[wanted])
        match = _ID.fullmatch(wanted)
        record = registry.runs.get(match.group(2)) if match is not None else None
        if record is None or record.finished or record.status == "suspended":
            return OpenAIError(
                404,
                f"no response {wanted!r} (a response is kept while its run is: see GET /api/runs)",
                "invalid_request_error",
                "response_not_found",
                param="response_id",
            ).response()
        return JSONResponse(
            {
                "id": wanted,
                "object": "response",
                "created_at": int(time.time()),
                "status": "in_progress",
                "model": model_name(),
                "output": [],
                "usage": None,
                "run_id": record.run_id,
                "thread_id": record.thread_id,
            }
        )

    return [
        ApiRoute(
            "POST",
            "/v1/responses",
            create,
            "ask the agent, as the Responses API (`stream: true`: text/event-stream of typed "
            "response events; `previous_response_id` continues a conversation; `Idempotency-Key`: "
            "retries get the same run)",
            ResponseObject,
            ResponsesRequest,
            errors=(400, 404, 409, 429, 500),
            tag="openai",
            read_body=False,
        ),
        ApiRoute(
            "GET",
            "/v1/responses/{response_id}",
            retrieve,
            "a response (while its run is kept; `in_progress` while it works)",
            ResponseObject,
            errors=(404,),
            tag="openai",
        ),
    ]
