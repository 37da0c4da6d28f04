"""Shared fixtures of the seam matrix: the agent files, the scripted model serving every cell
of a test process, and the reference (uninterrupted, in-memory) run of each scenario."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent / "server"):  # seam_kit, seam_paths; the server tests' sse_live
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from seam_kit import Model, write_agent_files  # noqa: E402
from seam_paths import References  # noqa: E402


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
