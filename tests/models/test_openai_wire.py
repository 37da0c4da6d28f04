"""The provider sends chat requests without the SDK's request transform (`wire_body`): the bytes
on the wire must be exactly those `chat.completions.create` sends, captured over real HTTP from
the same SDK client against ScriptedOpenAIServer."""

from __future__ import annotations

from typing import Any

import httpx2
import openai
import pytest

from jianmu_like.models import ModelRequest, human
from jianmu_like.models._messages import Message, ToolCall
from jianmu_like.models._openai_provider import OpenAIProvider, wire_body
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, calls

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": 'Add two numbers (ünïcode, "quotes").',
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
        },
    }
]
HISTORY = [
    Message(role="system", content="You add."),
    human("what is 1 + 2? ☃"),
    Message(
        role="assistant",
        content=None,
        tool_calls=[ToolCall(id="call_1", name="add", arguments={"a": 1, "b": 2})],
    ),
    Message(role="tool", content="3", tool_call_id="call_1"),
]
SCHEMA_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "sum", "schema": {"type": "object", "properties": {"sum": {"type": "number"}}}},
}

CASES: dict[str, tuple[dict[str, Any], Any]] = {
    "plain": ({}, "hello"),
    "tools": ({"tools": TOOLS, "tool_choice": "auto"}, calls(call("add", a=1, b=2))),
    "forced tool": (
        {"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "add"}}},
        calls(call("add", a=1, b=2)),
    ),
    "response format": ({"extra_params": {"response_format": SCHEMA_FORMAT}}, '{"sum": 3}'),
    "sampling": (
        {
            "temperature": 0.25,
            "top_p": 0.5,
            "max_tokens": 64,
            "top_k": 5,
            "timeout": PATIENCE,
            "extra_params": {"seed": 7, "stop": ["\n\n"], "metadata": {"k": "v"}, "min_p": 0.1},
        },
        "hello",
    ),
    "request options": (
        {
            "extra_params": {
                "extra_headers": {"X-Trace": "t1"},
                "extra_query": {"q": "1"},
                "extra_body": {"x": 1},
            }
        },
        "hello",
    ),
    "stream": ({"stream": True, "tools": TOOLS, "tool_choice": "auto"}, "hello"),
    "stream options": (
        {"stream": True, "extra_params": {"stream_options": {"include_usage": False}}},
        "hello",
    ),
}


def _capture(provider: OpenAIProvider) -> list[httpx2.Request]:
    """Every request the provider's SDK client sends, as it goes on the wire."""
    sent: list[httpx2.Request] = []

    async def hook(request: httpx2.Request) -> None:
        sent.append(request)

    provider._client._client.event_hooks["request"].append(hook)
    return sent


def _wire(request: httpx2.Request) -> tuple[str, str, bytes, dict[str, str]]:
    return request.method, str(request.url), request.content, dict(request.headers)


@pytest.mark.parametrize("case", list(CASES))
async def test_body_and_headers_match_create(case: str) -> None:
    fields, answer = CASES[case]
    req = ModelRequest(messages=HISTORY, **fields)
    async with ScriptedOpenAIServer([answer, answer]) as srv:
        provider = OpenAIProvider(srv.base_url, "test-key", timeout=PATIENCE, probe=False)
        sent = _capture(provider)
        try:
            kwargs = provider.create_kwargs(req, "scripted-model")
            assert wire_body(kwargs) is not None  # the fast path is taken
            response = await provider.chat(req, model="scripted-model")
            completions = provider._client.chat.completions
            if req.stream:
                stream = await completions.create(**kwargs)
                async for _ in stream:
                    pass
            else:
                await completions.with_raw_response.create(**kwargs)
        finally:
            await provider.aclose()
    assert response.message.content or response.message.tool_calls
    ours, sdks = sent
    assert _wire(ours) == _wire(sdks)
    assert srv.requests[0] == srv.requests[1]


async def test_values_only_the_transform_knows_take_the_sdks_path() -> None:
    """A value that is not plain JSON (a tuple, an `omit`) goes through `create` itself."""
    req = ModelRequest(messages=[human("hi")], extra_params={"stop": ("a", "b"), "seed": openai.omit})
    async with ScriptedOpenAIServer(["hello"]) as srv:
        provider = OpenAIProvider(srv.base_url, "test-key", timeout=PATIENCE, probe=False)
        try:
            assert wire_body(provider.create_kwargs(req, "scripted-model")) is None
            response = await provider.chat(req, model="scripted-model")
        finally:
            await provider.aclose()
    assert response.message.content == "hello"
    assert srv.requests[0]["stop"] == ["a", "b"]
    assert "seed" not in srv.requests[0]
