"""ModelClient retries, fallbacks and events, over real HTTP against ScriptedOpenAIServer."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest

from jianmu_like._base.config import ResilienceConfig
from jianmu_like.models import ModelCallFailed, ModelClient, ModelEvent, ModelRequest, human
from jianmu_like.models._client import event_name
from jianmu_like.testing import (
    PATIENCE,
    Script,
    ScriptedOpenAIServer,
    ScriptedProvider,
    call,
    error_reply,
    fast_resilience,
    reply,
)

TOOL_CHOICE = {"type": "function", "function": {"name": "add"}}


def request(**fields: Any) -> ModelRequest:
    return ModelRequest(messages=[human("hi")], **fields)


class Events:
    """A `ModelEventCallback`: each event's class and fields, kept as (name, fields)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, event: Callable[..., ModelEvent], /, **fields: Any) -> None:
        self.seen.append((event_name(event), fields))

    def names(self) -> list[str]:
        return [name for name, _ in self.seen]

    def of(self, name: str) -> list[dict[str, Any]]:
        return [data for n, data in self.seen if n == name]


async def test_rate_limit_then_success_is_retried() -> None:
    events = Events()
    async with ScriptedOpenAIServer([error_reply(429, "slow down"), "done"]) as srv:
        response = await srv.client().complete(request(), on_event=events)
    assert response.message.content == "done"
    assert response.attempts == 2
    assert len(srv.requests) == 2
    assert events.names() == [
        "model.call.started",
        "model.call.retry",
        "model.call.started",
        "model.call.completed",
    ]
    retry = events.of("model.call.retry")[0]
    assert (retry["model"], retry["attempt"], retry["delay"]) == ("scripted-model", 1, 0.0)
    assert "slow down" in retry["error"]
    completed = events.of("model.call.completed")[0]
    assert completed["attempts"] == 2
    assert completed["usage"]["total_tokens"] == 15
    assert completed["finish_reason"] == "stop"


async def test_dead_primary_falls_back_after_its_retries() -> None:
    script = Script(["from fallback"], fail_models={"primary": 503})
    async with ScriptedOpenAIServer(script) as srv:
        client = srv.client(model="primary", max_retries=2, fallback_models=["backup"])
        response = await client.complete(request())
    assert response.message.content == "from fallback"
    assert response.model == "backup"
    assert response.attempts == 4
    assert srv.request_models == ["primary", "primary", "primary", "backup"]


async def test_non_retryable_error_skips_straight_to_fallback() -> None:
    events = Events()
    async with ScriptedOpenAIServer([error_reply(400, "bad request"), "ok"]) as srv:
        client = srv.client(model="primary", max_retries=3, fallback_models=["backup"])
        response = await client.complete(request(), on_event=events)
    assert response.model == "backup"
    assert response.attempts == 2
    assert srv.request_models == ["primary", "backup"]
    assert "model.call.retry" not in events.names()


async def test_timeout_is_retried_then_reported_with_the_url() -> None:
    events = Events()
    async with ScriptedOpenAIServer([reply("late", delay=PATIENCE), reply("late", delay=PATIENCE)]) as srv:
        client = srv.client(timeout=0.2, max_retries=1)
        with pytest.raises(ModelCallFailed) as info:
            await client.complete(request(), on_event=events)
        assert len(srv.requests) == 2
    err = info.value
    assert srv.base_url in str(err)
    assert "timed out" in str(err)
    assert "scripted-model" in str(err)
    assert len(err.attempts) == 2 and all(e.retryable for e in err.attempts)
    failed = events.of("model.call.failed")[0]
    assert failed["attempts"] == 2
    assert "timed out" in failed["error"]


async def test_failure_names_every_model_tried() -> None:
    script = Script(fail_models={"a": 500, "b": 502})
    async with ScriptedOpenAIServer(script) as srv:
        client = srv.client(model="a", max_retries=0, fallback_models=["b", "a"])
        with pytest.raises(ModelCallFailed) as info:
            await client.complete(request())
    message = str(info.value)
    assert "a, b" in message
    assert "model 'b' is unavailable" in message
    assert info.value.status_code == 502
    assert srv.request_models == ["a", "b"]


async def test_same_tool_choice_on_every_retry_and_fallback() -> None:
    script = Script([error_reply(500), call("add", a=1)], fail_models={"primary": 429})
    async with ScriptedOpenAIServer(script) as srv:
        client = srv.client(model="primary", max_retries=1, fallback_models=["backup"])
        add = {"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}
        response = await client.complete(request(tools=[add], tool_choice=TOOL_CHOICE, stream=True))
    assert response.message.tool_calls is not None
    assert srv.request_models == ["primary", "primary", "backup", "backup"]
    assert [body["tool_choice"] for body in srv.requests] == [TOOL_CHOICE] * 4
    assert response.attempts == 4


async def test_streaming_emits_text_delta_events() -> None:
    events = Events()
    async with ScriptedOpenAIServer(["one two three"]) as srv:
        response = await srv.client().complete(request(stream=True), on_event=events)
    deltas = [data["delta"] for data in events.of("text.delta")]
    assert "".join(deltas) == "one two three" == response.message.content
    assert events.of("model.call.started")[0]["streaming"] is True
    assert events.names()[-1] == "model.call.completed"


async def test_request_model_overrides_client_default() -> None:
    async with ScriptedOpenAIServer(["x"]) as srv:
        response = await srv.client(model="default").complete(request(model="special"))
    assert srv.request_models == ["special"]
    assert response.model == "special"


async def test_backoff_is_exponential_capped_and_uses_injected_sleep() -> None:
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    policy = ResilienceConfig(
        max_retries=4,
        backoff_initial=0.5,
        backoff_multiplier=2.0,
        backoff_max=3.0,
        backoff_jitter=0.0,
        fallback_models=[],
    )
    provider = ScriptedProvider([error_reply(503)] * 5)
    client = ModelClient(provider, model="m", resilience=policy, sleep=fake_sleep)
    with pytest.raises(ModelCallFailed):
        await client.complete(request())
    assert slept == [0.5, 1.0, 2.0, 3.0]  # no sleep after the last attempt


def test_models_for_deduplicates_in_order() -> None:
    client = ModelClient(
        ScriptedProvider([]), model="a", resilience=fast_resilience(fallback_models=["b", "a", "c", "b"])
    )
    assert client.models_for(request()) == ["a", "b", "c"]
    assert client.models_for(request(model="c")) == ["c", "b", "a"]


async def test_with_resilience_shares_the_provider() -> None:
    provider = ScriptedProvider([error_reply(503), "ok"])
    base = ModelClient(provider, model="m", resilience=fast_resilience(max_retries=0))
    patient = base.with_resilience(fast_resilience(max_retries=1))
    assert patient.provider is provider and patient.model == "m"
    with pytest.raises(ModelCallFailed):
        await base.complete(request())
    assert (await patient.complete(request())).message.content == "ok"


async def test_a_callback_of_the_former_name_and_data_shape_still_works_with_a_deprecation_warning() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def former(name: str, data: dict[str, Any]) -> None:
        seen.append((name, data))

    async with ScriptedOpenAIServer([error_reply(429, "slow down"), "done"]) as srv:
        with pytest.warns(DeprecationWarning, match=r"\(name, data\) is deprecated"):
            response = await srv.client().complete(request(), on_event=former)
    assert response.message.content == "done"
    assert [name for name, _ in seen] == [
        "model.call.started",
        "model.call.retry",
        "model.call.started",
        "model.call.completed",
    ]
    assert seen[-1][1]["finish_reason"] == "stop" and seen[-1][1]["attempts"] == 2


async def test_a_typed_callback_gets_no_deprecation_warning_and_no_unset_optional_field() -> None:
    events = Events()
    async with ScriptedOpenAIServer([error_reply(500, "down"), "done"]) as srv:
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            await srv.client().complete(request(), on_event=events)
    retry = events.of("model.call.retry")[0]
    assert "retry_after" not in retry  # None: left out, as the wire always did
    assert set(events.of("model.call.completed")[0]) >= {"model", "attempts", "usage", "finish_reason"}
