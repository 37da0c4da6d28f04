"""A request's content in the OpenTelemetry GenAI conventions' shapes, for content capture.

With `telemetry.capture_content` on, a chat span carries what the model was asked: the
conventions' `gen_ai.system_instructions` (the system messages, as text parts),
`gen_ai.input.messages` (the rest of the conversation: text parts, `tool_call` parts of the
assistant, `tool_call_response` parts of tool results) and `gen_ai.tool.definitions` (the
functions offered). They travel as plain data on `model.call.started` — lists and mappings, not
JSON text — so the telemetry hub's redaction reaches secret-named keys inside tool arguments
before any subscriber sees them; the OpenTelemetry subscriber writes them out as JSON.

Built only when a subscriber captures content (`TelemetryHub.capture_content`): a run without
content capture never pays for it. The reasoning is left out, as it is never sent to the model.
"""

from __future__ import annotations

from typing import Any

from ._messages import Message
from ._types import ModelRequest


def request_content(request: ModelRequest) -> dict[str, Any]:
    """`input_messages`, `system_instructions` and `tool_definitions` of `request` (the last two
    only when it has any)."""
    instructions: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    for message in request.messages:
        if message.role == "system":
            if message.content:
                instructions.append({"type": "text", "content": message.content})
            continue
        messages.append({"role": message.role, "parts": _parts(message)})
    out: dict[str, Any] = {"input_messages": messages}
    if instructions:
        out["system_instructions"] = instructions
    if request.tools:
        out["tool_definitions"] = [_definition(tool) for tool in request.tools]
    return out


def _parts(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [{"type": "tool_call_response", "id": message.tool_call_id, "response": message.content}]
    parts: list[dict[str, Any]] = []
    if message.content:
        parts.append({"type": "text", "content": message.content})
    for call in message.tool_calls or ():
        arguments: Any = call.arguments if call.arguments_error is None else call.arguments_json
        parts.append({"type": "tool_call", "id": call.id, "name": call.name, "arguments": arguments})
    return parts


def _definition(tool: dict[str, Any]) -> dict[str, Any]:
    """One offered tool as the conventions list it: `type`, `name`, `description`, `parameters`
    (an OpenAI `{"type": "function", "function": {...}}` entry, flattened)."""
    function = tool.get("function")
    if not isinstance(function, dict):
        return dict(tool)
    out: dict[str, Any] = {"type": tool.get("type", "function"), "name": function.get("name")}
    for key in ("description", "parameters"):
        if function.get(key) is not None:
            out[key] = function[key]
    return out
