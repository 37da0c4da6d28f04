"""The test server refuses what OpenAI's chat completions API refuses, with OpenAI's error body,
so a conversation the framework gets wrong fails the suite instead of production.

Each case goes through the official `openai` client over real HTTP: the 400 must reach the SDK as
`BadRequestError` with the API's `param` and `code`, and the request must not consume a reply.
"""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit

import openai
import pytest

from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call

USER = {"role": "user", "content": "hi"}
CALL = {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{}"}}
ASKS = {"role": "assistant", "content": None, "tool_calls": [CALL]}
ANSWER = {"role": "tool", "tool_call_id": "call_1", "content": "2"}
ADD = {"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}

REFUSED: list[tuple[str, dict[str, Any], str | None, str | None, str]] = [
    ("empty messages", {"messages": []}, "messages", "empty_array", "empty array"),
    (
        "an unknown role",
        {"messages": [{"role": "wizard", "content": "x"}]},
        "messages[0].role",
        "invalid_value",
        "'wizard'",
    ),
    (
        "a tool call without its reply",
        {"messages": [USER, ASKS, {"role": "user", "content": "and?"}]},
        "messages.[1].role",
        None,
        "did not have response messages: call_1",
    ),
    (
        "a tool call without its reply at the end",
        {"messages": [USER, ASKS]},
        "messages.[1].role",
        None,
        "did not have response messages: call_1",
    ),
    (
        "a tool reply to an unknown call",
        {"messages": [USER, ASKS, ANSWER, {"role": "tool", "tool_call_id": "call_9", "content": "x"}]},
        "messages.[3].role",
        None,
        "must be a response to a preceeding message with 'tool_calls'",
    ),
    (
        "a bad tool name",
        {"messages": [USER], "tools": [{"type": "function", "function": {"name": "bad name!"}}]},
        "tools[0].function.name",
        "invalid_value",
        "does not match pattern",
    ),
    (
        "tool_choice without tools",
        {"messages": [USER], "tool_choice": "auto"},
        "tool_choice",
        None,
        "only allowed when 'tools'",
    ),
    ("n out of range", {"messages": [USER], "n": 0}, "n", "integer_out_of_range", "between 1 and 128"),
    (
        "JSON mode never saying json",
        {"messages": [USER], "response_format": {"type": "json_object"}},
        "messages",
        None,
        "must contain the word 'json'",
    ),
    (
        "null user content",
        {"messages": [{"role": "user", "content": None}]},
        "messages[0].content",
        None,
        "got null",
    ),
]


@pytest.mark.parametrize(("case", "fields", "param", "code", "words"), REFUSED, ids=[r[0] for r in REFUSED])
def test_what_openai_refuses_is_refused_with_its_error_body(
    case: str, fields: dict[str, Any], param: str | None, code: str | None, words: str
) -> None:
    with ScriptedOpenAIServer(["never sent"]) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="k", max_retries=0, timeout=PATIENCE)
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(model="m", **fields)
        client.close()
        assert srv.rejected and words in srv.rejected[-1]
        assert srv.script.remaining == 1  # a refused request consumes no reply
    error = caught.value.body
    assert isinstance(error, dict)
    assert (error["param"], error["code"], error["type"]) == (param, code, "invalid_request_error")
    assert words in error["message"]


def test_a_well_formed_tool_conversation_passes() -> None:
    with ScriptedOpenAIServer(["done"]) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="k", max_retries=0, timeout=PATIENCE)
        answer = client.chat.completions.create(model="m", messages=[USER, ASKS, ANSWER], tools=[ADD])
        client.close()
    assert answer.choices[0].message.content == "done" and srv.rejected == []


def test_lenient_accepts_what_the_api_refuses() -> None:
    with ScriptedOpenAIServer(["anything goes"], lenient=True) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="k", max_retries=0, timeout=PATIENCE)
        answer = client.chat.completions.create(model="m", messages=[{"role": "wizard", "content": "x"}])
        client.close()
    assert answer.choices[0].message.content == "anything goes"


def test_n_choices_are_served() -> None:
    with ScriptedOpenAIServer(["same"]) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="k", max_retries=0, timeout=PATIENCE)
        answer = client.chat.completions.create(model="m", messages=[USER], n=3)
        client.close()
    assert [(c.index, c.message.content) for c in answer.choices] == [(0, "same"), (1, "same"), (2, "same")]


def test_a_reply_that_breaks_the_requested_format_fails_loudly() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    json_schema = {"type": "json_schema", "json_schema": {"name": "thing", "schema": schema}}
    with ScriptedOpenAIServer(["prose, not JSON", '{"x": "seven"}', '{"x": 7}', call("add")]) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="k", max_retries=0, timeout=PATIENCE)
        ask = {"model": "m", "messages": [{"role": "user", "content": "reply in json"}]}
        with pytest.raises(openai.InternalServerError, match="not JSON"):
            client.chat.completions.create(**ask, response_format={"type": "json_object"})
        with pytest.raises(openai.InternalServerError, match="does not match the response_format schema"):
            client.chat.completions.create(**ask, response_format=json_schema)  # type: ignore[arg-type]
        fine = client.chat.completions.create(**ask, response_format=json_schema)  # type: ignore[arg-type]
        # A tool call is not held to the answer's format.
        tools = client.chat.completions.create(**ask, tools=[ADD], response_format={"type": "json_object"})  # type: ignore[list-item]
        client.close()
    assert fine.choices[0].message.content == '{"x": 7}'
    assert tools.choices[0].message.tool_calls


def test_every_route_reads_its_body_so_keep_alive_survives_a_404() -> None:
    with ScriptedOpenAIServer(["after the 404"]) as srv:
        url = urlsplit(srv.base_url)
        connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=PATIENCE)
        payload = json.dumps({"model": "m", "messages": [USER]})
        connection.request("POST", "/v1/nowhere", body=payload, headers={"Content-Type": "application/json"})
        missing = connection.getresponse()
        assert missing.status == 404
        assert json.loads(missing.read())["error"]["message"] == "Invalid URL (POST /v1/nowhere)"
        connection.request(
            "POST", "/v1/chat/completions", body=payload, headers={"Content-Type": "application/json"}
        )
        found = connection.getresponse()  # same connection: it starts where the 404 ended
        body = json.loads(found.read())
        connection.close()
    assert found.status == 200 and body["choices"][0]["message"]["content"] == "after the 404"


def test_scripted_errors_carry_openais_codes() -> None:
    from jianmu_like.testing import error_reply

    with ScriptedOpenAIServer([error_reply(401), error_reply(429)]) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="k", max_retries=0, timeout=PATIENCE)
        with pytest.raises(openai.AuthenticationError) as unauthorized:
            client.chat.completions.create(model="m", messages=[USER])
        with pytest.raises(openai.RateLimitError) as limited:
            client.chat.completions.create(model="m", messages=[USER])
        client.close()
    assert unauthorized.value.code == "invalid_api_key" and limited.value.code == "rate_limit_exceeded"
