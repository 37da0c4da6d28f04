"""Stores written before the implementation modules became private (issue 19) still load: a
state schema's fingerprint names its field types' modules, and it spells them as before."""

from __future__ import annotations

from pydantic import BaseModel

from jianmu_like import Message, Usage
from jianmu_like.checkpoint._contract import schema_fingerprint
from jianmu_like.guard import Approval

BEFORE_THE_RENAME = "a9b0f57857927d61"
"""`schema_fingerprint(State)` computed by the code before the rename (commit 0f34431)."""


class State(BaseModel):
    messages: list[Message] = []
    usage: Usage = Usage()
    pending: dict[str, Approval] = {}


def test_a_schema_keeps_the_fingerprint_it_had_before_the_rename() -> None:
    assert Message.__module__.rsplit(".", 1)[1].startswith("_")  # the rename happened
    assert schema_fingerprint(State) == BEFORE_THE_RENAME


def test_the_spelling_leaves_user_modules_alone() -> None:
    private = type("Private", (BaseModel,), {"__module__": "mypkg._types", "__annotations__": {"x": int}})
    public = type("Private", (BaseModel,), {"__module__": "mypkg.types", "__annotations__": {"x": int}})

    class A(BaseModel):
        field: private  # type: ignore[valid-type]

    class B(BaseModel):
        field: public  # type: ignore[valid-type]

    assert schema_fingerprint(A) != schema_fingerprint(B)
