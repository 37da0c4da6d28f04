"""StateManager: reducers, ephemeral lifetimes, namespaces, snapshots."""

from __future__ import annotations

import operator
from typing import Annotated

import pytest
from pydantic import BaseModel, Field

from jianmu_like.models._messages import ToolCall, ai, human
from jianmu_like.models._types import Usage
from jianmu_like.presets.react import ReActState
from jianmu_like.state._manager import StateError, StateManager
from jianmu_like.state._schema import Ephemeral


def test_add_reducer_appends_and_plain_fields_replace() -> None:
    sm = StateManager(ReActState)
    sm.update({"messages": [human("a")], "rounds": 1})
    sm.update({"messages": [ai("b")], "rounds": 2})
    assert [m.content for m in sm.get("messages")] == ["a", "b"]
    assert sm.get("rounds") == 2


def test_usage_alias_and_add_reducer_accumulates() -> None:
    sm = StateManager(ReActState)
    sm.update({"llm.usage": Usage(prompt_tokens=3, completion_tokens=2, total_tokens=5, calls=1)})
    sm.update({"llm.usage": Usage(prompt_tokens=1, completion_tokens=1, total_tokens=2, calls=1)})
    assert sm.get("llm.usage") == Usage(prompt_tokens=4, completion_tokens=3, total_tokens=7, calls=2)
    assert sm.state.usage.total_tokens == 7  # type: ignore[attr-defined]


def test_set_bypasses_reducer() -> None:
    sm = StateManager(ReActState)
    sm.update({"messages": [human("a")]})
    sm.set("messages", [human("z")])
    assert [m.content for m in sm.get("messages")] == ["z"]


def test_ephemeral_resets() -> None:
    sm = StateManager(ReActState)
    sm.update({"messages": [human("q")], "rounds": 3, "done": True, "actions": [ToolCall(id="1", name="t")]})
    sm.reset_ephemeral("step")
    assert sm.get("actions") == [] and sm.get("rounds") == 3
    sm.reset_for_run()
    assert sm.get("rounds") == 0 and sm.get("done") is False
    assert len(sm.get("messages")) == 1  # persistent


def test_namespaces_are_isolated_and_follow_field_rules() -> None:
    sm = StateManager(ReActState)
    sm.update({"messages": [human("a1")], "rounds": 1}, namespace="a")
    sm.update({"messages": [human("b1")]}, namespace="b")
    sm.update({"messages": [ai("a2")]}, namespace="a")
    assert [m.content for m in sm.get("messages", namespace="a")] == ["a1", "a2"]
    assert [m.content for m in sm.get("messages", namespace="b")] == ["b1"]
    assert sm.get("messages") == []
    assert sm.get("rounds", namespace="b") == 0  # unwritten namespaced key reads the field default
    assert sm.state.model_extra is not None and "a.messages" in sm.state.model_extra
    sm.update({"llm.usage": Usage(total_tokens=5)}, namespace="a")
    assert sm.get("llm.usage", namespace="a").total_tokens == 5
    assert sm.namespaces() == {"a", "b"}
    sm.reset_for_run()
    assert sm.get("rounds", namespace="a") == 0
    assert sm.get("llm.usage", namespace="a") == Usage()
    assert len(sm.get("messages", namespace="a")) == 2


def test_unknown_key_without_extra_is_a_clear_error() -> None:
    class Strict(BaseModel):
        x: int = 0

    sm = StateManager(Strict)
    with pytest.raises(StateError, match="no field 'y'"):
        sm.update({"y": 1})
    with pytest.raises(StateError, match="extra"):
        sm.update({"x": 1}, namespace="n")


def test_snapshot_restore_roundtrip_keeps_ephemeral_and_namespaces() -> None:
    sm = StateManager(ReActState)
    sm.update({"messages": [human("q"), ai(None, [ToolCall(id="c1", name="calc", arguments={"e": "1"})])]})
    sm.update({"rounds": 2, "llm.usage": Usage(total_tokens=9, calls=2)})
    sm.update({"messages": [human("nsq")], "rounds": 4}, namespace="n")
    snap = sm.snapshot()
    other = StateManager(ReActState)
    other.restore(snap)
    assert other.get("rounds") == 2  # restore keeps run-scoped values
    assert other.get("llm.usage") == Usage(total_tokens=9, calls=2)
    assert other.get("messages") == sm.get("messages")
    assert other.get("messages", namespace="n")[0].content == "nsq"  # re-validated as Message
    assert other.get("rounds", namespace="n") == 4


def test_restore_rejects_snapshot_of_another_schema() -> None:
    sm = StateManager(ReActState)
    with pytest.raises(StateError, match="does not fit"):
        sm.restore({"messages": "not a list"})
    assert sm.get("messages") == []  # nothing overwritten


def test_ephemeral_requires_default() -> None:
    from jianmu_like.state._schema import schema_spec

    class Bad(BaseModel):
        x: Annotated[int, Ephemeral("run")]

    with pytest.raises(TypeError, match="needs a default"):
        schema_spec(Bad)


def test_copy_state_is_detached() -> None:
    sm = StateManager(ReActState)
    sm.update({"messages": [human("a")]})
    copy = sm.copy_state()
    sm.update({"messages": [human("b")]})
    assert len(copy.messages) == 1  # type: ignore[attr-defined]


def test_custom_reducer() -> None:
    class C(BaseModel):
        best: Annotated[int, max] = 0
        log: Annotated[list[str], operator.add] = Field(default_factory=list)

    sm = StateManager(C)
    sm.update({"best": 5})
    sm.update({"best": 3})
    assert sm.get("best") == 5
