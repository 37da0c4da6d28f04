"""Runs that fail say why, over real HTTP and real subprocesses: a model server answering
garbage, a tool server that cannot start; and a token budget binds when the server reports no
usage."""

from __future__ import annotations

import sys

from jianmu_like import Agent, MCPToolProvider, ReActConfig, create_react_node, human
from jianmu_like.telemetry.events import NODE_FAILED, Event
from jianmu_like.testing import ScriptedOpenAIServer, ScriptedReply, call, fault_reply
from jianmu_like.tools.builtin import calculator


async def test_html_answers_end_the_run_as_a_model_error_quoting_the_body() -> None:
    async with ScriptedOpenAIServer(lambda body: fault_reply("html")) as srv:
        client = srv.client(max_retries=1)
        result = await Agent(create_react_node(model_client=client, tools=[calculator])).run(
            {"messages": [human("1+1")]}
        )
        n_requests = len(srv.requests)
    assert n_requests == 2  # one attempt and one retry, then the run stops: no further iterations
    assert result.status == "failure"
    assert result.termination is not None and result.termination["reason"] == "model_error"
    assert result.termination["iterations"] == 1
    assert result.error is not None
    assert (
        f"the server at {srv.base_url} answered 200 with a body that is not a chat completion" in result.error
    )
    assert "<html><body><h1>502 Bad Gateway" in result.error
    assert "test-key" not in result.error


def tool_call_without_usage(fault: str) -> ScriptedReply:
    return ScriptedReply(tool_calls=[call("calculator", expression="1+1")], fault=fault)  # type: ignore[arg-type]


async def test_budget_binds_when_the_server_omits_total_tokens() -> None:
    async with ScriptedOpenAIServer(lambda body: tool_call_without_usage("no_total")) as srv:
        config = ReActConfig(max_budget_tokens=30, max_iterations=10)  # 10 + 5 tokens per call
        result = await Agent(
            create_react_node(model_client=srv.client(), tools=[calculator], config=config)
        ).run({"messages": [human("loop")]})
    assert result.termination is not None and result.termination["reason"] == "budget_exhausted"
    assert result.termination["total_tokens"] == 30 and result.termination["iterations"] == 2
    assert not result.usage.estimated


async def test_budget_binds_on_an_estimate_when_the_server_reports_no_usage() -> None:
    async with ScriptedOpenAIServer(lambda body: tool_call_without_usage("no_usage")) as srv:
        config = ReActConfig(max_budget_tokens=60, max_iterations=50)
        result = await Agent(
            create_react_node(model_client=srv.client(), tools=[calculator], config=config)
        ).run({"messages": [human("loop")]})
        n_requests = len(srv.requests)
    assert result.status == "failure"
    assert result.termination is not None and result.termination["reason"] == "budget_exhausted"
    assert result.usage.estimated and result.usage.total_tokens >= 60
    assert n_requests == result.usage.calls < 50


async def test_an_mcp_server_that_cannot_start_fails_the_run_before_the_first_model_call() -> None:
    events: list[Event] = []
    async with ScriptedOpenAIServer(["never asked"]) as srv:
        provider = MCPToolProvider(command="no-such-mcp-server-jianmu", args=["--stdio"], name="files")
        agent = Agent(create_react_node(model_client=srv.client(), tool_providers=[provider]))
        agent.telemetry.subscribe(events.append)
        result = await agent.run({"messages": [human("list my files")]})
        await agent.aclose()
        assert srv.requests == []
    assert result.status == "failure"
    assert result.termination is not None and result.termination["reason"] == "provider_error"
    assert result.termination["iterations"] == 1
    assert result.error is not None and result.error.startswith("ToolProviderError: ")
    assert "no-such-mcp-server-jianmu --stdio" in result.error and "could not be started" in result.error
    # The first node that needs the tools starts the providers: with MCP servers, tool selection.
    assert [(e.node, e.data["kind"]) for e in events if e.type == NODE_FAILED] == [
        ("ReActAgent/ReActAgent.Loop/ReActAgent.SelectTools", "provider_error")
    ]


async def test_an_mcp_server_that_exits_at_once_is_reported_with_its_stderr() -> None:
    script = "import sys; print('fatal: no config file ~/.files.toml', file=sys.stderr); sys.exit(3)"
    async with ScriptedOpenAIServer(["never asked"]) as srv:
        provider = MCPToolProvider(command=sys.executable, args=["-c", script], name="files")
        agent = Agent(create_react_node(model_client=srv.client(), tool_providers=[provider]))
        result = await agent.run({"messages": [human("list my files")]})
        await agent.aclose()
        assert srv.requests == []
    assert result.termination is not None and result.termination["reason"] == "provider_error"
    assert result.error is not None
    assert "exit status 3" in result.error
    assert "its stderr ends with:\nfatal: no config file ~/.files.toml" in result.error
