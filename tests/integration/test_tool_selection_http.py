"""Tool selection over real HTTP (real `openai` client, the scripted server): an agent with 20
tools first picks the few the task needs, then sends only their schemas; asserted on the
requests the server received."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jianmu_like import Agent, ReActConfig, Tool, create_react_node, human, load_agent
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import ScriptedOpenAIServer, call, calls, error_reply, reply


def _make_tool(index: int) -> Tool:
    def run(x: int) -> str:
        return f"tool_{index:02d}({x}) = {x * index}"

    return Tool.from_function(
        run, name=f"tool_{index:02d}", description=f"Multiplies a number by {index}.\nMore detail here."
    )


TOOLS = [_make_tool(i) for i in range(1, 21)]
NAMES = [t.name for t in TOOLS]


def _agent(srv: ScriptedOpenAIServer, tools: list[Tool], **config: Any) -> tuple[Agent, list[Event]]:
    settings: dict[str, Any] = {"max_iterations": 5, "stream": False, **config}
    root = create_react_node(
        model_client=srv.client(max_retries=0), tools=tools, config=ReActConfig(**settings)
    )
    agent = Agent(root)
    events: list[Event] = []
    agent.telemetry.subscribe(events.append)
    return agent, events


def _sent_tools(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or ()]


async def test_twenty_tools_send_only_the_chosen_schemas() -> None:
    script = [
        calls(call("select_tools", tools=["tool_07", "tool_03"])),  # the selection call
        calls(call("tool_07", x=6)),
        reply("42"),
    ]
    async with ScriptedOpenAIServer(script) as srv:
        agent, events = _agent(srv, TOOLS)
        result = await agent.run({"messages": [human("What is 6 times 7?")]})
    assert result.status == "success" and result.final_answer == "42"
    selection, first, second = srv.requests
    # The selection request: one forced schema tool, the compact catalogue, the task.
    assert _sent_tools(selection) == ["select_tools"]
    assert selection["tool_choice"]["function"]["name"] == "select_tools"
    catalogue = selection["messages"][0]["content"]
    for index, name in enumerate(NAMES, start=1):
        assert f"- {name}: Multiplies a number by {index}." in catalogue
    assert "More detail here" not in catalogue and "properties" not in catalogue
    assert "at most 6" in catalogue
    assert "What is 6 times 7?" in selection["messages"][1]["content"]
    # Every call of the loop carries only the chosen schemas, and describes only those tools.
    for request in (first, second):
        assert _sent_tools(request) == ["tool_07", "tool_03"]
        assert "tool_12" not in request["messages"][0]["content"]
    assert result.state.messages[2].content == "tool_07(6) = 42"
    phases = [e.data for e in events if e.type == "phase"]
    assert [p["status"] for p in phases] == ["started", "completed"]
    assert phases[1]["phase"] == "selecting_tools"
    assert phases[1]["total"] == 20 and phases[1]["chosen"] == ["tool_07", "tool_03"]
    assert result.usage.calls == 3  # the selection call counts in the run's usage
    assert result.state.selected_tools == ["tool_07", "tool_03"]


async def test_a_failing_selection_falls_back_to_all_tools() -> None:
    script = [
        error_reply(500, "selection exploded"),  # native level
        reply('{"tools": ["no_such_tool"]}'),  # JSON mode: an unknown name
        reply('{"tools": ["still_wrong"]}'),  # ...and again after the corrective retry
        reply("no JSON here"),  # text level
        reply("nor here"),  # ...and its retry
        reply("I can answer without tools: 4."),
    ]
    async with ScriptedOpenAIServer(script) as srv:
        agent, events = _agent(srv, TOOLS)
        result = await agent.run({"messages": [human("What is 2 + 2?")]})
    assert result.status == "success" and result.final_answer == "I can answer without tools: 4."
    assert len(srv.requests) == 6
    main = srv.requests[-1]
    assert _sent_tools(main) == NAMES
    failed = [e.data for e in events if e.type == "phase" and e.data["status"] == "failed"]
    assert len(failed) == 1 and failed[0]["chosen"] == NAMES and failed[0]["total"] == 20
    assert "unknown tool name(s): 'no_such_tool'" in failed[0]["error"]
    assert result.usage.calls == 5  # the four selection replies that had usage, then the answer


async def test_a_misspelt_name_drops_only_itself_from_the_pick() -> None:
    script = [
        calls(call("select_tools", tools=["tool_07", "tool_O3", "tool_03"])),  # one misspelt
        calls(call("tool_07", x=6)),
        reply("42"),
    ]
    async with ScriptedOpenAIServer(script) as srv:
        agent, events = _agent(srv, TOOLS)
        result = await agent.run({"messages": [human("What is 6 times 7?")]})
    assert result.status == "success" and result.final_answer == "42"
    assert len(srv.requests) == 3  # no re-ask: the valid names were enough
    assert _sent_tools(srv.requests[1]) == ["tool_07", "tool_03"]
    completed = [e.data for e in events if e.type == "phase" and e.data["status"] == "completed"]
    assert completed[0]["chosen"] == ["tool_07", "tool_03"] and completed[0]["ignored"] == ["tool_O3"]


async def test_below_the_threshold_no_selection_call_happens() -> None:
    async with ScriptedOpenAIServer([reply("fine")]) as srv:
        agent, events = _agent(srv, TOOLS[:12])
        result = await agent.run({"messages": [human("Hi")]})
    assert result.status == "success"
    assert len(srv.requests) == 1 and _sent_tools(srv.requests[0]) == NAMES[:12]
    assert not [e for e in events if e.type == "phase"]
    assert not any(name.endswith(".SelectTools") for name in _node_names(agent))


async def test_selection_can_be_switched_off_and_a_call_outside_it_still_runs() -> None:
    async with ScriptedOpenAIServer([reply("fine")]) as srv:
        agent, _ = _agent(srv, TOOLS, tool_selection=False)
        await agent.run({"messages": [human("Hi")]})
    assert len(srv.requests) == 1 and _sent_tools(srv.requests[0]) == NAMES

    script = [
        calls(call("select_tools", tools=["tool_02"])),
        calls(call("tool_05", x=2)),  # not selected: it still runs (the executor has every tool)
        reply("10"),
    ]
    async with ScriptedOpenAIServer(script) as srv:
        agent, _ = _agent(srv, TOOLS, tool_selection={"threshold": 5, "max_tools": 2})
        result = await agent.run({"messages": [human("5 * 2?")]})
    assert "at most 2" in srv.requests[0]["messages"][0]["content"]
    assert _sent_tools(srv.requests[1]) == ["tool_02"]
    assert result.state.messages[2].content == "tool_05(2) = 10"


async def test_each_run_selects_again_from_yaml(tmp_path: Path) -> None:
    module = tmp_path / "many_tools.py"
    module.write_text(
        "from jianmu_like import tool\n"
        + "".join(
            f"@tool\ndef t{i}(x: int) -> int:\n    '''Adds {i}.'''\n    return x + {i}\n\n" for i in range(8)
        )
    )
    agent_file = tmp_path / "agent.yaml"
    tools = "".join(f"  - many_tools:t{i}\n" for i in range(8))
    agent_file.write_text(
        f"kind: react\nname: Many\ntool_selection:\n  threshold: 4\n  max_tools: 1\ntools:\n{tools}"
    )
    script = [
        calls(call("select_tools", tools=["t3"])),
        reply("one"),
        calls(call("select_tools", tools=["t5"])),
        reply("two"),
    ]
    async with ScriptedOpenAIServer(script) as srv:
        agent = load_agent(agent_file, model_client=srv.client(max_retries=0))
        await agent.run({"messages": [human("first")]})
        await agent.run({"messages": [human("second")]})
    assert [_sent_tools(r) for r in srv.requests] == [["select_tools"], ["t3"], ["select_tools"], ["t5"]]
    assert "second" in srv.requests[2]["messages"][1]["content"]


async def test_a_tool_forced_by_tool_choice_is_always_sent() -> None:
    script = [calls(call("select_tools", tools=["tool_01"])), calls(call("tool_15", x=1)), reply("15")]
    choice = {"type": "function", "function": {"name": "tool_15"}}
    async with ScriptedOpenAIServer(script) as srv:
        agent, _ = _agent(srv, TOOLS, tool_choice=choice)
        result = await agent.run({"messages": [human("15 * 1?")]})
    assert result.final_answer == "15"
    assert _sent_tools(srv.requests[1]) == ["tool_01", "tool_15"]
    assert srv.requests[1]["tool_choice"] == choice and "tool_choice" not in srv.requests[2]


def _node_names(agent: Agent) -> list[str]:
    return [node.name for node in agent.root.iterate()]
