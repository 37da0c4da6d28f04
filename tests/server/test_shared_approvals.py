"""One approval store, one truth: `jianmu-like serve --checkpoint STORE` and `jianmu-like
approvals` on the same store, each a real process, on SQLite and on PostgreSQL.

The server runs a guarded agent file whose tool appends a line to `effects.log` (so "ran exactly
once" is a count of lines). Every wait is bounded by a condition with a generous limit.
"""

from __future__ import annotations

import concurrent.futures
import json
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, wait_until
from jianmu_like.testing._postgres import TemporaryPostgres
from tests.server.guarded_agent import environment, responder, write_agent
from tests.server.sse_live import free_port, read_events

CLI = [sys.executable, "-m", "jianmu_like"]


def wait_for(what: str, condition: Callable[[], Any]) -> Any:
    """`wait_until` (the suite's one wait rule), in this file's argument order."""
    return wait_until(condition, what)


@dataclass
class Served:
    """A `jianmu-like serve --checkpoint STORE` process and what it works in."""

    store: str
    folder: Path
    http: httpx.Client
    base_url: str

    @property
    def agent(self) -> str:
        return str(self.folder / "agent.yaml")

    def effects(self) -> list[str]:
        log = self.folder / "effects.log"
        return log.read_text().splitlines() if log.exists() else []

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`jianmu-like ARGS` as another process, on the same store and model server."""
        return subprocess.run(
            [*CLI, *args],
            cwd=self.folder,
            env=environment(self.base_url),
            capture_output=True,
            text=True,
            timeout=PATIENCE,
        )

    def start(self, path: str, thread_id: str) -> dict[str, Any]:
        response = self.http.post("/api/runs", json={"input": path, "thread_id": thread_id})
        assert response.status_code == 201, response.text
        run: dict[str, Any] = response.json()
        return run

    def summary_once(self, run_id: str, *statuses: str) -> dict[str, Any]:
        """The run's summary once its status is one of `statuses`."""

        def reached() -> dict[str, Any] | None:
            summary: dict[str, Any] = self.http.get(f"/api/runs/{run_id}").json()
            return summary if summary["status"] in statuses else None

        found: dict[str, Any] = wait_for(f"run {run_id} to be {' or '.join(statuses)}", reached)
        return found

    def suspended(self, run_id: str) -> dict[str, Any]:
        """The run's pending approval, once it waits for it."""
        summary = self.summary_once(run_id, "suspended", "failure")
        assert summary["status"] == "suspended", summary
        [pending] = summary["pending_approvals"]
        return dict(pending)

    def finished(self, run_id: str) -> dict[str, Any]:
        """The run's summary once it has finished (its event stream then ends by itself)."""
        return self.summary_once(run_id, "success", "failure")


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp(f"served-{request.param}")
    write_agent(folder)
    if request.param == "sqlite":
        store = str(folder / "runs.db")
    else:
        cluster: TemporaryPostgres = request.getfixturevalue("postgres_cluster")
        store = cluster.new_database()
    port = free_port()
    with ScriptedOpenAIServer(responder) as model:
        proc = subprocess.Popen(
            [*CLI, "serve", "agent.yaml", "--port", str(port), "--checkpoint", store],
            cwd=folder,
            env=environment(model.base_url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=PATIENCE) as http:

                def up() -> bool:
                    assert proc.poll() is None, proc.communicate()[1]
                    try:
                        return http.get("/healthz").status_code == 200
                    except httpx.TransportError:
                        return False

                wait_for("the server to come up", up)
                yield Served(store, folder, http, model.base_url)
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.communicate(timeout=PATIENCE)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()


def test_a_decision_from_the_command_line_resumes_the_servers_run(served: Served) -> None:
    run = served.start("/data/a", "cli-first")
    pending = served.suspended(run["run_id"])
    assert served.effects() == []

    # One id everywhere: the API's approval id is the one `approvals list` shows for the thread.
    listed = served.cli("approvals", "list", served.store, "--json")
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    [row] = [r for r in rows if r["thread_id"] == "cli-first"]
    assert row["approval"]["id"] == pending["id"] and pending["thread_id"] == "cli-first"
    assert row["decision"] is None

    approved = served.cli("approvals", "approve", served.store, "cli-first", pending["id"], "--reason", "ok")
    assert approved.returncode == 0, approved.stderr
    assert f"approved {pending['id']} in thread cli-first" in approved.stdout

    summary = served.finished(run["run_id"])
    assert summary["status"] == "success", summary
    assert summary["answer"] == "result: deleted /data/a"
    events = read_events(served.http, run["run_id"])
    decided = [d for _, c, d in events if c == "approval" and d["status"] == "decided"]
    assert [(a["id"], a["decision"], a["decided_by"]) for d in decided for a in d["approvals"]] == [
        (pending["id"], "approve", "store")
    ]
    assert served.effects().count("delete /data/a") == 1

    # The second decider, on either side, hears "already decided" and harms nothing.
    late = served.http.post(
        f"/api/approvals/{pending['id']}", json={"decision": "deny", "thread_id": "cli-first"}
    )
    assert late.status_code == 409, late.text
    assert late.json()["decision"] == "approved" and "already decided (approved)" in late.json()["error"]
    again = served.cli("approvals", "deny", served.store, "cli-first", pending["id"], "--reason", "no")
    assert again.returncode == 2 and "already decided (approved)" in again.stderr
    assert served.effects().count("delete /data/a") == 1


def test_a_decision_over_the_api_then_from_the_command_line(served: Served) -> None:
    run = served.start("/data/b", "api-first")
    pending = served.suspended(run["run_id"])
    decided = served.http.post(
        f"/api/approvals/{pending['id']}", json={"decision": "approve", "thread_id": "api-first"}
    )
    assert decided.status_code == 200, decided.text
    late = served.cli("approvals", "deny", served.store, "api-first", pending["id"], "--reason", "no")
    assert late.returncode == 2 and "already decided (approved)" in late.stderr, late.stderr
    summary = served.finished(run["run_id"])
    assert summary["status"] == "success" and summary["answer"] == "result: deleted /data/b", summary
    assert served.effects().count("delete /data/b") == 1


def test_a_denial_from_the_command_line_beats_a_later_api_approval(served: Served) -> None:
    run = served.start("/data/c", "deny-first")
    pending = served.suspended(run["run_id"])
    denied = served.cli("approvals", "deny", served.store, "deny-first", pending["id"], "--reason", "keep it")
    assert denied.returncode == 0, denied.stderr
    # Whether or not the server has taken the denial yet, it stands.
    late = served.http.post(
        f"/api/approvals/{pending['id']}", json={"decision": "approve", "thread_id": "deny-first"}
    )
    assert late.status_code == 409 and late.json()["decision"] == "denied", late.text
    summary = served.finished(run["run_id"])
    assert summary["status"] == "success", summary
    assert "denied by a human reviewer: keep it" in summary["answer"]
    assert "delete /data/c" not in served.effects()


def test_two_api_decisions_at_once_one_wins(served: Served) -> None:
    run = served.start("/data/d", "race")
    pending = served.suspended(run["run_id"])
    url = f"/api/approvals/{pending['id']}"
    bodies = [{"decision": "approve", "thread_id": "race"}, {"decision": "deny", "thread_id": "race"}]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        responses = list(pool.map(lambda body: served.http.post(url, json=body), bodies))
    codes = sorted(r.status_code for r in responses)
    assert codes == [200, 409], [r.text for r in responses]
    [winner] = [body for body, r in zip(bodies, responses, strict=True) if r.status_code == 200]
    [loser] = [r for r in responses if r.status_code == 409]
    verdict = "approved" if winner["decision"] == "approve" else "denied"
    assert loser.json()["decision"] == verdict
    summary = served.finished(run["run_id"])
    assert summary["status"] == "success", summary
    assert served.effects().count("delete /data/d") == (1 if verdict == "approved" else 0)


def test_two_command_line_decisions_at_once_one_wins(served: Served) -> None:
    run = served.start("/data/e", "cli-race")
    pending = served.suspended(run["run_id"])
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = list(
            pool.map(
                lambda action: served.cli(
                    "approvals", action, served.store, "cli-race", pending["id"], "--reason", "race"
                ),
                ["approve", "deny"],
            )
        )
    codes = sorted(r.returncode for r in results)
    assert codes == [0, 2], [r.stderr for r in results]
    won = next(r for r in results if r.returncode == 0)
    verdict = "approved" if "approve" in won.args else "denied"
    assert f"already decided ({verdict})" in next(r for r in results if r.returncode == 2).stderr
    summary = served.finished(run["run_id"])
    assert summary["status"] == "success", summary
    assert served.effects().count("delete /data/e") == (1 if verdict == "approved" else 0)


def test_a_new_run_on_a_suspended_thread_is_refused_and_the_approval_kept(served: Served) -> None:
    run = served.start("/data/f", "held")
    pending = served.suspended(run["run_id"])

    over_api = served.http.post("/api/runs", json={"input": "/data/other", "thread_id": "held"})
    assert over_api.status_code == 409, over_api.text
    error = over_api.json()["error"]
    assert "suspended waiting for approvals" in error and pending["id"] in error and "decide them" in error

    on_cli = served.cli("run", served.agent, "/data/other", "--checkpoint", served.store, "--thread", "held")
    assert on_cli.returncode == 2, on_cli.stderr
    assert "suspended waiting for approvals" in on_cli.stderr and pending["id"] in on_cli.stderr
    assert "Traceback" not in on_cli.stderr

    # Nothing was discarded: the approval still waits, and deciding it finishes the run.
    listed = served.cli("approvals", "list", served.store, "--json")
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [r["approval"]["id"] for r in rows if r["thread_id"] == "held"] == [pending["id"]]
    assert served.http.get(f"/api/runs/{run['run_id']}").json()["status"] == "suspended"
    approved = served.cli("approvals", "approve", served.store, "held", pending["id"])
    assert approved.returncode == 0, approved.stderr
    summary = served.finished(run["run_id"])
    assert summary["status"] == "success" and summary["answer"] == "result: deleted /data/f", summary
    assert served.effects().count("delete /data/f") == 1
    assert "delete /data/other" not in served.effects()


def test_a_thread_suspended_by_another_process_is_refused_by_the_server(served: Served) -> None:
    first = served.cli("run", served.agent, "/data/g", "--checkpoint", served.store, "--thread", "elsewhere")
    assert first.returncode == 3, first.stderr  # suspended, saved in the store
    over_api = served.http.post("/api/runs", json={"input": "/data/h", "thread_id": "elsewhere"})
    assert over_api.status_code == 409, over_api.text
    assert "suspended waiting for approvals" in over_api.json()["error"]
    listed = served.cli("approvals", "list", served.store, "--json")
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [r["approval"]["tool"] for r in rows if r["thread_id"] == "elsewhere"] == ["delete_file"]
    assert "delete /data/g" not in served.effects() and "delete /data/h" not in served.effects()


def test_the_server_listens_again_after_losing_its_postgres_connection(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The LISTEN connection is killed while a run waits: the server connects again, and a
    decision stored after that still resumes the run (PostgreSQL has no poll to fall back on)."""
    import psycopg

    from jianmu_like._run.review import record_decision
    from jianmu_like.checkpoint._target import open_checkpointer
    from jianmu_like.cli._serve import agent_factory
    from jianmu_like.server import create_app
    from tests.server.sse_live import live_server

    listeners = (
        "SELECT pid FROM pg_stat_activity WHERE query = 'LISTEN jianmu_decisions' AND pid <> pg_backend_pid()"
    )
    agent = write_agent(tmp_path, module="relisten_effects")
    with ScriptedOpenAIServer(responder) as model, psycopg.connect(postgres_url, autocommit=True) as admin:
        monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        factory, cleanups, _ = agent_factory(str(agent), checkpoint=postgres_url)
        with (
            live_server(create_app(factory, on_shutdown=cleanups)) as url,
            httpx.Client(base_url=url) as http,
        ):
            served = Served(postgres_url, tmp_path, http, model.base_url)
            run = served.start("/data/r", "relisten")
            pending = served.suspended(run["run_id"])
            [(first,)] = wait_for("the server to listen", lambda: admin.execute(listeners).fetchall())
            admin.execute("SELECT pg_terminate_backend(%s)", (first,))
            [(again,)] = wait_for(
                "the server to listen again",
                lambda: [row for row in admin.execute(listeners).fetchall() if row[0] != first],
            )
            assert again != first
            operator = open_checkpointer(postgres_url)
            try:
                record_decision(operator, "relisten", pending["id"], "approve")
            finally:
                operator.close()
            summary = served.finished(run["run_id"])
    assert summary["status"] == "success" and summary["answer"] == "result: deleted /data/r", summary
    assert served.effects() == ["delete /data/r"]
