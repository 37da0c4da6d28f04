"""ScriptedProvider / scripted_client: the in-process fake model."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from jianmu_like.models import ChatProvider, ModelCallFailed, ModelError, ModelRequest, Usage, human
from jianmu_like.testing import (
    DEFAULT_USAGE,
    Script,
    ScriptedProvider,
    ScriptedReply,
    ScriptedToolCall,
    call,
    calls,
    error_reply,
    reply,
    scripted_client,
)


def request(**fields: Any) -> ModelRequest:
    return ModelRequest(messages=[human("hi")], **fields)


def test_is_a_chat_provider() -> None:
    assert isinstance(ScriptedProvider([]), ChatProvider)


async def test_text_and_shorthand_items() -> None:
    client = scripted_client(["plain text", call("add", a=1), reply("last")])
    first = await client.complete(request())
    second = await client.complete(request())
    third = await client.complete(request())
    assert first.message.content == "plain text"
    assert first.finish_reason == "stop"
    assert first.usage == DEFAULT_USAGE
    assert first.model == "scripted-model"
    assert second.message.tool_calls is not None
    assert second.message.tool_calls[0].arguments == {"a": 1}
    assert second.finish_reason == "tool_calls"
    assert third.message.content == "last"


async def test_tool_call_ids_are_fresh_per_answer_unless_scripted() -> None:
    same = calls(call("a"), ScriptedToolCall(name="b", id="fixed"))
    client = scripted_client([same, same])
    first = (await client.complete(request())).message.tool_calls
    second = (await client.complete(request())).message.tool_calls
    assert first is not None and second is not None
    assert [tc.id for tc in first] == ["call_1", "fixed"]
    assert [tc.id for tc in second] == ["call_2", "fixed"]


async def test_records_requests() -> None:
    client = scripted_client(["a", "b"])
    req = request(tool_choice="auto")
    await client.complete(req)
    await client.complete(request(model="other"))
    provider = cast(ScriptedProvider, client.provider)
    assert provider.requests[0] is req
    assert len(provider.requests) == 2


async def test_malformed_scripted_arguments_reach_the_tool_call() -> None:
    client = scripted_client([ScriptedToolCall(name="add", arguments="[1, 2]")])
    (tc,) = (await client.complete(request())).message.tool_calls or []
    assert tc.arguments == {}
    assert tc.arguments_error is not None and "JSON object" in tc.arguments_error


async def test_streaming_calls_on_delta() -> None:
    deltas: list[str] = []
    provider = ScriptedProvider(["alpha beta gamma"])
    response = await provider.chat(request(stream=True), model="m", on_delta=deltas.append)
    assert deltas == ["alpha ", "beta ", "gamma"]
    assert response.message.content == "alpha beta gamma"


async def test_error_status_follows_retryable_rules() -> None:
    provider = ScriptedProvider([error_reply(429, "busy"), error_reply(400, "bad")])
    with pytest.raises(ModelError) as busy:
        await provider.chat(request(), model="m")
    with pytest.raises(ModelError) as bad:
        await provider.chat(request(), model="m")
    assert (busy.value.status_code, busy.value.retryable) == (429, True)
    assert (bad.value.status_code, bad.value.retryable) == (400, False)
    assert "busy" in str(busy.value)


async def test_client_retries_and_falls_back_in_process() -> None:
    script = Script([error_reply(503), "recovered"], fail_models={"dead": 500})
    client = scripted_client(script, model="dead")
    client.resilience.fallback_models = ["alive"]
    response = await client.complete(request())
    assert (response.message.content, response.model, response.attempts) == ("recovered", "alive", 5)


async def test_delay_beyond_request_timeout_is_a_retryable_timeout() -> None:
    provider = ScriptedProvider([reply("late", delay=10.0)])
    with pytest.raises(ModelError, match="timed out") as info:
        await provider.chat(request(timeout=0.01), model="m")
    assert info.value.retryable


async def test_responder_sees_the_openai_body() -> None:
    seen: list[dict[str, Any]] = []

    def responder(body: dict[str, Any]) -> str:
        seen.append(body)
        return "ok"

    client = scripted_client(responder)
    await client.complete(request(tool_choice="none", temperature=0.3, stream=True))
    (body,) = seen
    assert body["model"] == "scripted-model"
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert (body["tool_choice"], body["temperature"], body["stream"]) == ("none", 0.3, True)


async def test_exhausted_script_fails_clearly() -> None:
    client = scripted_client(["only"])
    await client.complete(request())
    with pytest.raises(ModelCallFailed, match="script exhausted after 1 requests"):
        await client.complete(request())


async def test_usage_counts_one_call_even_if_scripted_without_calls() -> None:
    usage = Usage(prompt_tokens=7, completion_tokens=3, total_tokens=10)
    response = await scripted_client([ScriptedReply(content="x", usage=usage)]).complete(request())
    assert response.usage == Usage(prompt_tokens=7, completion_tokens=3, total_tokens=10, calls=1)


async def test_zero_latency_never_sleeps(monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_sleep(seconds: float) -> None:
        raise AssertionError(f"slept {seconds}")

    provider = ScriptedProvider(["a"])
    monkeypatch.setattr(asyncio, "sleep", no_sleep)
    response = await provider.chat(request(), model="m")
    assert response.message.content == "a"
