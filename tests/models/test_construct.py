"""models.construct: trusted values become a model without validation, indistinguishable from
a validated one."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, PrivateAttr, ValidationError

from jianmu_like.models._construct import construct
from jianmu_like.models._messages import Message
from jianmu_like.models._types import Usage
from jianmu_like.nodes._tool_outcome import ToolOutcome


def test_a_constructed_model_equals_the_validated_one() -> None:
    values = {
        "role": "tool",
        "content": "3",
        "tool_calls": None,
        "tool_call_id": "c1",
        "name": "add",
        "reasoning_content": None,
        "id": None,
    }
    made = construct(Message, dict(values))
    validated = Message(role="tool", content="3", tool_call_id="c1", name="add")
    assert made == validated
    assert made.model_dump() == validated.model_dump()
    assert made.to_openai() == validated.to_openai()
    assert Message.model_validate(made.model_dump()) == made


def test_sums_and_outcomes_keep_their_behaviour() -> None:
    total = Usage(prompt_tokens=1, completion_tokens=2, total_tokens=3, calls=1) + Usage(
        prompt_tokens=10, completion_tokens=20, total_tokens=30, calls=1, estimated=True
    )
    assert total == Usage(prompt_tokens=11, completion_tokens=22, total_tokens=33, calls=2, estimated=True)
    assert total.model_dump()["estimated"] is True
    with pytest.raises(ValidationError, match="frozen"):
        total.calls = 5  # type: ignore[misc]
    outcome = construct(
        ToolOutcome,
        {"content": "x", "failed": False, "effect_tags": [], "final_answer": None, "artifacts": []},
    )
    changed = outcome.model_copy(update={"final_answer": "done"})
    assert changed.final_answer == "done" and outcome.final_answer is None


def test_models_with_private_attributes_are_refused() -> None:
    class Private(BaseModel):
        x: int = 0
        _secret: int = PrivateAttr(default=1)

    with pytest.raises(TypeError, match="private attributes"):
        construct(Private, {"x": 1})
