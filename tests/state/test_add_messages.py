"""The replace-by-id message reducer (LangGraph's `add_messages` semantics), alone and as the
`messages` reducer of a ReAct agent over real HTTP."""

from __future__ import annotations

import operator
from typing import Annotated

from pydantic import Field

from jianmu_like import Agent, Message, ReActState, create_react_node, human
from jianmu_like.state._reducers import add_messages
from jianmu_like.testing import ScriptedOpenAIServer, call, reply
from jianmu_like.tools.builtin import calculator


def test_a_known_id_replaces_in_place_and_the_rest_appends() -> None:
    first = Message(role="user", content="draft", id="q")
    kept = human("no id")
    merged = add_messages([first, kept], [Message(role="user", content="final", id="q"), human("new")])
    assert [m.content for m in merged] == ["final", "no id", "new"]
    twice = add_messages(
        [], [Message(role="user", content="a", id="x"), Message(role="user", content="b", id="x")]
    )
    assert [m.content for m in twice] == ["b"]
    assert add_messages([kept], kept) == [kept, kept]  # no id: always appended, like operator.add
    assert operator.add([kept], [kept]) == add_messages([kept], [kept])


class EditableState(ReActState):
    messages: Annotated[list[Message], add_messages] = Field(default_factory=list)


async def test_a_react_agent_with_replace_by_id_messages() -> None:
    script = [call("calculator", expression="1 + 1"), reply("Paris."), reply("Rome.")]
    async with ScriptedOpenAIServer(script) as srv:
        root = create_react_node(model_client=srv.client(), tools=[calculator])
        agent = Agent(root, state_schema=EditableState)
        draft = Message(role="user", content="Capital of France?", id="question")
        first = await agent.run({"messages": [draft]})
        corrected = Message(role="user", content="Capital of Italy?", id="question")
        agent.state_manager.update({"messages": [corrected]})
        second = await agent.run({"messages": [human("And so?")]})
        requests = srv.requests
    assert first.final_answer == "Paris." and second.final_answer == "Rome."
    sent = [m["content"] for m in requests[2]["messages"] if m["role"] == "user"]
    assert sent == ["Capital of Italy?", "And so?"]  # the edited turn replaced the draft
    assert [m.role for m in second.state.messages][:4] == ["user", "assistant", "tool", "assistant"]
    assert "id" not in requests[2]["messages"][1]  # ids never reach the model
