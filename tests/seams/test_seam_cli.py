"""The seam matrix, command-line column: each feature run by `jianmu-like run` on a SQLite
store, suspended at the approval, approved by `jianmu-like approvals approve` and finished by
`jianmu-like resume` (each a fresh agent built from the file, in this process: a subprocess
would cost seconds of imports per command). The answer the transcript ends with is the run's,
its summary counts what the model server reported, the conversation is the uninterrupted run's.

Not in this column: interrupts (the command line takes no follow-up during a run)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.cli.running import in_process
from tests.seams.seam_kit import SCENARIOS, Model, Scenario, assert_cell
from tests.seams.seam_paths import References, via_cli

COMMAND_LINE = tuple(s for s in SCENARIOS if s.name != "interrupts")


@pytest.mark.parametrize("scenario", COMMAND_LINE, ids=lambda s: s.name)
def test_from_the_command_line(
    scenario: Scenario,
    model: Model,
    references: References,
    agent_folder: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    uninterrupted = asyncio.run(references.of(scenario))
    cli = in_process(model.base_url, monkeypatch, capsys)

    served = model.since(scenario)
    got = via_cli(scenario, agent_folder, str(tmp_path / "runs.db"), cli)
    assert_cell(scenario, got, uninterrupted, served)
