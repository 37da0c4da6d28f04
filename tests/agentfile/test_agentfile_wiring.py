"""Wiring errors are found with the file, before any model call: template placeholders and
`output` that name nothing, and a state schema that cannot hold what the ReAct preset writes."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Annotated, List, Optional  # noqa: UP035 - the spec's class, verbatim

import pytest
from pydantic import BaseModel, ConfigDict, Field

from jianmu_like import Agent, Message, ModelClient, ToolCall, create_react_node, human
from jianmu_like import ReActState as JianmuReActState
from jianmu_like.agentfile._loader import AgentFileError, load_agent, validate_agent_file
from jianmu_like.state import Ephemeral
from jianmu_like.state._contract import StateContractError
from jianmu_like.testing import ScriptedOpenAIServer, ScriptedProvider, call, reply
from jianmu_like.tools.builtin import builtin_tools

TREE = """\
kind: tree
output: wirte
inputs: [topic]
tree:
  sequence:
    children:
      - react: {namespace: plan, input: "Plan {tsk} about {topic}"}
      - message: {namespace: write, content: "Use {plan.final_anwser} and {pln.final_answer}"}
      - condition: {namespace: plan, key: dne}
      - react: {namespace: write, input: "{plan}"}
"""


def test_template_and_output_errors_in_one_pass_in_line_order(tmp_path: Path) -> None:
    path = tmp_path / "tree.yaml"
    path.write_text(TREE)
    with pytest.raises(AgentFileError) as info:
        validate_agent_file(path)
    node = "tree.sequence.children"
    assert info.value.problems == [
        f"{path}:2: output: no agent of the tree writes an answer in namespace 'wirte' "
        "(did you mean 'write'?)",
        f"{path}:7: {node}.0.react.input: {{tsk}}: no such input key (did you mean 'task'?)",
        f"{path}:8: {node}.1.message.content: {{plan.final_anwser}}: nothing in namespace 'plan' writes "
        "'final_anwser' (did you mean 'final_answer'?)",
        f"{path}:8: {node}.1.message.content: {{pln.final_answer}}: no node writes namespace 'pln' "
        "(did you mean 'plan'?)",
        f"{path}:9: {node}.2.condition.key: {{plan.dne}}: nothing in namespace 'plan' writes 'dne' "
        "(did you mean 'done'?)",
        f"{path}:10: {node}.3.react.input: {{plan}} is a namespace; name one of its keys, "
        "e.g. {plan.final_answer}",
    ]
    with pytest.raises(AgentFileError):
        load_agent(path)


def test_a_tree_without_output_needs_a_top_level_agent(tmp_path: Path) -> None:
    path = tmp_path / "tree.yaml"
    path.write_text("kind: tree\ntree:\n  react: {namespace: solo, input: '{task}'}\n")
    with pytest.raises(AgentFileError) as info:
        validate_agent_file(path)
    assert info.value.problems == [
        f"{path}:1: output: not set, and no agent of the tree answers at the top level; "
        "set it to one of: solo"
    ]


# The example state class of the primary spec (reference 001), verbatim.
class ReActState(BaseModel):
    task: Optional[str] = None  # noqa: UP045
    messages: Annotated[List[Message], operator.add] = Field(default_factory=list)  # noqa: UP006
    done: Annotated[bool, Ephemeral(scope="run")] = False
    final_answer: Annotated[Optional[str], Ephemeral(scope="run")] = None  # noqa: UP045
    actions: Annotated[List[ToolCall], Ephemeral(scope="step")] = Field(default_factory=list)  # noqa: UP006
    rounds: Annotated[int, Ephemeral(scope="run")] = 0
    streaming_output: Annotated[str, Ephemeral(scope="run")] = ""


async def test_the_spec_example_state_runs_the_react_preset() -> None:
    """The preset adds the bookkeeping fields it needs (usage, counters, approvals) to the
    user's schema; the state is still an instance of the user's class."""
    script = [call("calculator", expression="2+2"), reply("4"), reply("Still 4.")]
    with ScriptedOpenAIServer(script) as srv:
        root = create_react_node(model_client=srv.client(), tools=[builtin_tools()["calculator"]])
        agent = Agent(root, state_schema=ReActState, initial_state=ReActState(task="add"))
        result = await agent.run({"messages": [human("2+2?")]})
        again = await agent.run({"messages": [human("2+2 again?")]})
    assert result.status == "success" and result.final_answer == "4"
    assert isinstance(result.state, ReActState) and result.state.task == "add"
    assert result.state.rounds == 2 and result.usage.total_tokens > 0
    assert result.termination == {"reason": "completed", "iterations": 2}
    assert again.final_answer == "Still 4." and again.state.rounds == 1  # run-scoped: reset
    assert len(again.state.messages) == 6  # the conversation continued

    class Closed(BaseModel):  # a schema that names the fields differently still gets named ones
        model_config = ConfigDict(extra="forbid")
        history: list[Message] = Field(default_factory=list)

    with pytest.raises(StateContractError, match="writes namespace 'solo', which needs model_config"):
        Agent(create_react_node("Solo", "solo", model_client=_offline()), state_schema=Closed)


def test_a_namespaced_agent_needs_extra_keys() -> None:
    class Closed(JianmuReActState):
        model_config = ConfigDict(extra="forbid")

    root = create_react_node("Solo", "solo", model_client=_offline())
    with pytest.raises(StateContractError, match="writes namespace 'solo', which needs model_config"):
        Agent(root, state_schema=Closed)


def _offline() -> ModelClient:
    return ModelClient(ScriptedProvider([]), model="offline")


def test_tool_and_wiring_problems_come_together(tmp_path: Path) -> None:
    path = tmp_path / "tree.yaml"
    path.write_text("kind: tree\noutput: a\ntree:\n  react: {namespace: a, tools: [nope], input: '{tsk}'}\n")
    with pytest.raises(AgentFileError) as info:
        validate_agent_file(path)
    [tool, template] = info.value.problems
    assert tool.startswith(f"{path}:4: tools[0]: unknown tool 'nope'")
    assert template == f"{path}:4: tree.react.input: {{tsk}}: no such input key (did you mean 'task'?)"
