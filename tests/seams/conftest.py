"""Shared fixtures of the seam matrix: the agent files, the scripted model serving every cell
of a test process, and the reference (uninterrupted, in-memory) run of each scenario."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.seams.seam_kit import Model, write_agent_files
from tests.seams.seam_paths import References


@pytest.fixture(scope="session")
def agent_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every scenario's agent file (gated and not) and their tools module, in one folder."""
    return write_agent_files(tmp_path_factory.mktemp("seam_agents"))


@pytest.fixture(scope="session")
def model() -> Iterator[Model]:
    """One scripted OpenAI-compatible server for every cell of this test process."""
    with Model() as found:
        yield found


@pytest.fixture(scope="session")
def references(agent_folder: Path, model: Model) -> References:
    return References(agent_folder, model)
