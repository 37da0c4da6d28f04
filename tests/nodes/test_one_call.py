"""The agent config's sampling settings reach the single-call nodes' requests (real HTTP)."""

from __future__ import annotations

from pydantic import BaseModel

from jianmu_like import ReActConfig, human
from jianmu_like.nodes._one_call import request_for, structured_call
from jianmu_like.testing import ScriptedOpenAIServer, call, reply


class Verdict(BaseModel):
    accept: bool


async def test_plain_and_structured_calls_carry_the_config_s_settings() -> None:
    config = ReActConfig(model="m2", temperature=0.3, max_tokens=50, top_p=0.9, timeout=9.0)
    async with ScriptedOpenAIServer(["plain", reply(tool_calls=[call("Verdict", accept=True)])]) as server:
        client = server.client()
        response = await client.complete(request_for(config, [human("hi")]))
        result = await structured_call(client, [human("judge")], Verdict, config)
    assert response.message.content == "plain"
    assert result.value == Verdict(accept=True) and result.level == "native"
    for body in server.requests:
        assert (body["model"], body["temperature"], body["max_tokens"]) == ("m2", 0.3, 50)
    assert server.requests[0]["top_p"] == 0.9


async def test_overrides_win_over_the_config() -> None:
    config = ReActConfig(model="m2", temperature=0.3)
    request = request_for(config, [human("hi")], stream=True, temperature=0.0)
    assert request.stream is True and request.temperature == 0.0 and request.model == "m2"
