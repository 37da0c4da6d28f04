"""The seam matrix, in-process columns: each feature suspended at an approval and resumed in the
same agent (in memory), and by a fresh agent from SQLite and from PostgreSQL, over real HTTP.
Every cell asserts the same things (`seam_kit.assert_cell`) against the uninterrupted in-memory
run of the same scenario."""

from __future__ import annotations

from pathlib import Path

import pytest

from jianmu_like.testing._postgres import TemporaryPostgres
from tests.seams.seam_kit import SCENARIOS, Model, Scenario, assert_cell
from tests.seams.seam_paths import References, in_memory, resumed

PATHS = ("in_memory", "sqlite", "postgres")


@pytest.fixture(scope="module")
def seam_database(postgres_cluster: TemporaryPostgres) -> str:
    """One database of the session's cluster for the PostgreSQL cells (a thread each)."""
    return postgres_cluster.new_database()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_the_uninterrupted_run(scenario: Scenario, references: References) -> None:
    await references.of(scenario)  # checked as it is made


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_resumed(
    scenario: Scenario,
    path: str,
    model: Model,
    references: References,
    agent_folder: Path,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    uninterrupted = await references.of(scenario)
    served = model.since(scenario)
    if path == "in_memory":
        got = await in_memory(scenario, agent_folder, model)
    else:
        target = str(tmp_path / "runs.db") if path == "sqlite" else request.getfixturevalue("seam_database")
        got = await resumed(scenario, agent_folder, model, target)
    assert_cell(scenario, got, uninterrupted, served)
