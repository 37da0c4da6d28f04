"""The seam matrix, OpenAI-compatible column: each feature's agent served by `jianmu-like serve
FILE` and asked through `/v1/chat/completions` by the official `openai` client, whole and
streamed: the completion's text is the run's answer, its usage the model server's sum, the run
it names holds the uninterrupted run's conversation and artifacts."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.seams.seam_kit import SCENARIOS, Model, Scenario, assert_cell
from tests.seams.seam_paths import References, over_openai_compat


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_over_the_openai_compatible_face(
    scenario: Scenario,
    stream: bool,
    model: Model,
    references: References,
    agent_folder: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No suspension on this face (a run waiting for approval answers 409 there): the ungated
    file, the same assertions."""
    uninterrupted = await references.of(scenario)
    monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    model.expect_follow_up(None)
    served = model.since(scenario)
    got = await asyncio.to_thread(over_openai_compat, scenario, agent_folder, model, stream=stream)
    assert_cell(scenario, got, uninterrupted, served)
