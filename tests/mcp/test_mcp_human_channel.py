"""Who decides what a server asks of the user: a sampling policy (allow, deny, ask a person), the
agent's pending questions in Python, and `jianmu-like run`, where nobody can answer, declining
at once instead of holding the tool call for its timeout. Against server-everything over stdio
and the strict scripted model server (the served API and CLI: tests/server/test_mcp_elicitations.py)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from jianmu_like import Agent, create_react_node, human
from jianmu_like.errors import UnknownElicitation
from jianmu_like.telemetry import events as ev
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, reply, wait_until_async
from jianmu_like.tools import MCPToolProvider
from jianmu_like.tools.mcp._elicitation import ElicitationAnswer, ElicitationError, ElicitationRequest
from jianmu_like.tools.mcp._sampling import SamplingDecision, SamplingRequest
from tests.mcp.everything import everything_command, needs_everything

pytestmark = needs_everything


def everything(**options: Any) -> MCPToolProvider:
    node, *args = everything_command("stdio")
    return MCPToolProvider(name="ev", command=node, args=args, **options)


def sampling_model(seen: list[dict[str, Any]]) -> Any:
    """Calls the sampling tool, then repeats its result; a request without tools is the server's."""

    def model(request: dict[str, Any]) -> Any:
        if "tools" not in request:
            seen.append(request)
            return reply("sampled words")
        tool_messages = [m for m in request["messages"] if m["role"] == "tool"]
        if not tool_messages:
            return call("trigger-sampling-request", prompt="a haiku", maxTokens=40)
        return reply(str(tool_messages[-1]["content"]))

    return model


def refuse_long(request: SamplingRequest) -> SamplingDecision:
    return SamplingDecision(
        decision="deny", reason=f"{request.max_tokens} tokens is too many for {request.server}"
    )


def broken(request: SamplingRequest) -> str:
    raise RuntimeError("policy store down")


async def ask_async(request: SamplingRequest) -> str:
    return "ask"


POLICIES: list[tuple[Any, str, str, str]] = [
    # policy, expected status, decided by, text in the answer (the server's tool result)
    (refuse_long, "refused", "policy", "40 tokens is too many for ev"),
    (broken, "refused", "policy", "the sampling policy failed: RuntimeError('policy store down')"),
    (lambda request: "yes", "refused", "policy", "answered 'yes', not allow, deny or ask"),
    (lambda request: "allow", "answered", "policy", "sampled words"),
    (ask_async, "answered", "person", "sampled words"),
]


@pytest.mark.parametrize(("policy", "status", "decided_by", "text"), POLICIES)
async def test_a_sampling_policy_decides_each_request(
    policy: Any, status: str, decided_by: str, text: str
) -> None:
    seen: list[dict[str, Any]] = []
    asked: list[ElicitationRequest] = []

    async def person(request: ElicitationRequest) -> ElicitationAnswer:
        asked.append(request)
        return ElicitationAnswer(action="accept")

    # `ask` in the config: a policy that allows or denies decides without asking anyone.
    provider = everything(sampling="ask", allow=["trigger-sampling-request"])
    provider.sampling_policy = policy
    provider.elicitations.handler = person
    async with provider:
        with ScriptedOpenAIServer(sampling_model(seen)) as srv:
            agent = Agent(create_react_node(model_client=srv.client(), tool_providers=[provider]))
            events: list[Any] = []
            agent.telemetry.subscribe(events.append)
            result = await agent.run({"messages": [human("sample")]})
    assert text in (result.final_answer or "")
    [event] = [e.data for e in events if e.type == ev.MCP_SAMPLING]
    assert (event["status"], event["decided_by"]) == (status, decided_by)
    assert len(seen) == (1 if status == "answered" else 0)
    assert [a.kind for a in asked] == (["sampling"] if decided_by == "person" else [])


async def test_the_agent_lists_and_answers_its_servers_questions() -> None:
    provider = everything(elicitation="ask", allow=["trigger-elicitation-request"])
    script = [call("trigger-elicitation-request"), reply("thanks")]
    async with provider:
        with ScriptedOpenAIServer(script) as srv:
            agent = Agent(create_react_node(model_client=srv.client(), tool_providers=[provider]))
            run = asyncio.create_task(agent.run({"messages": [human("ask them")]}))
            [question] = await wait_until_async(agent.pending_elicitations, "the server's question")
            with pytest.raises(
                UnknownElicitation, match=rf"no pending elicitation 'ev-9' \(pending: {question.id}\)"
            ):
                agent.respond_elicitation("ev-9", "decline")
            with pytest.raises(ElicitationError, match="name: required key is missing"):
                agent.respond_elicitation(question.id, "accept", {})
            assert agent.respond_elicitation(question.id, "decline") == question
            async with asyncio.timeout(PATIENCE):
                result = await run
            observation = next(m["content"] for m in srv.requests[-1]["messages"] if m["role"] == "tool")
    assert result.final_answer == "thanks" and "User declined" in observation
    assert agent.pending_elicitations() == []


def test_jianmu_like_run_declines_at_once_since_nobody_can_answer(tmp_path: Path) -> None:
    """A terminal run has no human channel: the question is declined at once, not held for the
    hour its timeout allows (the subprocess is bounded by PATIENCE)."""
    node, *args = everything_command("stdio")
    server = {
        "command": node,
        "args": args,
        "elicitation": "ask",
        "elicitation_timeout": 3600,
        "allow": ["trigger-elicitation-request"],
    }
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump({"kind": "react", "mcp_servers": {"ev": server}}))

    def model(request: dict[str, Any]) -> Any:
        tool_messages = [m for m in request["messages"] if m["role"] == "tool"]
        if not tool_messages:
            return call("trigger-elicitation-request")
        return reply(f"server said: {tool_messages[-1]['content']}")

    with ScriptedOpenAIServer(model) as srv:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JIANMU", "OPENAI_", "FORCE_COLOR"))}
        env.update(OPENAI_BASE_URL=srv.base_url, OPENAI_API_KEY="x", NO_COLOR="1", PYTHONIOENCODING="utf-8")
        done = subprocess.run(
            [sys.executable, "-m", "jianmu_like", "run", "agent.yaml", "ask me", "--no-live"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=PATIENCE,
        )
    assert done.returncode == 0, done.stderr
    assert "User declined to provide the requested information" in done.stdout


async def test_a_person_thinking_longer_than_call_timeout_does_not_time_the_call_out() -> None:
    """The server is silent because it waits for us: that silence is not the server's. The
    person here takes more than twice `call_timeout` (bounded only by `max_call_duration`)."""
    call_timeout = 2.0

    async def slow_person(request: ElicitationRequest) -> ElicitationAnswer:
        await asyncio.sleep(call_timeout * 2.5)  # what is tested: an answer later than call_timeout
        return ElicitationAnswer(action="accept", content={"name": "Grace Hopper"})

    provider = everything(elicitation="ask", call_timeout=call_timeout, allow=["trigger-elicitation-request"])
    provider.elicitations.handler = slow_person
    async with provider:
        tool = next(t for t in await provider.get_tools() if t.name == "trigger-elicitation-request")
        async with asyncio.timeout(PATIENCE):
            text = await tool.invoke({})
    assert "- Name: Grace Hopper" in text
