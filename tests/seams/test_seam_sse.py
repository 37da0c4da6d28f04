"""The seam matrix, server column: each feature served by `jianmu-like serve FILE`, without a
store and with `--checkpoint` (its agent
factory and app, uvicorn on 127.0.0.1), started, approved and followed over HTTP: the answer
channel, `done` and the run's summary show the run's answer, `done.usage` is the model server's
sum, and the conversation is the uninterrupted in-memory run's."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.seams.seam_kit import SCENARIOS, Model, Scenario, assert_cell
from tests.seams.seam_paths import References, over_sse


@pytest.mark.parametrize("store", [None, "sqlite"], ids=["in_memory", "checkpoint"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_over_sse(
    scenario: Scenario,
    store: str | None,
    tmp_path: Path,
    model: Model,
    references: References,
    agent_folder: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    uninterrupted = await references.of(scenario)
    monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    model.expect_follow_up(None)
    served = model.since(scenario)
    target = None if store is None else str(tmp_path / "runs.db")
    got = await asyncio.to_thread(over_sse, scenario, agent_folder, model, target)
    assert_cell(scenario, got, uninterrupted, served)
