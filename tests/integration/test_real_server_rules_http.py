"""Issue 21 over real HTTP (the scripted server): the probe, constrained decoding, `auto`
switching on a server without tools, bounded calls and replies cut at the length limit."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from jianmu_like import Agent, ModelClient, ReActConfig, create_react_node, human
from jianmu_like._base.config import CapabilityOverrides
from jianmu_like.models._errors import ModelError
from jianmu_like.models._openai_provider import OpenAIProvider
from jianmu_like.models._types import ModelRequest
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, reply
from jianmu_like.testing._server import llama_cpp_props
from jianmu_like.tools.builtin import calculator


def _client(srv: ScriptedOpenAIServer, protocol: str, model: str | None = "m") -> ModelClient:
    return ModelClient.resolve(model, base_url=srv.base_url, api_key="k", tool_protocol=protocol)  # type: ignore[arg-type]


async def test_json_protocol_sends_a_grammar_to_llama_cpp_and_auto_goes_json() -> None:
    script = [reply('{"tool": "calculator", "arguments": {"expression": "2 + 2"}}'), reply('{"answer": "4"}')]
    async with ScriptedOpenAIServer(script, props=llama_cpp_props(supports_tools=False)) as srv:
        async with _client(srv, "auto") as client:
            agent = Agent(create_react_node(model_client=client, tools=[calculator]))
            result = await agent.run({"messages": [human("2 + 2?")]})
        assert result.status == "success" and result.final_answer == "4"
        first = srv.requests[0]
        assert "tools" not in first  # /props said the template has none: the JSON protocol at once
        assert first["grammar"].startswith("root ::= ")
        assert '"\\"tool\\": " "\\"calculator\\""' in first["grammar"]


async def test_a_server_with_json_schema_gets_the_reply_schema_and_a_400_drops_it() -> None:
    async with ScriptedOpenAIServer([reply('{"answer": "ok"}')], reject_fields=("response_format",)) as srv:
        srv.models = ["m"]
        provider = OpenAIProvider(srv.base_url, "k", capabilities=CapabilityOverrides(json_schema=True))
        async with ModelClient(provider, model="m", tool_protocol="json") as client:
            request = ModelRequest(messages=[human("hi")], tools=[calculator.schema()])
            response = await client.complete(request)
        assert response.message.content == "ok"
        constrained, plain = srv.requests  # the rejected constrained ask, then the plain one
        assert constrained["response_format"]["type"] == "json_schema"
        assert "oneOf" in constrained["response_format"]["json_schema"]["schema"]
        assert "response_format" not in plain


async def test_auto_re_asks_in_json_when_a_forced_tool_was_ignored() -> None:
    script = [reply("Sure, it is 4."), reply('{"tool": "calculator", "arguments": {"expression": "2+2"}}')]
    async with ScriptedOpenAIServer(script) as srv:
        async with _client(srv, "auto") as client:
            request = ModelRequest(
                messages=[human("2+2?")], tools=[calculator.schema()], tool_choice="required"
            )
            response = await client.complete(request)
        assert response.tool_protocol == "json"
        assert [c.name for c in response.message.tool_calls or ()] == ["calculator"]
        assert "tools" in srv.requests[0] and "tools" not in srv.requests[1]


async def test_a_default_max_tokens_is_sent_and_the_served_model_is_used() -> None:
    async with ScriptedOpenAIServer([reply("hi")], models=("served-one",)) as srv:
        async with ModelClient.resolve(
            None, base_url=srv.base_url, api_key="k", env_override=False
        ) as client:
            response = await client.complete(ModelRequest(messages=[human("hi")]))
        assert response.model == "served-one"
        assert srv.requests[0]["model"] == "served-one"
        assert srv.requests[0]["max_tokens"] == 1024


async def test_a_final_answer_cut_at_the_length_limit_is_continued_then_ends_truncated() -> None:
    script = [reply("The answer is", finish_reason="length"), reply(" still going", finish_reason="length")]
    async with ScriptedOpenAIServer(script) as srv:
        agent = Agent(create_react_node(model_client=srv.client(), config=ReActConfig(max_tokens=3)))
        result = await agent.run({"messages": [human("q")]})
    assert result.status == "failure"
    assert result.termination["reason"] == "truncated"
    assert "cut off at max_tokens=3 again" in result.termination["error"]
    assert "cut off by the length limit" in srv.requests[1]["messages"][-1]["content"]


async def test_a_continued_answer_is_joined_to_its_first_part() -> None:
    script = [reply("The answer", finish_reason="length"), reply(" is 42.")]
    async with ScriptedOpenAIServer(script) as srv:
        agent = Agent(create_react_node(model_client=srv.client()))
        result = await agent.run({"messages": [human("q")]})
    assert result.status == "success"
    assert result.final_answer == "The answer is 42."


async def test_a_tool_call_cut_at_the_length_limit_becomes_an_invalid_arguments_observation() -> None:
    script = [
        reply(tool_calls=[call("calculator", expression="2 + ")], finish_reason="length"),
        reply("sorry"),
    ]
    async with ScriptedOpenAIServer(script) as srv:
        agent = Agent(create_react_node(model_client=srv.client(), tools=[calculator]))
        result = await agent.run({"messages": [human("q")]})
    observation = next(m for m in result.state.messages if m.role == "tool")
    assert "cut off by the length limit" in (observation.content or "")


class _Trickle(BaseHTTPRequestHandler):
    """A stream that never ends: one chunk every 0.2 s (each read is quick, the call is not)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
        try:
            for _ in range(int(PATIENCE * 10)):
                delta = {**chunk, "choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": None}]}
                self.wfile.write(f"data: {json.dumps(delta)}\n\n".encode())
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:
            pass


@pytest.fixture
def trickle_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


async def test_the_timeout_bounds_a_whole_streamed_call(trickle_url: str) -> None:
    provider = OpenAIProvider(trickle_url, "k", timeout=1.0)
    start = time.monotonic()
    with pytest.raises(ModelError) as info:
        await provider.chat(ModelRequest(messages=[human("hi")], stream=True), model="m")
    await provider.aclose()
    assert "timed out after 1s" in str(info.value) and "whole call" in str(info.value)
    assert time.monotonic() - start < PATIENCE
