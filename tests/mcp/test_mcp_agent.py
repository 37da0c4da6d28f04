"""ReAct agents using MCP tools end to end: the scripted OpenAI-compatible server over HTTP plays
the model, a real MCP server over stdio runs the tools."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest
import yaml

from jianmu_like import Agent, ReActConfig, create_react_node, human
from jianmu_like.agentfile._loader import load_agent
from jianmu_like.testing import ScriptedOpenAIServer, call, calls, reply, wait_until_async
from jianmu_like.tools import MCPToolProvider, calculator, mcp_servers_from_config
from tests.mcp.mcp_helpers import child_pids, process_gone, server_config


def answer_with_the_tool_result(request: dict[str, Any]) -> Any:
    """A model that calls `echo` once, then answers with what the tool returned (and, asked to
    select tools — the server lists more than 12 — picks three)."""
    if _selection(request):
        return call("select_tools", tools=["echo", "add", "calculator"])
    last = request["messages"][-1]
    if last["role"] == "tool":
        return reply(f"The server said: {last['content']}")
    return call("echo", text="hello from the model")


def _selection(request: dict[str, Any]) -> bool:
    return (request.get("tool_choice") or {}).get("function", {}).get("name") == "select_tools"


async def test_react_agent_calls_an_mcp_tool_and_answers_with_its_result() -> None:
    before = child_pids()
    with ScriptedOpenAIServer(answer_with_the_tool_result) as srv:
        provider = MCPToolProvider(server_config())
        root = create_react_node(model_client=srv.client(), tools=[calculator], tool_providers=[provider])
        async with Agent(root) as agent:
            result = await agent.run({"messages": [human("Say hello through the echo tool.")]})
            pid = provider.pid
        selection, *requests = srv.requests

    assert _selection(selection) and "- sleep: " in selection["messages"][0]["content"]
    assert result.status == "success"
    assert result.final_answer == "The server said: hello from the model"
    roles = [m.role for m in result.state.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert result.state.messages[2].content == "hello from the model"
    # What went over the wire: the selected MCP tools with the server's schema next to the Python tool...
    offered = {t["function"]["name"]: t["function"] for t in requests[0]["tools"]}
    assert {"echo", "add", "calculator"} == set(offered)
    assert offered["echo"]["parameters"]["properties"]["text"]["type"] == "string"
    # ... and the tool's result in the second request.
    assert requests[1]["messages"][-1] == {
        "role": "tool",
        "content": "hello from the model",
        "tool_call_id": result.state.messages[1].tool_calls[0].id,
    }
    assert pid is not None and process_gone(pid)  # Agent.aclose() closed the provider
    assert child_pids() == before


@pytest.mark.parametrize("idempotent", [False, True])
async def test_killing_the_server_mid_run(idempotent: bool, tmp_path: Path) -> None:
    """SIGKILL the server while the agent waits for a call: the model reads that the server
    crashed (non-idempotent tool), or the call is retried on a restarted server (idempotent)."""
    before = child_pids()
    started = tmp_path / "started"  # the first call waits there until killed; a retry sleeps 1 s
    script = [call("sleep", seconds=1, started=str(started)), reply("done")]
    pids: list[int] = []
    kills: list[asyncio.Task[None]] = []

    async def kill_once_started(victim: int) -> None:
        await wait_until_async(started.exists, "the call to reach the server")
        os.kill(victim, signal.SIGKILL)

    with ScriptedOpenAIServer(script) as srv:
        provider = MCPToolProvider(server_config(idempotent=idempotent))
        config = ReActConfig(tool_selection=False)  # the server lists 13 tools: send them all
        root = create_react_node(model_client=srv.client(), tool_providers=[provider], config=config)
        async with Agent(root) as agent:
            async for event in agent.stream({"messages": [human("Sleep for a second.")]}):
                if event.type == "tool.call.started":
                    victim = provider.pid
                    assert victim is not None
                    pids.append(victim)
                    kills.append(asyncio.create_task(kill_once_started(victim)))
            assert agent.state.final_answer == "done"  # type: ignore[attr-defined]
            assert provider.restarts == 1 and provider.pid is not None
            pids.append(provider.pid)
        observation = srv.requests[1]["messages"][-1]

    assert observation["role"] == "tool"
    if idempotent:
        assert observation["content"] == "slept 1"
    else:
        assert observation["content"] == (
            "Error: tool 'sleep' raised MCPServerCrashedError: MCP server 'test' closed the connection "
            "during tool 'sleep' (the server process was killed by SIGKILL). The server was restarted, "
            "but the call to 'sleep' was not retried because it is not marked idempotent: it may or may "
            "not have taken effect"
        )
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert child_pids() == before


async def test_mcp_servers_from_a_yaml_section_feed_create_react_node() -> None:
    section = yaml.safe_load(
        f"""
        - name: tools
          command: {server_config()["command"]}
          args: {server_config()["args"]}
          prefix: "srv_"
          allow: ["add"]
          effect_tags: {{"*": [compute]}}
        """
    )
    with ScriptedOpenAIServer([call("srv_add", a=2, b=3), reply("5")]) as srv:
        providers = mcp_servers_from_config(section)
        root = create_react_node(
            model_client=srv.client(), tool_providers=providers, config=ReActConfig(max_iterations=3)
        )
        async with Agent(root) as agent:
            result = await agent.run({"messages": [human("2+3?")]})
        assert [t["function"]["name"] for t in srv.requests[0]["tools"]] == ["srv_add"]
    assert result.final_answer == "5"
    assert result.state.messages[2].content == "5.0"


async def test_a_yaml_agent_file_with_mcp_servers(tmp_path: Path) -> None:
    agent_file = tmp_path / "agent.yaml"
    agent_file.write_text(
        yaml.safe_dump(
            {
                "kind": "react",
                "name": "Echoer",
                "tools": ["calculator"],
                "mcp_servers": {"test": {k: v for k, v in server_config().items() if k != "name"}},
            }
        )
    )
    with ScriptedOpenAIServer(answer_with_the_tool_result) as srv:
        async with load_agent(agent_file, model_client=srv.client()) as agent:
            result = await agent.run({"messages": [human("hello?")]})
    assert result.final_answer == "The server said: hello from the model"


async def test_an_mcp_servers_output_limit_cuts_its_results() -> None:
    """`max_output_chars` in a server's entry: its results are cut (head and tail) to that."""
    long_text = "begin " + "x" * 3000 + " end"

    def model(request: dict[str, Any]) -> Any:
        if _selection(request):
            return call("select_tools", tools=["echo"])
        last = request["messages"][-1]
        if last["role"] == "tool":
            return reply("done")
        return call("echo", text=long_text)

    with ScriptedOpenAIServer(model) as srv:
        provider = MCPToolProvider(server_config(max_output_chars=300))
        root = create_react_node(model_client=srv.client(), tool_providers=[provider])
        async with Agent(root) as agent:
            result = await agent.run({"messages": [human("Echo a long text.")]})
    observation = result.state.messages[2].content or ""
    assert observation.startswith("begin ") and observation.endswith(" end")
    assert f"[... {len(long_text) - 300} of {len(long_text)} characters omitted ...]" in observation


async def test_a_result_that_breaks_its_output_schema_is_an_observation_not_a_crash() -> None:
    """The server declares `population: integer` and sends a string: the SDK's check against the
    outputSchema refuses the result; the model reads why and the run goes on."""

    def model(request: dict[str, Any]) -> Any:
        if _selection(request):
            return call("select_tools", tools=["loose_city"])
        last = request["messages"][-1]
        return reply(f"noted: {last['content']}") if last["role"] == "tool" else call("loose_city")

    with ScriptedOpenAIServer(model) as srv:
        provider = MCPToolProvider(server_config())
        async with Agent(create_react_node(model_client=srv.client(), tool_providers=[provider])) as agent:
            result = await agent.run({"messages": [human("How many live in Paris?")]})
            connected = provider.connected
    assert result.status == "success" and connected  # the server was not taken for dead
    observation = result.state.messages[2].content or ""
    assert "MCP server 'test': the result of tool 'loose_city' was refused" in observation
    assert "Invalid structured content returned by tool loose_city: '2100000' is not of type 'integer'" in (
        observation
    )


async def test_tools_and_resources_a_server_adds_mid_run_reach_the_next_iteration() -> None:
    """`tools/list_changed` and `resources/list_changed` during a run: the tools are listed again
    before the next model call, so the model can call the new tool and read the new resource."""
    offered: list[set[str]] = []

    def model(request: dict[str, Any]) -> Any:
        offered.append({tool["function"]["name"] for tool in request.get("tools") or ()})
        observations = [m["content"] for m in request["messages"] if m["role"] == "tool"]
        if not observations:
            return calls(call("grow"), call("add_note", title="plan", text="step one"))
        if len(observations) == 2:
            return calls(call("grown"), call("read_resource", uri="note://plan"))
        return reply(" | ".join(observations))

    with ScriptedOpenAIServer(model) as srv:
        provider = MCPToolProvider(server_config())
        config = ReActConfig(tool_selection=False)
        root = create_react_node(model_client=srv.client(), tool_providers=[provider], config=config)
        async with Agent(root) as agent:
            result = await agent.run({"messages": [human("Grow, then use what grew.")]})
    assert result.status == "success", result.termination
    assert result.final_answer == "grown | note://plan | I am new | step one"
    assert "grown" not in offered[0] and "read_resource" not in offered[0]
    assert {"grown", "read_resource"} <= offered[1]
