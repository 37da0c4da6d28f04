"""Client tools on the OpenAI-compatible endpoint: the request's `tools`, and the `tool`
messages that answer the calls the agent made of them.

A request's `tools` are offered to the agent's model beside its own (`nodes._client_tools`); a
call of one suspends the run (a waiting call of kind `client_tool`, like an approval) and the
response ends with `finish_reason: "tool_calls"`. The client runs the calls and sends the same
conversation again with a `tool` message answering each: that request resumes the suspended run
where it stopped, the tool messages becoming the calls' observations.

Which run a request with tool messages resumes: the one waiting for exactly those call ids.
Call ids are the model's, unique within a run and random across runs, so they identify the run
whether the conversation has a server-side thread (`thread_id`, `user`) or not (a stateless
client resending the whole history). With a thread and a checkpoint store, a run suspended
before a server restart is found in the store and resumed from it.

A tool message's size is bounded by the server's body limit (`server.max_body_bytes`, 413
beyond it), and what the agent reads of it is cut like any tool output (`max_output_chars`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .._base.json_schema import compile_schema
from ..errors import JianmuError
from ..guard._approvals import ApprovalDecision
from ..models._messages import Message, ToolCall, ai, tool_message
from ..nodes._client_tools import ClientTool, ClientTools
from ..tools._base import validate_tool_name
from ._run_record import RunConflict, RunRecord
from ._runs import RunRegistry


class ClientRequestError(JianmuError):
    """A request whose client tools, tool messages or tool choice cannot be honoured: 400,
    naming the request field (`param`)."""

    def __init__(self, message: str, param: str, code: str = "invalid_request") -> None:
        super().__init__(message)
        self.param = param
        self.code = code


class FunctionDefinition(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ToolSpec(BaseModel):
    """One entry of the request's `tools`."""

    model_config = ConfigDict(extra="allow")

    type: str
    function: FunctionDefinition | None = None


class NamedChoice(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: Literal["function"]
    function: FunctionDefinition


def parse_client_tools(
    tools: Sequence[ToolSpec] | None,
    tool_choice: str | NamedChoice | None,
    parallel_tool_calls: bool | None,
) -> ClientTools | None:
    """The client tools of a request (None: it offers none), checked: function tools only,
    valid and distinct names, a `tool_choice` that names one of them."""
    if not tools:
        if isinstance(tool_choice, NamedChoice) or tool_choice == "required":
            raise ClientRequestError(
                "tool_choice asks for a tool call, and the request offers no tools", "tool_choice"
            )
        return None
    found: list[ClientTool] = []
    for index, spec in enumerate(tools):
        if spec.type != "function" or spec.function is None:
            raise ClientRequestError(
                f"tools[{index}]: only function tools are supported (got type {spec.type!r})",
                f"tools[{index}].type",
            )
        function = spec.function
        try:
            validate_tool_name(function.name)
        except ValueError as exc:
            raise ClientRequestError(f"tools[{index}]: {exc}", f"tools[{index}].function.name") from None
        if any(t.name == function.name for t in found):
            raise ClientRequestError(
                f"tools[{index}]: two tools are named {function.name!r}", f"tools[{index}].function.name"
            )
        parameters = function.parameters or {"type": "object", "properties": {}}
        try:
            compile_schema(parameters, known_keywords=False)
        except ValueError as exc:
            raise ClientRequestError(
                f"tools[{index}]: the parameters of {function.name!r} are not a valid JSON schema: {exc}",
                f"tools[{index}].function.parameters",
            ) from None
        found.append(
            ClientTool(
                name=function.name,
                description=function.description or "",
                parameters=parameters,
                strict=function.strict,
            )
        )
    choice: str = "auto"
    if isinstance(tool_choice, NamedChoice):
        choice = tool_choice.function.name
        if all(t.name != choice for t in found):
            names = ", ".join(t.name for t in found)
            raise ClientRequestError(
                f"tool_choice names {choice!r}, which is not one of the request's tools ({names})",
                "tool_choice",
            )
    elif tool_choice is not None:
        if tool_choice not in ("auto", "none", "required"):
            raise ClientRequestError(
                f"tool_choice {tool_choice!r} is not one of auto, none, required or a named function",
                "tool_choice",
            )
        choice = tool_choice
    return ClientTools(tools=found, choice=choice, parallel=parallel_tool_calls is not False)


def refuse_clashes(client: ClientTools, agent_tools: Iterable[str]) -> None:
    """A client tool named like one of the agent's own would make the model's calls ambiguous."""
    clash = sorted(client.names() & set(agent_tools))
    if clash:
        raise ClientRequestError(
            f"client tool {', '.join(map(repr, clash))} has the name of one of the agent's own tools; "
            "rename it",
            "tools",
        )


def agent_tool_names(agent: Any) -> list[str]:
    """The tools of the served agent that are known now (tool providers that have not listed
    theirs yet are checked by the agent itself, before its first model call)."""
    toolsets = getattr(agent, "toolsets", None)
    if toolsets is None:
        return []
    return [name for toolset in toolsets() if toolset.listed for name in toolset.names()]


class ToolAnswers(BaseModel):
    """The trailing `tool` messages of a request: the client's results, by call id."""

    results: dict[str, str] = Field(default_factory=dict)
    calls: list[ToolCall] = Field(default_factory=list)
    """The calls they answer (the assistant message before them)."""


def history_message(role: str, text: str, extra: dict[str, Any], index: int) -> Message | None:
    """An assistant message with tool calls, or a tool message, of an earlier turn (the client
    resends the whole conversation): kept in the history as the model saw it."""
    if role == "assistant" and extra.get("tool_calls"):
        return ai(text or None, tool_calls=tool_calls_of(extra["tool_calls"], index))
    if role == "tool":
        call_id = extra.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise ClientRequestError(
                f"messages[{index}]: a tool message needs its tool_call_id", f"messages[{index}].tool_call_id"
            )
        return tool_message(text, call_id)
    return None


def tool_calls_of(raw: Any, index: int) -> list[ToolCall]:
    if not isinstance(raw, list):
        raise ClientRequestError(
            f"messages[{index}]: tool_calls must be a list", f"messages[{index}].tool_calls"
        )
    calls = []
    for position, item in enumerate(raw):
        function = item.get("function") if isinstance(item, dict) else None
        if not isinstance(function, dict) or not isinstance(item.get("id"), str):
            raise ClientRequestError(
                f"messages[{index}].tool_calls[{position}]: needs an id and a function",
                f"messages[{index}].tool_calls",
            )
        calls.append(ToolCall.from_raw(item["id"], str(function.get("name")), function.get("arguments")))
    return calls


def find_waiting(registry: RunRegistry, answers: ToolAnswers, thread_id: str | None) -> RunRecord | None:
    """The suspended run waiting for the client's results of the answered calls (in
    `thread_id`, if given): see the module docstring. Backends that number call ids from 1 in
    every conversation make ids repeat across runs: then the calls' names and arguments (the
    assistant message the client sends back) pick the run, and a tie is a RunConflict asking for
    a thread."""
    wanted = set(answers.results)
    found = [
        record
        for record in list(registry.runs.values())
        if (thread_id is None or record.thread_id == thread_id) and wanted & set(client_calls(record))
    ]
    if len(found) > 1:
        asked = {(c.id, c.name, json.dumps(c.arguments, sort_keys=True)) for c in answers.calls}
        found = [
            record
            for record in found
            if {
                (i["call_id"], i["tool"], json.dumps(i["arguments"], sort_keys=True))
                for i in client_calls(record).values()
            }
            <= asked
        ]
    if len(found) > 1:
        runs = ", ".join(record.run_id for record in found)
        raise RunConflict(
            f"tool call {', '.join(map(repr, sorted(wanted)))} is pending in several runs ({runs}) with "
            "the same calls; keep such conversations on the server (thread_id or user) to tell them apart"
        )
    return found[0] if found else None


def find_answered(registry: RunRegistry, call_ids: Iterable[str], thread_id: str | None) -> RunRecord | None:
    """The run these calls were answered in already (a second request with the same answers)."""
    wanted = set(call_ids)
    for record in list(registry.runs.values()):
        if (thread_id is None or record.thread_id == thread_id) and wanted & set(record.decided):
            return record
    return None


def client_calls(record: RunRecord) -> dict[str, dict[str, Any]]:
    """The client tool calls a suspended run waits for, by call id (not yet answered)."""
    return {
        item["call_id"]: item
        for item in record.pending()
        if item.get("kind") == "client_tool" and not item["decided"]
    }


def check_answers(record: RunRecord, answers: ToolAnswers) -> None:
    """Every waiting client call answered, and nothing else: OpenAI's rule (each call of the
    assistant message has its tool message) and the run's."""
    waiting = client_calls(record)
    unknown = sorted(set(answers.results) - set(waiting))
    if unknown:
        raise ClientRequestError(
            f"tool message for unknown tool call id {', '.join(map(repr, unknown))}: run "
            f"{record.run_id} waits for {', '.join(map(repr, waiting)) or 'no calls'}",
            "messages",
            "unknown_tool_call",
        )
    missing = sorted(set(waiting) - set(answers.results))
    if missing:
        raise ClientRequestError(
            f"no tool message answers tool call {', '.join(map(repr, missing))} (run {record.run_id} "
            "waits for the results of all its calls)",
            "messages",
            "missing_tool_result",
        )


def answer_decision(content: str) -> ApprovalDecision:
    """A tool message's content as the waiting call's decision: its result."""
    return ApprovalDecision(approved=True, reason="answered by the client", output=content)


def tool_call_items(record: RunRecord) -> list[dict[str, Any]]:
    """The waiting client calls in the OpenAI `message.tool_calls` shape, in call order."""
    return [
        {
            "id": item["call_id"],
            "type": "function",
            "function": {
                "name": item["tool"],
                "arguments": json.dumps(item["arguments"], ensure_ascii=False),
            },
        }
        for item in client_calls(record).values()
    ]
