"""Durable runs against a real PostgreSQL, real worker processes and the scripted HTTP model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from jianmu_like.cli._main import main
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, calls, error_reply, reply, wait_until

pytest.importorskip("dbos", reason="durable runs need DBOS: pip install 'jianmu_like[durable]'")

HERE = Path(__file__).resolve().parent
LEDGER = HERE / "ledger.yaml"
PAYMENTS = HERE / "payments.yaml"
DESK = HERE / "desk.yaml"
PLANNER = HERE / "planner.yaml"
PARTS = ("first part", "second part")


def _part(body: dict[str, Any]) -> str | None:
    """Which part a composite's sub-agent (or plan step) works on, from its last user message
    (a plan step's prompt quotes the whole plan: its own step follows "Your step (N):")."""
    users = [m["content"] or "" for m in body["messages"] if m["role"] == "user"]
    last = users[-1] if users else ""
    own = last.rsplit("Your step (", 1)[-1]
    return next((part for part in PARTS if part in own), None)


def _composite(body: dict[str, Any], tools: set[str]) -> Any:
    """Supervisor and plan-execute: the plan is the two parts; each part's agent appends once,
    the first part's then makes the slow call; the supervisor gathers, the planner answers."""
    if "SupervisorPlan" in tools:
        return call("SupervisorPlan", sub_questions=list(PARTS))
    if "SupervisorDecision" in tools:
        return call("SupervisorDecision", answer="both parts done")
    if "Plan" in tools:
        return call("Plan", steps=[{"task": part} for part in PARTS])
    part = _part(body)
    if part is None or "append" not in tools:
        return reply("both parts done")  # the planner's answer
    done = sum(m["role"] == "tool" for m in body["messages"])
    if done == 0:
        return call("append", item=part)
    if done == 1 and part == PARTS[0]:
        return call("slow")
    return reply(f"{part} done")


def _responder(body: dict[str, Any]) -> Any:
    """Ledger: one parallel batch, then an answer. Payments: one transfer, then an answer.
    Desk and Planner: see `_composite`. The question "refuse": an HTTP 400 (a model call that
    fails for good)."""
    tools = {t["function"]["name"] for t in body.get("tools") or ()}
    if body["messages"][-1]["content"] == "refuse":
        return error_reply(400, "the scripted model refuses")
    if tools & {"SupervisorPlan", "SupervisorDecision", "Plan"} or _part(body) is not None:
        return _composite(body, tools)
    if body["messages"][-1]["role"] == "tool":
        return reply("all done" if "slow" in tools else "sent")
    if "slow" in tools:
        return calls(call("append", item="a"), call("slow"), call("append", item="b"))
    return call("transfer", amount=5)


class CliResult(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


class Cluster:
    """One database, the scripted model, and the worker processes a test starts."""

    def __init__(
        self, database: str, base_url: str, folder: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        self.database = database
        self.capsys = capsys
        self.folder = folder
        self.log = folder / "ledger.log"
        self.block = folder / "ledger.block"
        self.env = {
            **os.environ,
            "OPENAI_BASE_URL": base_url,
            "OPENAI_API_KEY": "test",
            "LEDGER_LOG": str(self.log),
            "LEDGER_BLOCK": str(self.block),
            "PYTHONPATH": os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p),
            "NO_COLOR": "1",
        }
        self.workers: dict[str, subprocess.Popen[bytes]] = {}

    def cli(self, *args: str | Path) -> CliResult:
        """`jianmu-like ARGS --database URL` in this process: a third process, next to the workers
        (in-process rather than a subprocess: DBOS takes seconds to import on a busy machine)."""
        self.capsys.readouterr()
        code = main([*map(str, args), "--database", self.database])
        captured = self.capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    def start_worker(self, agent_file: Path, executor_id: str, *options: str) -> None:
        out = self.folder / f"{executor_id}.out"
        err = self.folder / f"{executor_id}.err"
        cmd = [
            sys.executable, "-m", "jianmu_like", "worker", str(agent_file),
            "--database", self.database, "--executor-id", executor_id, *options,
        ]  # fmt: skip
        with out.open("wb") as stdout, err.open("wb") as stderr:
            self.workers[executor_id] = subprocess.Popen(cmd, env=self.env, stdout=stdout, stderr=stderr)

    def wait_ready(self, *executor_ids: str) -> None:
        for executor_id in executor_ids:
            out = self.folder / f"{executor_id}.out"
            ready: Callable[[], bool] = lambda out=out: '"ready": true' in out.read_text()  # noqa: E731
            self.wait_for(ready, f"worker {executor_id} to start")

    def wait_for(self, condition: Callable[[], bool], what: str) -> None:
        wait_until(condition, what, abort=self._worker_died)

    def _worker_died(self) -> str | None:
        """Why waiting on the workers is pointless: one exited without being killed."""
        for executor_id, child in self.workers.items():
            if child.poll() is not None and child.returncode != -signal.SIGKILL:
                err = (self.folder / f"{executor_id}.err").read_text()[-3000:]
                return f"worker {executor_id} exited ({child.returncode}):\n{err}"
        return None

    def kill(self, executor_id: str) -> None:
        child = self.workers[executor_id]
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=PATIENCE)

    def ledger(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    def stop(self) -> None:
        """Kill what is left (a graceful stop is tested once, where it matters)."""
        for child in self.workers.values():
            if child.poll() is None:
                child.kill()
            child.wait()


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(_responder) as server:
        yield server


@pytest.fixture
def cluster(
    postgres_url: str,
    model_server: ScriptedOpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> Iterator[Cluster]:
    found = Cluster(postgres_url, model_server.base_url, tmp_path, capsys)
    try:
        yield found
    finally:
        found.stop()


def executor_of(database: str, run_id: str) -> str | None:
    """Which worker holds (or finished) the run, from DBOS's own record."""
    from jianmu_like.durable import DurableClient

    with DurableClient(database) as client:
        return client.dbos.retrieve_workflow(run_id).get_status().executor_id


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]
