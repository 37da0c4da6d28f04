"""A fresh run resets every ephemeral field (run and step scope, namespaces included) and writes
only the fields that are not at their default yet."""

from __future__ import annotations

import operator
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from jianmu_like.state._manager import StateManager
from jianmu_like.state._schema import Ephemeral

SHARED = ("fixed",)


class Shapes(BaseModel):
    model_config = ConfigDict(extra="allow")

    kept: Annotated[list[str], operator.add] = Field(default_factory=list)
    note: Annotated[str, Ephemeral()] = "none"
    count: Annotated[int, Ephemeral()] = 0
    tags: Annotated[list[str], Ephemeral()] = ["default"]
    """A mutable default (not a factory): every reset gives a copy of it."""
    marks: Annotated[dict[str, int], Ephemeral(scope="step")] = Field(default_factory=dict)
    items: Annotated[list[str], operator.add, Ephemeral(scope="step")] = Field(default_factory=list)
    shared: Annotated[tuple[str, ...], Ephemeral()] = SHARED


def test_every_ephemeral_field_is_reset_and_persistent_ones_kept() -> None:
    sm = StateManager(Shapes)
    sm.update({"kept": ["k"], "note": "x", "count": 3, "marks": {"a": 1}, "items": ["i"], "shared": ("y",)})
    sm.update({"note": "n", "items": ["j"], "kept": ["ns"]}, namespace="a")
    sm.get("tags").append("changed")
    version = sm.version
    sm.reset_for_run()
    assert sm.version > version
    state = sm.state
    assert state.model_dump(exclude={"kept"}) == {
        "note": "none",
        "count": 0,
        "tags": ["default"],
        "marks": {},
        "items": [],
        "shared": SHARED,
        "a.kept": ["ns"],
    }
    assert sm.get("kept") == ["k"] and sm.get("note", namespace="a") == "none"
    assert sm.get("items", namespace="a") == []


def test_a_reset_never_aliases_a_mutable_default() -> None:
    sm = StateManager(Shapes)
    sm.reset_for_run()
    first = sm.get("tags")
    first.append("mine")
    sm.reset_for_run()
    assert sm.get("tags") == ["default"]
    other = StateManager(Shapes)
    other.reset_for_run()
    assert other.get("tags") is not sm.get("tags")


def test_empty_containers_of_their_own_stay_and_filled_ones_are_replaced() -> None:
    sm = StateManager(Shapes)
    empty = sm.get("marks")
    sm.reset_for_run()
    assert sm.get("marks") is empty  # already what a reset gives
    held = sm.get("items")
    sm.update({"items": ["a"]})
    sm.reset_for_run()
    assert sm.get("items") == [] and held == ["a"]  # a caller's reference keeps the old run


class Counts(BaseModel):
    model_config = ConfigDict(frozen=True)

    calls: int = 0


class Notes(BaseModel):
    lines: list[str] = Field(default_factory=list)


class WithModels(BaseModel):
    counts: Annotated[Counts, Ephemeral()] = Field(default_factory=Counts)
    notes: Annotated[Notes, Ephemeral()] = Field(default_factory=Notes)


def test_model_defaults_are_reset_and_only_immutable_ones_shared() -> None:
    first, second = StateManager(WithModels), StateManager(WithModels)
    for sm in (first, second):
        sm.update({"counts": Counts(calls=2), "notes": Notes(lines=["x"])})
        sm.reset_for_run()
        assert sm.get("counts") == Counts() and sm.get("notes") == Notes()
    assert first.get("notes") is not second.get("notes")  # mutable: each state its own
    first.get("notes").lines.append("mine")
    assert second.get("notes").lines == []
