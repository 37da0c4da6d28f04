"""Model answers that are not answers, over real HTTP: unparsable bodies, streams cut short,
Retry-After, read errors, missing usage. Each is a retryable `ModelError` that says what was
wrong, and the token accounting always has a total a budget can bind on."""

from __future__ import annotations

import email.utils
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from jianmu_like._base.config import ResilienceConfig
from jianmu_like._base.redact import redact_url
from jianmu_like.models import ModelCallFailed, ModelClient, ModelError, ModelRequest, human
from jianmu_like.models._openai_provider import OpenAIProvider, retry_after_seconds
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, error_reply, fault_reply, reply


def request(stream: bool = False) -> ModelRequest:
    return ModelRequest(messages=[human("What is the capital of France?")], stream=stream)


class Sleeps:
    def __init__(self) -> None:
        self.seen: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.seen.append(seconds)


def client_for(srv: ScriptedOpenAIServer, sleep: Sleeps, **policy: Any) -> ModelClient:
    fields: dict[str, Any] = {"max_retries": 2, "backoff_initial": 0.0, "backoff_jitter": 0.0}
    fields.update(policy)
    return ModelClient(
        OpenAIProvider(srv.base_url, "test-key", timeout=PATIENCE),
        model="scripted-model",
        resilience=ResilienceConfig(**fields),
        sleep=sleep,
    )


@pytest.mark.parametrize(
    ("fault", "quoted"),
    [
        ("malformed_json", '{"id": "chatcmpl-1", "choices": [{"index": 0, "mess'),
        ("html", "<html><body><h1>502 Bad Gateway</h1></body></html>"),
        ("no_choices", '{"id": "chatcmpl-1", "object": "chat.completion"}'),
    ],
)
async def test_a_200_that_is_not_a_chat_completion_is_a_retryable_error_quoting_the_body(
    fault: str, quoted: str
) -> None:
    async with ScriptedOpenAIServer([fault_reply(fault)]) as srv:  # type: ignore[arg-type]
        provider = OpenAIProvider(srv.base_url, "test-key", timeout=PATIENCE)
        with pytest.raises(ModelError) as info:
            await provider.chat(request(), model="m")
        await provider.aclose()
    err = info.value
    assert err.retryable
    assert f"the server at {srv.base_url} answered 200 with a body that is not a chat completion" in str(err)
    assert quoted in str(err)


async def test_unparsable_answer_is_retried_then_succeeds() -> None:
    sleeps = Sleeps()
    async with ScriptedOpenAIServer([fault_reply("html"), reply("Paris")]) as srv:
        client = client_for(srv, sleeps, backoff_initial=0.25)
        response = await client.complete(request())
        await client.aclose()
    assert response.message.content == "Paris" and response.attempts == 2
    assert sleeps.seen == [0.25]


async def test_stream_cut_short_is_an_error_not_the_whole_answer() -> None:
    async with ScriptedOpenAIServer([fault_reply("truncated_stream", "The capital is"), "Paris"]) as srv:
        provider = OpenAIProvider(srv.base_url, "test-key", timeout=PATIENCE)
        with pytest.raises(ModelError, match="stream ended before the answer was complete") as info:
            await provider.chat(request(stream=True), model="m")
        assert info.value.retryable
        # retried like a transport error: the next attempt gets the full answer
        sleeps = Sleeps()
        client = client_for(srv, sleeps)
        response = await client.complete(request(stream=True))
        await client.aclose()
        await provider.aclose()
    assert response.message.content == "Paris" and response.finish_reason == "stop"


@pytest.mark.parametrize("header", ["7", "HTTP-date"])
async def test_retry_after_is_honoured_and_capped(header: str) -> None:
    value = email.utils.formatdate(time.time() + 30, usegmt=True) if header == "HTTP-date" else header
    sleeps = Sleeps()
    script = [error_reply(429, "slow down", retry_after=value), error_reply(503, retry_after="600"), "ok"]
    async with ScriptedOpenAIServer(script) as srv:
        client = client_for(srv, sleeps, backoff_initial=0.5, retry_after_max=60.0)
        response = await client.complete(request())
        await client.aclose()
    assert response.message.content == "ok"
    first, second = sleeps.seen
    # The server's delay, not the 0.5 s backoff (a date is that delay less the time the reply took).
    assert first == 7.0 if header == "7" else 0.5 < first <= 30.0
    assert second == 60.0  # capped by retry_after_max


def test_retry_after_parsing() -> None:
    assert retry_after_seconds("2.5") == 2.5
    assert retry_after_seconds("-3") == 0.0
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0


async def test_backoff_has_jitter_within_its_bound() -> None:
    sleeps = Sleeps()
    async with ScriptedOpenAIServer([error_reply(503)] * 9 + ["ok"]) as srv:
        client = client_for(
            srv, sleeps, max_retries=9, backoff_initial=1.0, backoff_multiplier=1.0, backoff_jitter=0.5
        )
        await client.complete(request())
        await client.aclose()
    assert len(sleeps.seen) == 9
    assert all(0.5 <= delay <= 1.0 for delay in sleeps.seen)
    assert len(set(sleeps.seen)) > 1  # not in lockstep


@pytest.fixture
def breaking_server() -> Iterator[str]:
    """A server that accepts, reads the request, then closes without answering."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(65536)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    stop.set()
    thread.join()
    listener.close()


async def test_a_read_error_is_not_reported_as_a_connect_error_and_backs_off(breaking_server: str) -> None:
    sleeps = Sleeps()
    client = ModelClient(
        OpenAIProvider(breaking_server, "test-key", timeout=PATIENCE),
        model="m",
        resilience=ResilienceConfig(max_retries=2, backoff_initial=0.5, backoff_jitter=0.0),
        sleep=sleeps,
    )
    with pytest.raises(ModelCallFailed) as info:
        await client.complete(request())
    await client.aclose()
    message = str(info.value)
    assert "connection lost while reading the response" in message
    assert "could not connect" not in message
    assert sleeps.seen == [0.5, 1.0]


async def test_a_read_timeout_says_it_timed_out_reading() -> None:
    async with ScriptedOpenAIServer([reply("late", delay=PATIENCE)]) as srv:
        provider = OpenAIProvider(srv.base_url, "test-key", timeout=0.3)
        with pytest.raises(ModelError) as info:
            await provider.chat(request(), model="m")
        await provider.aclose()
    assert info.value.retryable
    assert "timed out after 0.3s (no data from the server while reading)" in str(info.value)


def test_errors_show_the_url_without_credentials() -> None:
    assert redact_url("https://bob:s3cret@example.com/v1") == "https://example.com/v1"
    assert OpenAIProvider("http://u:p@127.0.0.1:9/v1").base_url == "http://127.0.0.1:9/v1"


@pytest.mark.parametrize("stream", [False, True])
async def test_total_is_the_sum_when_the_server_omits_it(stream: bool) -> None:
    async with ScriptedOpenAIServer([fault_reply("no_total", "Paris")]) as srv:
        response = await srv.client().complete(request(stream=stream))
    usage = response.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (10, 5, 15)
    assert not usage.estimated


@pytest.mark.parametrize("stream", [False, True])
async def test_usage_is_estimated_when_the_server_reports_none(stream: bool) -> None:
    answer = "The capital of France is Paris."  # 31 characters: 8 tokens at 4 characters each
    async with ScriptedOpenAIServer([fault_reply("no_usage", answer)]) as srv:
        response = await srv.client().complete(request(stream=stream))
    usage = response.usage
    assert usage.estimated and usage.calls == 1
    assert usage.prompt_tokens == 8  # "What is the capital of France?" is 30 characters
    assert usage.completion_tokens == 8
    assert usage.total_tokens == 16
