"""Fixtures shared across test folders."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jianmu_like.testing import Responder, call, reply
from jianmu_like.testing._postgres import TemporaryPostgres, postgres_problem

os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="jianmu-xdg-")
"""No user configuration file (~/.config/jianmu_like/jianmu.yaml) reaches the suite, nor the
command lines it starts."""


def pytest_configure(config: pytest.Config) -> None:
    """Every event the suite emits, in this process and in the agents it starts as
    subprocesses, is checked against the event catalogue (`telemetry.events`)."""
    import jianmu_like.telemetry._hub as hub

    os.environ["JIANMU_CHECK_EVENTS"] = "1"
    hub.CHECK_EVENTS = True


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


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[TemporaryPostgres]:
    """One throwaway PostgreSQL cluster for the session (skipped, saying why, without one)."""
    problem = postgres_problem()
    if problem is not None:
        pytest.skip(f"no PostgreSQL for this test: {problem}")
    with TemporaryPostgres() as cluster:
        yield cluster


@pytest.fixture
def postgres_url(postgres_cluster: TemporaryPostgres) -> str:
    """A fresh, empty database of the session's cluster (each test its own)."""
    return postgres_cluster.new_database()


@pytest.fixture(params=["sqlite", "postgres"])
def store_target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a test keeps its checkpoints: a SQLite file, then a PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "runs.db")
    return str(request.getfixturevalue("postgres_url"))
