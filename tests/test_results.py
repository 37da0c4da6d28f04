"""The generic run core reads a tree as the preset that built it says (`results.ResultReader`):
no default ReAct schema in `Agent` or `AgentTemplate`, over real HTTP (the scripted server)."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import BaseModel

from jianmu_like import Agent, AgentTemplate, ReActConfig, ReActState, create_react_node, human
from jianmu_like.nodes import LLMCallNode, StateKeys
from jianmu_like.nodes._results import reader_of
from jianmu_like.presets.react._state import react_reader
from jianmu_like.state import Ephemeral, StateContractError
from jianmu_like.testing import ScriptedOpenAIServer


class Answered(ReActState):
    answer: Annotated[str | None, Ephemeral(scope="run")] = None


async def test_a_react_root_names_its_state_and_the_keys_of_its_config() -> None:
    async with ScriptedOpenAIServer(["Paris.", "It is 42."]) as srv:
        plain = create_react_node(model_client=srv.client())
        assert reader_of(plain) == react_reader(StateKeys())
        agent = Agent(plain)  # no schema: the preset's root carries it
        assert isinstance(agent.state, ReActState)
        assert (await agent.run({"messages": [human("Capital of France?")]})).final_answer == "Paris."

        keys = StateKeys(final_answer="answer")
        root = create_react_node(model_client=srv.client(), config=ReActConfig(keys=keys))
        reader = reader_of(root)
        assert reader is not None and (reader.state_schema, reader.keys) == (ReActState, keys)
        result = await Agent(root, Answered).run({"messages": [human("What is 6 * 7?")]})
    # the result is read through the config's keys without passing them to Agent again
    assert result.status == "success" and result.final_answer == "It is 42."
    assert result.state.answer == "It is 42." and result.state.final_answer is None


async def test_a_template_of_a_preset_root_needs_no_schema_either() -> None:
    async with ScriptedOpenAIServer(["Paris."]) as srv:
        template = AgentTemplate.from_prototype(create_react_node(model_client=srv.client()))
        assert template.state_schema is ReActState
        result = await template.conversation().run({"messages": [human("Capital of France?")]})
    assert result.final_answer == "Paris."


async def test_a_tree_no_preset_built_must_name_its_state_and_nothing_runs() -> None:
    async with ScriptedOpenAIServer(["never sent"]) as srv:
        node = LLMCallNode("Say", srv.client(), prompt="Say hi.")
        with pytest.raises(TypeError, match=r"no state schema for the tree 'Say': pass state_schema="):
            Agent(node)
        with pytest.raises(TypeError, match="no state schema for the tree 'Say'"):
            AgentTemplate.from_prototype(node)
        assert srv.requests == []
        result = await Agent(node, state_schema=ReActState).run()
    assert result.status == "success" and len(srv.requests) == 1


async def test_the_state_kernel_suggests_only_what_the_tree_s_maker_said() -> None:
    """The contract check (state kernel) knows no preset: the ReAct remedy comes from the
    reader of a preset-built root, a plain tree gets the generic one."""

    class Bare(BaseModel):
        note: str = ""

    async with ScriptedOpenAIServer(["never sent"]) as srv:
        plain = LLMCallNode("Say", srv.client(), prompt="Hi.")
        with pytest.raises(StateContractError) as info:
            Agent(plain, Bare)
        message = str(info.value)
        assert "LLM call 'Say' needs the fields" in message and "Add the fields" in message
        assert "ReAct" not in message
        # the preset's state class completes a schema with the fields it declares (Bare runs);
        # a key mapped to a field it has not either stays missing, with the preset's remedy
        Agent(create_react_node(model_client=srv.client()), Bare)
        renamed = ReActConfig(keys=StateKeys(final_answer="reply"))
        react = create_react_node(model_client=srv.client(), config=renamed)
        with pytest.raises(
            StateContractError,
            match=r"needs the fields reply.*Subclass jianmu_like\.ReActState .*, or add the fields",
        ):
            Agent(react, Bare)
        assert srv.requests == []
