"""The seam matrix, durable column: each feature submitted as a durable run (DBOS on a real
PostgreSQL), executed by a real `jianmu-like worker` process, suspended at the approval (a
durable wait), approved from this process, finished on the worker: the result's answer is the
scenario's, its usage the model server's sum, its conversation the uninterrupted run's.

A worker serves one agent file's queue and costs seconds to start (DBOS's import, its system
tables) on a loaded machine, against under a second for a cell; so this column runs the three
features whose outcome crosses the process boundary in the durable result (the synthesised
answer, the structured output, the artifacts: the last two were lost there before), with
their workers started once for the module, all at once. Not here: answer check, tool selection
and the context guard (in-tree behaviour the worker runs as any agent does, covered by every
other column), and interrupts (a durable run takes no follow-up: there is no public way to
send one to a run on a worker)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from jianmu_like.testing import PATIENCE, wait_until
from jianmu_like.testing._postgres import TemporaryPostgres
from tests.seams.seam_kit import SCENARIOS, Model, Outcome, Scenario, assert_cell
from tests.seams.seam_paths import References

pytest.importorskip("dbos", reason="durable runs need DBOS: pip install 'jianmu_like[durable]'")

DURABLE = tuple(s for s in SCENARIOS if s.name in ("synthesis", "output_type", "artifacts"))


class Workers:
    """One database and a worker process per scenario's agent file."""

    def __init__(self, database: str, folder: Path, model: Model, logs: Path) -> None:
        self.database = database
        env = {**os.environ, "OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "test-key", "NO_COLOR": "1"}
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.logs = logs
        for scenario in DURABLE:
            file = scenario.agent_file(folder, gated=True)
            cmd = [sys.executable, "-m", "jianmu_like", "worker", str(file), "--database", database,
                   "--executor-id", scenario.name]  # fmt: skip
            with self._log(scenario, "out").open("wb") as out, self._log(scenario, "err").open("wb") as err:
                self.children[scenario.name] = subprocess.Popen(cmd, env=env, stdout=out, stderr=err)
        for scenario in DURABLE:
            wait_until(
                lambda s=scenario: '"ready": true' in self._log(s, "out").read_text(),
                f"the worker of {scenario.name} to start",
                abort=self._died,
            )

    def _log(self, scenario: Scenario, kind: str) -> Path:
        return self.logs / f"{scenario.name}.{kind}"

    def _died(self) -> str | None:
        for name, child in self.children.items():
            if child.poll() is not None:
                err = (self.logs / f"{name}.err").read_text()[-3000:]
                return f"worker {name} exited ({child.returncode}):\n{err}"
        return None

    def stop(self) -> None:
        for child in self.children.values():
            if child.poll() is None:
                child.kill()
            child.wait(timeout=PATIENCE)

    def run(self, scenario: Scenario, folder: Path) -> Outcome:
        from jianmu_like.durable import DurableClient

        with DurableClient(self.database) as client:
            handle = client.submit(scenario.agent_file(folder, gated=True), scenario.question)
            [approval] = handle.pending_approvals(wait=PATIENCE)
            assert approval.tool == scenario.gate, approval
            client.approve(handle.run_id, approval.id)
            result = handle.result()
        return Outcome(
            status=result.status,
            final_answer=result.final_answer,
            shown=result.final_answer or "",
            usage=result.usage,
            messages=result.messages,
            artifacts=[artifact.name for artifact in result.artifacts],
            output=result.output,
        )


@pytest.fixture(scope="module")
def workers(
    postgres_cluster: TemporaryPostgres,
    agent_folder: Path,
    model: Model,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Workers]:
    found = Workers(postgres_cluster.new_database(), agent_folder, model, tmp_path_factory.mktemp("workers"))
    try:
        yield found
    finally:
        found.stop()


@pytest.mark.parametrize("scenario", DURABLE, ids=lambda s: s.name)
async def test_on_a_durable_worker(
    scenario: Scenario, model: Model, references: References, agent_folder: Path, workers: Workers
) -> None:
    uninterrupted = await references.of(scenario)
    served = model.since(scenario)
    got = await asyncio.to_thread(workers.run, scenario, agent_folder)
    assert_cell(scenario, got, uninterrupted, served)
