"""Any model can act: the json, text and auto tool protocols over real HTTP (real `openai`
client, the scripted server), asserted on the requests the server received."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jianmu_like import Agent, ReActConfig, create_react_node, human, load_agent
from jianmu_like.nodes._context import DEFAULT_PERSONA, REACT_PROTOCOL
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import ScriptedOpenAIServer, call, reply
from jianmu_like.tools.builtin import calculator


def _agent(srv: ScriptedOpenAIServer, protocol: str | None, **client: Any) -> tuple[Agent, list[Event]]:
    config = ReActConfig(max_iterations=4, tool_protocol=protocol)  # type: ignore[arg-type]
    root = create_react_node(model_client=srv.client(**client), tools=[calculator], config=config)
    agent = Agent(root)
    events: list[Event] = []
    agent.telemetry.subscribe(events.append)
    return agent, events


def _protocols(events: list[Event]) -> list[str]:
    return [e.data["tool_protocol"] for e in events if e.type == "model.call.completed"]


async def test_json_protocol_tolerant_replies_end_to_end() -> None:
    script = [
        'I will compute it.\n```json\n{"tool": "calculator", "arguments": {"expression": "6 * 7",}}\n```',
        "{'answer': 'It is 42.'}",
    ]
    async with ScriptedOpenAIServer(script) as srv:
        agent, events = _agent(srv, "json")
        result = await agent.run({"messages": [human("What is 6 * 7?")]})
    assert result.status == "success" and result.final_answer == "It is 42."
    assert [m.role for m in result.state.messages] == ["user", "assistant", "tool", "assistant"]
    assert result.state.messages[2].content == "42"
    first, second = srv.requests
    assert "tools" not in first and "tool_choice" not in first
    prompt = first["messages"][0]["content"]
    assert "calculator(expression: string)" in prompt and '{"tool": "<tool name>"' in prompt
    # the persona reached the protocol as data: none of the native prompt's instructions
    assert prompt.startswith(f"{DEFAULT_PERSONA}\n\nYou can use these tools:\n")
    assert REACT_PROTOCOL not in prompt and "Available tools:" not in prompt
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "user"]
    assert second["messages"][2]["content"] == '{"tool": "calculator", "arguments": {"expression": "6 * 7"}}'
    assert second["messages"][3]["content"].startswith("Observation (calculator): 42")
    assert _protocols(events) == ["json", "json"]


async def test_text_protocol_thought_action_final_answer() -> None:
    script = [
        "Thought: I should multiply.\nAction: calculator\n"
        "Action Input: {'expression': '6 * 7'}\nObservation: 41",
        "Thought: I know the answer.\nFinal Answer: 42",
    ]
    async with ScriptedOpenAIServer(script) as srv:
        agent, events = _agent(srv, "text")
        result = await agent.run({"messages": [human("What is 6 * 7?")]})
    assert result.status == "success" and result.final_answer == "42"
    called = result.state.messages[1]
    assert called.tool_calls[0].arguments == {"expression": "6 * 7"}
    assert called.reasoning_content == "I should multiply."
    assert result.state.messages[2].content == "42"  # the hallucinated observation was ignored
    first, second = srv.requests
    assert "tools" not in first and "Action Input:" in first["messages"][0]["content"]
    assert second["messages"][2]["content"] == 'Action: calculator\nAction Input: {"expression": "6 * 7"}'
    assert _protocols(events) == ["text", "text"]


async def test_unreadable_reply_gets_one_correction_that_counts_as_an_iteration() -> None:
    async with ScriptedOpenAIServer(["Let me think about it.", "Still thinking: 42"]) as srv:
        agent, _ = _agent(srv, "json")
        result = await agent.run({"messages": [human("What is 6 * 7?")]})
    assert result.status == "success" and result.final_answer == "Still thinking: 42"
    assert result.termination == {"reason": "completed", "iterations": 2}
    assert [m.role for m in result.state.messages] == ["user", "assistant", "user", "assistant"]
    second = srv.requests[1]["messages"]
    assert second[2] == {"role": "assistant", "content": "Let me think about it."}  # shown verbatim
    assert second[3]["content"].startswith("Your last reply could not be read")


async def test_correction_counts_against_the_iteration_limit() -> None:
    async with ScriptedOpenAIServer(["prose", '{"answer": "42"}']) as srv:
        root = create_react_node(
            model_client=srv.client(),
            tools=[calculator],
            config=ReActConfig(max_iterations=1, tool_protocol="json"),
        )
        result = await Agent(root).run({"messages": [human("6 * 7?")]})
    assert result.status == "failure"
    assert result.termination is not None and result.termination["reason"] == "max_iterations"
    assert len(srv.requests) == 1


async def test_auto_falls_back_to_json_when_the_server_rejects_tools_and_remembers() -> None:
    script = [call_json("calculator", expression="2 + 2"), '{"answer": "4"}']
    async with ScriptedOpenAIServer(script, reject_fields=("tools",)) as srv:
        agent, events = _agent(srv, "auto")
        result = await agent.run({"messages": [human("2 + 2?")]})
    assert result.status == "success" and result.final_answer == "4"
    assert ["tools" in body for body in srv.requests] == [True, False, False]  # learned once
    assert _protocols(events) == ["json", "json"]
    replies = [e.data for e in events if e.type == "reply.completed"]
    assert [r["tool_protocol"] for r in replies] == ["json", "json"]


async def test_auto_uses_native_calling_when_the_server_has_it() -> None:
    async with ScriptedOpenAIServer([call("calculator", expression="2 + 2"), "4"]) as srv:
        agent, events = _agent(srv, "auto")
        result = await agent.run({"messages": [human("2 + 2?")]})
    assert result.final_answer == "4"
    assert all("tools" in body for body in srv.requests)
    assert _protocols(events) == ["native", "native"]


async def test_reasoning_content_is_kept_natively_and_in_the_json_protocol() -> None:
    script = [
        reply("4", reasoning_content="2 and 2 make 4"),
        reply('{"answer": "5"}', reasoning_content="hm"),
    ]
    async with ScriptedOpenAIServer(script) as srv:
        native, _ = _agent(srv, None)
        first = await native.run({"messages": [human("2 + 2?")]})
        prompted, _ = _agent(srv, "json")
        second = await prompted.run({"messages": [human("2 + 3?")]})
    assert first.state.messages[-1].reasoning_content == "2 and 2 make 4"
    assert second.final_answer == "5" and second.state.messages[-1].reasoning_content == "hm"
    assert "reasoning_content" not in str(srv.requests[1]["messages"])  # never sent back


async def test_yaml_model_section_selects_the_protocol(tmp_path: Path) -> None:
    async with ScriptedOpenAIServer(
        ['{"tool": "calculator", "arguments": {"expression": "3*3"}}', '{"answer": "9"}']
    ) as srv:
        file = tmp_path / "agent.yaml"
        file.write_text(
            "kind: react\nname: Calc\ntools: [calculator]\n"
            f"model: {{name: scripted-model, base_url: '{srv.base_url}', tool_protocol: json}}\n"
        )
        agent = load_agent(file)
        try:
            result = await agent.run({"messages": [human("3*3?")]})
        finally:
            for node in agent.root.iterate():
                client = getattr(node, "model_client", None)
                if client is not None:
                    await client.aclose()
    assert result.status == "success"
    assert all("tools" not in body for body in srv.requests)
    assert srv.requests[1]["messages"][-1]["content"].startswith("Observation (calculator): 9")


def call_json(name: str, **arguments: Any) -> str:
    import json

    return json.dumps({"tool": name, "arguments": arguments})


@pytest.mark.parametrize("protocol", ["native", "json", "text", "auto"])
def test_client_resolve_takes_the_protocol(protocol: str) -> None:
    from jianmu_like import ModelClient

    client = ModelClient.resolve("m", base_url="http://127.0.0.1:9/v1", tool_protocol=protocol)  # type: ignore[arg-type]
    assert client.tool_protocol == protocol
    assert client.with_resilience(client.resilience).provider is client.provider  # learned state shared


JSON_MODE_ANSWERS = [
    '{"answer": "The secret is 7319."}',
    '{"final_answer": "The secret is 7319."}',
    '{"action": "final_answer", "answer": "The secret is 7319."}',
    '{"action": "Final Answer", "action_input": "The secret is 7319."}',
    '{"action": "final_answer", "action_input": "The secret is 7319."}',
    '{"type": "final_answer", "content": "The secret is 7319."}',
    '{"tool": "final_answer", "arguments": {"answer": "The secret is 7319."}}',
]


@pytest.mark.parametrize("answer", JSON_MODE_ANSWERS)
async def test_json_mode_final_answers_in_every_common_shape_are_answers(answer: str) -> None:
    """FIM One's and LangChain's JSON-agent shapes end the run: no "unknown tool" round trip."""
    async with ScriptedOpenAIServer([call_json("calculator", expression="7000 + 319"), answer]) as srv:
        agent, _ = _agent(srv, "json")
        result = await agent.run({"messages": [human("What is the secret?")]})
    assert result.status == "success" and result.final_answer == "The secret is 7319."
    assert len(srv.requests) == 2
    assert [m.role for m in result.state.messages] == ["user", "assistant", "tool", "assistant"]


async def test_text_protocol_action_final_answer_is_the_answer() -> None:
    script = ["Thought: done.\nAction: Final Answer\nAction Input: The secret is 7319."]
    async with ScriptedOpenAIServer(script) as srv:
        agent, _ = _agent(srv, "text")
        result = await agent.run({"messages": [human("What is the secret?")]})
    assert result.status == "success" and result.final_answer == "The secret is 7319."
    assert len(srv.requests) == 1


async def test_json_mode_object_naming_an_unknown_tool_plainly_is_still_a_call() -> None:
    """`{"action": "search", "action_input": ...}` asks for a tool the agent lacks: the model is
    told so (and corrects itself); a final-answer marker is an answer only when no tool has that
    name."""
    script = ['{"action": "search", "action_input": "secret"}', '{"answer": "I cannot search."}']
    async with ScriptedOpenAIServer(script) as srv:
        agent, _ = _agent(srv, "json")
        result = await agent.run({"messages": [human("What is the secret?")]})
    assert result.final_answer == "I cannot search."
    assert "unknown tool 'search'" in (result.state.messages[2].content or "")
