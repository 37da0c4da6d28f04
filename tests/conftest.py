"""Fixtures shared across test folders."""

from __future__ import annotations

from typing import Any

import pytest

from jianmu_like.testing import Responder, call, reply


def _research_responder(body: dict[str, Any]) -> Any:
    """The scripted model for presets/research.yaml: planner, two researchers, writer."""
    msgs = body["messages"]
    question = next(m["content"] for m in msgs if m["role"] == "user")
    if msgs[-1]["role"] == "tool":
        return reply(f"found {msgs[-1]['content']}")
    if question.startswith("Question:"):
        return reply("1. days in a leap year 2. seconds in those days")
    if "step 1" in question:
        return call("calculator", expression="366")
    if "step 2" in question:
        return call("calculator", expression="366 * 24 * 3600")
    return reply("31622400 seconds.")


@pytest.fixture
def research_responder() -> Responder:
    return _research_responder
