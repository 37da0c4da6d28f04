"""OpenAIProvider through the real openai SDK against ScriptedOpenAIServer (real HTTP)."""

from __future__ import annotations

from typing import Any

import pytest

from jianmu_like.models import ModelCallFailed, ModelError, ModelRequest, Usage, human
from jianmu_like.models._openai_provider import OpenAIProvider, build_create_kwargs
from jianmu_like.testing import (
    PATIENCE,
    ScriptedOpenAIServer,
    ScriptedReply,
    ScriptedToolCall,
    call,
    calls,
    error_reply,
    reply,
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two numbers.",
            "parameters": {"type": "object", "properties": {"a": {"type": "number"}}},
        },
    }
]


def request(stream: bool = False, **fields: Any) -> ModelRequest:
    return ModelRequest(messages=[human("hi")], stream=stream, **fields)


async def test_non_streaming_text() -> None:
    async with ScriptedOpenAIServer(["Hello from the script"]) as srv:
        response = await srv.client().complete(request())
    assert response.message.role == "assistant"
    assert response.message.content == "Hello from the script"
    assert response.message.tool_calls is None
    assert response.finish_reason == "stop"
    assert response.model == "scripted-model"
    assert srv.requests[0]["messages"] == [{"role": "user", "content": "hi"}]


async def test_tool_calls_are_decoded() -> None:
    script = [calls(call("add", a=1, b=2), ScriptedToolCall(name="echo", arguments={"x": "y"}, id="my_id"))]
    async with ScriptedOpenAIServer(script) as srv:
        response = await srv.client().complete(request(tools=TOOLS, tool_choice="auto"))
    tool_calls = response.message.tool_calls
    assert tool_calls is not None
    assert [(tc.id, tc.name, tc.arguments) for tc in tool_calls] == [
        ("call_1", "add", {"a": 1, "b": 2}),
        ("my_id", "echo", {"x": "y"}),
    ]
    assert response.finish_reason == "tool_calls"
    body = srv.requests[0]
    assert body["tools"] == TOOLS
    assert body["tool_choice"] == "auto"


async def test_streaming_text_deltas_arrive_in_order() -> None:
    deltas: list[str] = []
    text = "The quick brown fox jumps"
    async with ScriptedOpenAIServer([text]) as srv:
        provider = OpenAIProvider(srv.base_url, "test-key", timeout=PATIENCE)
        response = await provider.chat(request(stream=True), model="m", on_delta=deltas.append)
        await provider.aclose()
    assert len(deltas) > 1
    assert "".join(deltas) == text
    assert response.message.content == text
    assert response.finish_reason == "stop"
    assert srv.requests[0]["stream"] is True
    assert srv.requests[0]["stream_options"] == {"include_usage": True}


async def test_streamed_tool_call_fragments_are_merged() -> None:
    script = [calls(call("add", a=1, b=[1, 2, 3]), call("mul", x=2.5), content="Let me compute.")]
    async with ScriptedOpenAIServer(script) as srv:
        response = await srv.client().complete(request(stream=True, tools=TOOLS))
    tool_calls = response.message.tool_calls
    assert tool_calls is not None
    assert [(tc.name, tc.arguments) for tc in tool_calls] == [
        ("add", {"a": 1, "b": [1, 2, 3]}),
        ("mul", {"x": 2.5}),
    ]
    assert all(tc.id.startswith("call_") for tc in tool_calls)
    assert response.message.content == "Let me compute."
    assert response.finish_reason == "tool_calls"


@pytest.mark.parametrize("stream", [False, True])
async def test_usage_is_reported_as_one_call(stream: bool) -> None:
    usage = Usage(prompt_tokens=120, completion_tokens=30, total_tokens=150)
    async with ScriptedOpenAIServer([reply("a", usage=usage), "b"]) as srv:
        client = srv.client()
        first = await client.complete(request(stream=stream))
        second = await client.complete(request(stream=stream))
    assert first.usage == Usage(prompt_tokens=120, completion_tokens=30, total_tokens=150, calls=1)
    assert second.usage == Usage(prompt_tokens=10, completion_tokens=5, total_tokens=15, calls=1)
    assert (first.usage + second.usage).total_tokens == 165


@pytest.mark.parametrize("stream", [False, True])
async def test_malformed_tool_arguments_arrive_with_arguments_error(stream: bool) -> None:
    script = [ScriptedReply(tool_calls=[ScriptedToolCall(name="add", arguments='{"a": 1,')])]
    async with ScriptedOpenAIServer(script) as srv:
        response = await srv.client().complete(request(stream=stream))
    assert response.message.tool_calls is not None
    (tc,) = response.message.tool_calls
    assert tc.name == "add"
    assert tc.arguments == {}
    assert tc.raw_arguments == '{"a": 1,'
    assert tc.arguments_error is not None


@pytest.mark.parametrize(
    ("status", "retryable"), [(400, False), (401, False), (404, False), (408, True), (429, True), (500, True)]
)
async def test_status_errors_map_to_model_error(status: int, retryable: bool) -> None:
    async with ScriptedOpenAIServer([error_reply(status, "the server says no")]) as srv:
        provider = OpenAIProvider(srv.base_url, "test-key", timeout=PATIENCE)
        with pytest.raises(ModelError) as info:
            await provider.chat(request(), model="m")
        await provider.aclose()
    err = info.value
    assert err.status_code == status
    assert err.retryable is retryable
    assert "the server says no" in str(err)
    assert err.base_url == srv.base_url


async def test_connection_error_is_retryable_and_names_the_url() -> None:
    with ScriptedOpenAIServer() as srv:
        url = srv.base_url  # the port is free again once the server stops
    provider = OpenAIProvider(url, "test-key", timeout=2)
    with pytest.raises(ModelError) as info:
        await provider.chat(request(), model="m")
    await provider.aclose()
    assert info.value.retryable
    assert url in str(info.value)


async def test_api_key_is_redacted_and_absent_from_repr() -> None:
    secret = "sk-very-secret-0123456789"
    async with ScriptedOpenAIServer([error_reply(401, f"Incorrect API key provided: {secret}")]) as srv:
        client = srv.client(api_key=secret)
        with pytest.raises(ModelCallFailed) as info:
            await client.complete(request())
        assert secret not in repr(client)
        assert secret not in repr(client.provider)
    assert secret not in str(info.value)
    assert all(secret not in str(e) for e in info.value.attempts)
    assert "Incorrect API key provided: ***" in str(info.value)


async def test_a_placeholder_key_does_not_garble_error_messages() -> None:
    """A local server's placeholder key ("x") is no secret: it is not masked inside words."""
    async with ScriptedOpenAIServer([error_reply(400, "the script is exhausted")]) as srv:
        client = srv.client(api_key="x")
        with pytest.raises(ModelCallFailed) as info:
            await client.complete(request())
    assert "the script is exhausted" in str(info.value)
    assert "***" not in str(info.value)


def test_create_kwargs_route_params_and_extra_body() -> None:
    req = ModelRequest(
        messages=[human("hi")],
        tools=TOOLS,
        temperature=0.2,
        max_tokens=64,
        top_p=0.9,
        top_k=40,
        timeout=12.0,
        extra_params={"seed": 7, "repetition_penalty": 1.1, "extra_body": {"min_p": 0.05}},
    )
    kwargs = build_create_kwargs(req, "m")
    assert kwargs["model"] == "m"
    assert kwargs["messages"] == [{"role": "user", "content": "hi"}]
    assert kwargs["tools"] == TOOLS
    assert "tool_choice" not in kwargs
    assert (kwargs["temperature"], kwargs["max_tokens"], kwargs["top_p"]) == (0.2, 64, 0.9)
    assert kwargs["timeout"] == 12.0
    assert kwargs["seed"] == 7
    assert kwargs["extra_body"] == {"top_k": 40, "repetition_penalty": 1.1, "min_p": 0.05}
    assert "stream" not in kwargs


def test_create_kwargs_omit_unset_fields_and_reject_reserved_keys() -> None:
    kwargs = build_create_kwargs(ModelRequest(messages=[human("hi")]), "m")
    assert set(kwargs) == {"model", "messages"}
    with pytest.raises(ModelError, match="'model'"):
        build_create_kwargs(ModelRequest(messages=[human("hi")], extra_params={"model": "x"}), "m")


async def test_extra_params_reach_the_server() -> None:
    async with ScriptedOpenAIServer(["ok"]) as srv:
        req = request(top_k=5, extra_params={"seed": 3, "custom_flag": True}, tools=TOOLS, tool_choice="none")
        await srv.client().complete(req)
    body = srv.requests[0]
    assert (body["seed"], body["top_k"], body["custom_flag"], body["tool_choice"]) == (3, 5, True, "none")
