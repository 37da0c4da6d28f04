"""A temporary PostgreSQL cluster whose owner dies without stopping it is stopped anyway."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from jianmu_like.testing import wait_until
from jianmu_like.testing._postgres import postgres_problem

OWNER = """
import sys, time
from jianmu_like.testing._postgres import TemporaryPostgres
cluster = TemporaryPostgres().start()
print(cluster.folder, cluster.port, flush=True)
time.sleep(600)
"""


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.skipif(postgres_problem() is not None, reason=f"no PostgreSQL: {postgres_problem()}")
def test_a_killed_owner_leaves_no_server_behind() -> None:
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    try:
        assert owner.stdout is not None
        folder, port = owner.stdout.readline().split()
        assert _listening(int(port)) and Path(folder).is_dir()
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    wait_until(lambda: not _listening(int(port)), "the server to stop after its owner died", interval=0.2)
    wait_until(lambda: not Path(folder).exists(), "the cluster's folder to go after its owner died")
