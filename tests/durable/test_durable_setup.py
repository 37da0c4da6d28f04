"""A run submitted before any worker has ever started on the database (the durable guide's quick start
starts workers with `&` and submits at once): the client creates DBOS's system tables as a worker
would, the run waits on its queue, and the first worker executes it."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import psycopg
from conftest import LEDGER, Cluster

from jianmu_like.durable import DurableClient

ROOT = Path(__file__).resolve().parents[2]
PATIENCE = 300
"""Two workers start (DBOS imports for seconds on a loaded machine), then two runs."""


def test_submit_before_the_first_worker_waits_on_the_queue_for_it(cluster: Cluster) -> None:
    listed = cluster.cli("approvals", "list")
    assert (listed.returncode, listed.stdout) == (0, "")  # stdout stays JSON lines; the note is on stderr
    assert "no pending approvals in postgresql://" in listed.stderr
    submitted = cluster.cli("submit", LEDGER, "fill the ledger")
    assert submitted.returncode == 0, submitted.stderr
    run_id = submitted.stdout.strip()
    assert run_id
    with psycopg.connect(cluster.database) as conn:
        triggers = conn.execute(
            "SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'dbos' AND NOT t.tgisinternal"
        ).fetchone()
    assert triggers is not None and triggers[0] > 0  # the LISTEN/NOTIFY triggers a worker's launch adds

    cluster.start_worker(LEDGER, "late")
    with DurableClient(cluster.database) as client:
        result = client.run(run_id).result()
    assert (result.status, result.final_answer) == ("success", "all done")


def test_the_durable_guide_quick_start_runs_as_written(cluster: Cluster) -> None:
    """The durable workers guide's first commands, verbatim up to `submit --wait` (its `[--json]`
    is an option shown in brackets): two workers started with `&`, submits at once. The database is
    the test's."""
    guide = ROOT / "docs" / "guides" / "durable.md"
    block = guide.read_text(encoding="utf-8").split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert block[0].startswith("DB=postgresql://")
    last = next(i for i, line in enumerate(block) if "--wait" in line)
    commands = [f"DB={shlex.quote(cluster.database)}", *block[1 : last + 1]]
    stop_workers = "trap 'kill $(jobs -p) 2>/dev/null; wait' EXIT"  # however the script ends
    script = "\n".join(["set -e", stop_workers, *commands]).replace(" [--json]", "")
    env = {**cluster.env, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}
    done = subprocess.run(
        ["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=PATIENCE
    )
    assert done.returncode == 0, done.stderr
    # The workers' "ready" lines land anywhere among the submits' lines (they print concurrently).
    lines = [line for line in done.stdout.splitlines() if not line.startswith('{"ready": true')]
    run_id, answer = lines[0], lines[-1]
    assert len(run_id) >= 8 and " " not in run_id
    assert answer == "sent"  # the scripted model's answer to an agent without its tool
