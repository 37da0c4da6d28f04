"""What OpenAI's chat completions API refuses, checked on every request the test server gets.

A fake that accepts what the real API rejects lets ordering bugs pass the suite and fail in
production: an assistant message with `tool_calls` whose replies were lost, a tool message
answering a call nobody made, a tool name the API's pattern refuses. `check_chat_request` applies
the API's documented request rules and raises `RequestRejected` with OpenAI's wording, `param`
and `code`, which the server answers as a 400 with OpenAI's error body.

The rules (each mirrors an error the API returns):
- `model` is a string; `messages` a non-empty list of objects with a known `role`;
- `content` is a string or a list of content parts (null only on an assistant message that
  makes tool calls); an assistant message's `tool_calls` have unique ids, type `function` and a
  valid name; every such call is answered by a `tool` message before the next non-tool message,
  and every `tool` message answers a call of the assistant message just before it;
- `tools[*].function.name` matches `^[a-zA-Z0-9_-]{1,64}$` and names are unique; `tool_choice`
  only with `tools`, naming one of them when it names a function;
- `n` is 1..128; `response_format` is `text`, `json_object` (the messages must mention "json")
  or `json_schema` (with a `json_schema.name` of the same pattern and a `schema` object).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import JianmuError

ROLES = ("system", "developer", "user", "assistant", "tool", "function")
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class RequestRejected(JianmuError):
    """A request OpenAI's API would answer with 400: its message, `param` and `code` (the test
    server's control flow: it never reaches a caller)."""

    def __init__(self, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code


def check_chat_request(body: Mapping[str, Any]) -> None:
    """Raise `RequestRejected` for the first rule `body` breaks (see the module docstring)."""
    if not isinstance(body.get("model"), str) or not body.get("model"):
        raise RequestRejected("you must provide a model parameter", "model", None)
    _check_messages(body.get("messages"))
    tool_names = _check_tools(body.get("tools"))
    _check_tool_choice(body.get("tool_choice"), tool_names, "tools" in body and body["tools"] is not None)
    n = body.get("n")
    if n is not None and (not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 128):
        raise RequestRejected(
            f"Invalid 'n': integer below minimum value or above maximum value. "
            f"Expected a value between 1 and 128, but got {n!r} instead.",
            "n",
            "integer_out_of_range",
        )
    _check_response_format(body.get("response_format"), body.get("messages") or [])


def _check_messages(messages: Any) -> None:
    if not isinstance(messages, list):
        raise RequestRejected(
            "Missing required parameter: 'messages'.", "messages", "missing_required_parameter"
        )
    if not messages:
        raise _empty_array("messages")
    open_calls: dict[str, int] = {}  # tool_call_id -> index of the assistant message
    open_since: int | None = None
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, dict):
            raise RequestRejected(f"Invalid type for '{where}': expected an object.", where, "invalid_type")
        role = message.get("role")
        if role not in ROLES:
            supported = ", ".join(f"'{r}'" for r in ROLES)
            raise RequestRejected(
                f"Invalid value: {role!r}. Supported values are: {supported}.",
                f"{where}.role",
                "invalid_value",
            )
        if role != "tool" and open_calls:
            raise _unanswered(open_calls, open_since)
        content = message.get("content")
        calls = message.get("tool_calls") if role == "assistant" else None
        if content is None:
            if not (role == "assistant" and (calls or message.get("function_call"))):
                raise RequestRejected(
                    "Invalid value for 'content': expected a string, got null.", f"{where}.content", None
                )
        elif not isinstance(content, str | list):
            raise RequestRejected(
                f"Invalid type for '{where}.content': expected one of a string or array of objects.",
                f"{where}.content",
                "invalid_type",
            )
        if role == "assistant" and calls:
            if not isinstance(calls, list):
                raise RequestRejected(
                    f"Invalid type for '{where}.tool_calls': expected an array.",
                    f"{where}.tool_calls",
                    "invalid_type",
                )
            for position, tool_call in enumerate(calls):
                _check_tool_call(tool_call, f"{where}.tool_calls[{position}]")
                if tool_call["id"] in open_calls:
                    raise RequestRejected(
                        f"Duplicate value for 'tool_call_id' of {tool_call['id']} in message[{index}]",
                        f"{where}.tool_calls",
                        None,
                    )
                open_calls[tool_call["id"]] = index
            open_since = index
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise RequestRejected(
                    f"Missing required parameter: '{where}.tool_call_id'.",
                    f"{where}.tool_call_id",
                    "missing_required_parameter",
                )
            if call_id not in open_calls:
                raise RequestRejected(
                    "Invalid parameter: messages with role 'tool' must be a "
                    "response to a preceeding message with 'tool_calls'.",
                    f"messages.[{index}].role",
                    None,
                )
            del open_calls[call_id]
        else:
            open_since = None
    if open_calls:
        raise _unanswered(open_calls, open_since)


def _check_tool_call(tool_call: Any, where: str) -> None:
    if not isinstance(tool_call, dict) or not isinstance(tool_call.get("id"), str) or not tool_call["id"]:
        raise RequestRejected(
            f"Missing required parameter: '{where}.id'.", f"{where}.id", "missing_required_parameter"
        )
    if tool_call.get("type") != "function":
        raise RequestRejected(
            f"Invalid value: {tool_call.get('type')!r}. Supported values are: 'function'.",
            f"{where}.type",
            "invalid_value",
        )
    function = tool_call.get("function")
    if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
        raise RequestRejected(
            f"Missing required parameter: '{where}.function.arguments'.",
            f"{where}.function.arguments",
            "missing_required_parameter",
        )
    _check_name(function.get("name"), f"{where}.function.name")


def _check_name(name: Any, where: str) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise RequestRejected(
            f"Invalid '{where}': string does not match pattern. Expected a "
            f"string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
            where,
            "invalid_value",
        )


def _check_tools(tools: Any) -> set[str]:
    if tools is None:
        return set()
    if not isinstance(tools, list):
        raise RequestRejected(
            "Invalid type for 'tools': expected an array of objects.", "tools", "invalid_type"
        )
    if not tools:
        raise _empty_array("tools")
    names: set[str] = set()
    for index, entry in enumerate(tools):
        where = f"tools[{index}]"
        if (
            not isinstance(entry, dict)
            or entry.get("type") != "function"
            or not isinstance(entry.get("function"), dict)
        ):
            raise RequestRejected(
                f"Invalid value for '{where}': expected a function tool.", where, "invalid_value"
            )
        name = entry["function"].get("name")
        _check_name(name, f"{where}.function.name")
        if name in names:
            raise RequestRejected(f"Duplicate tool name: {name!r}.", f"{where}.function.name", None)
        names.add(name)
        parameters = entry["function"].get("parameters")
        if parameters is not None and not isinstance(parameters, dict):
            raise RequestRejected(
                f"Invalid type for '{where}.function.parameters': expected an object.",
                f"{where}.function.parameters",
                "invalid_type",
            )
    return names


def _check_tool_choice(choice: Any, names: set[str], has_tools: bool) -> None:
    if choice is None:
        return
    if not has_tools:
        raise RequestRejected(
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
            "tool_choice",
            None,
        )
    if isinstance(choice, str):
        if choice not in ("none", "auto", "required"):
            raise RequestRejected(
                f"Invalid value: {choice!r}. Supported values are: 'none', 'auto', and 'required'.",
                "tool_choice",
                "invalid_value",
            )
        return
    name = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    if name not in names:
        raise RequestRejected(
            f"Invalid value for 'tool_choice': tool {name!r} is not among the request's tools.",
            "tool_choice",
            None,
        )


def _check_response_format(value: Any, messages: list[Any]) -> None:
    if value is None:
        return
    kind = value.get("type") if isinstance(value, dict) else None
    if kind not in ("text", "json_object", "json_schema"):
        raise RequestRejected(
            f"Invalid value: {kind!r}. Supported values are: 'text', 'json_object', and 'json_schema'.",
            "response_format.type",
            "invalid_value",
        )
    if kind == "json_object" and not any(
        "json" in str(m.get("content") if isinstance(m, dict) else "").lower() for m in messages
    ):
        raise RequestRejected(
            "'messages' must contain the word 'json' in some form, to "
            "use 'response_format' of type 'json_object'.",
            "messages",
            None,
        )
    if kind == "json_schema":
        spec = value.get("json_schema")
        if not isinstance(spec, dict):
            raise RequestRejected(
                "Missing required parameter: 'response_format.json_schema'.",
                "response_format.json_schema",
                "missing_required_parameter",
            )
        _check_name(spec.get("name"), "response_format.json_schema.name")
        if "schema" in spec and not isinstance(spec["schema"], dict):
            raise RequestRejected(
                "Invalid type for 'response_format.json_schema.schema': expected an object.",
                "response_format.json_schema.schema",
                "invalid_type",
            )


def error_code(status: int) -> str | None:
    """OpenAI's `code` for an error status a script asks for (`None` where the API sends none)."""
    return {401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}.get(status)


def error_type(status: int) -> str:
    if status == 429:
        return "rate_limit_error"
    if status >= 500:
        return "server_error"
    return {401: "authentication_error", 403: "permission_error", 404: "not_found_error"}.get(
        status, "invalid_request_error"
    )


def _empty_array(param: str) -> RequestRejected:
    return RequestRejected(
        f"Invalid '{param}': empty array. Expected an array with minimum length 1, "
        "but got an empty array instead.",
        param,
        "empty_array",
    )


def _unanswered(open_calls: dict[str, int], since: int | None) -> RequestRejected:
    """Tool calls of an assistant message that no tool message answered before the next turn."""
    return RequestRejected(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to "
        "each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(open_calls),
        f"messages.[{since}].role",
        None,
    )
