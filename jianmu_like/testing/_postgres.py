"""A throwaway PostgreSQL cluster for tests and benchmarks: `initdb` + `pg_ctl` in a temporary
folder, listening on a free port of 127.0.0.1 (and a unix socket in that folder), trust
authentication for local connections only, removed when stopped — or, if the process that
started it dies without stopping it (killed by a timeout, SIGKILL), by a small watchdog process
that notices its owner is gone and stops the server.

Real PostgreSQL rather than a fake, so the checkpoint store is tested against the server's own
locking and transactions. The binaries come from PATH, `$PG_BIN`, or the Debian/Ubuntu
(`/usr/lib/postgresql/<version>/bin`) and RHEL (`/usr/pgsql-<version>/bin`) locations. PostgreSQL
refuses to run as root: then the cluster runs as the `postgres` user (or `nobody`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from types import TracebackType

from ._waiting import PATIENCE

_VERSIONED_DIRS = ("/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin", "/usr/local/pgsql/bin")
USER = "jianmu"
_WATCHDOG = """
import shutil, subprocess, sys
sys.stdin.buffer.read()  # EOF: the owner stopped us, or died (the OS closed its end of the pipe)
subprocess.run(sys.argv[1:-1], capture_output=True, timeout=120, check=False)
shutil.rmtree(sys.argv[-1], ignore_errors=True)
"""
"""Holds a pipe from the owner; when it reads EOF, stops the cluster and removes its folder."""
_FAST = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
"""A throwaway cluster's default settings: nothing it holds must survive a power cut."""


def find_pg_bin() -> Path | None:
    """The folder holding `initdb` and `pg_ctl` (the newest version when several are installed)."""
    candidates: list[Path] = []
    if os.environ.get("PG_BIN"):
        candidates.append(Path(os.environ["PG_BIN"]))
    found = shutil.which("initdb")
    if found:
        candidates.append(Path(found).resolve().parent)

    def version(path: Path) -> tuple[int, ...]:
        return tuple(int(n) for n in re.findall(r"\d+", str(path))) or (0,)

    for pattern in _VERSIONED_DIRS:
        candidates += sorted(Path("/").glob(pattern.lstrip("/")), key=version, reverse=True)
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    return None


def _run_as() -> list[str]:
    """The command prefix that drops root (PostgreSQL will not run as root); [] when not root."""
    if os.geteuid() != 0:
        return []
    runuser = shutil.which("runuser")
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        if runuser:
            return [runuser, "-u", name, "--"]
    raise RuntimeError(
        "running as root without `runuser` or a `postgres`/`nobody` user: cannot start PostgreSQL"
    )


def postgres_problem() -> str | None:
    """Why a temporary cluster cannot start here (None when it can)."""
    if find_pg_bin() is None:
        return "no PostgreSQL server binaries (initdb, pg_ctl) on PATH, $PG_BIN or /usr/lib/postgresql/*/bin"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'jianmu_like[postgres]')"
    try:
        _run_as()
    except RuntimeError as exc:
        return str(exc)
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class TemporaryPostgres:
    """A PostgreSQL cluster for the lifetime of a `with` block; `new_database()` gives each test
    its own database (a URL for it)."""

    def __init__(self, bin_dir: Path | None = None, *, settings: dict[str, str] | None = None) -> None:
        """`settings`: server settings (`-c name=value`) over the defaults, which trade
        durability for speed (fsync, synchronous_commit and full_page_writes off): a benchmark
        of durable writes passes `{"fsync": "on", ...}` to measure what a real server does."""
        found = bin_dir or find_pg_bin()
        if found is None:
            raise RuntimeError(postgres_problem() or "no PostgreSQL binaries")
        self.bin = found
        self.port = 0
        self.folder: Path | None = None
        self._names = itertools.count(1)
        self._watchdog: subprocess.Popen[bytes] | None = None
        self.settings = {**_FAST, **(settings or {})}

    def _cmd(self, *args: str) -> None:
        assert self.folder is not None
        done = subprocess.run(
            [*_run_as(), *args],
            cwd=self.folder,
            capture_output=True,
            text=True,
            timeout=2 * PATIENCE,
            check=False,
        )
        if done.returncode != 0:
            log = self.folder / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(
                f"{' '.join(args[:2])} failed ({done.returncode}): {done.stderr.strip()}\n{tail}"
            )

    def start(self) -> TemporaryPostgres:
        self.folder = Path(tempfile.mkdtemp(prefix="jianmu-pg-"))
        prefix = _run_as()
        if prefix:
            user = pwd.getpwnam(prefix[2])
            os.chown(self.folder, user.pw_uid, user.pw_gid)
        data = self.folder / "data"
        self._cmd(
            str(self.bin / "initdb"), "-D", str(data), "-U", USER, "--auth=trust", "--no-locale",
            "-E", "UTF8", "--no-sync",
        )  # fmt: skip
        for attempt in range(3):
            self.port = _free_port()
            options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 " + " ".join(
                f"-c {name}={value}" for name, value in self.settings.items()
            )
            try:
                self._cmd(
                    str(self.bin / "pg_ctl"), "-D", str(data), "-l", str(self.folder / "server.log"),
                    "-o", options, "-w", "-t", f"{PATIENCE:.0f}", "start",
                )  # fmt: skip
                self._start_watchdog(data)
                return self
            except RuntimeError:
                if attempt == 2:  # the free port was taken meanwhile: try another
                    self.stop()
                    raise
        return self

    def url(self, database: str = "postgres", *, password: str | None = None) -> str:
        """The URL of `database` (a password is accepted and ignored: trust authentication)."""
        auth = f"{USER}:{password}" if password else USER
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """Create an empty database; its URL."""
        import psycopg

        name = f"test_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def _start_watchdog(self, data: Path) -> None:
        """A process that stops the server if this one dies first (its own session, so a signal
        to this process group does not take it along)."""
        assert self.folder is not None
        stop = [*_run_as(), str(self.bin / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]
        self._watchdog = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, *stop, str(self.folder)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def stop(self) -> None:
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:  # stopped by its owner: the watchdog has nothing to do
            watchdog.kill()
            watchdog.wait()
            if watchdog.stdin is not None:
                watchdog.stdin.close()
        if self.folder is None:
            return
        data = self.folder / "data"
        if (data / "postmaster.pid").exists():
            with contextlib.suppress(RuntimeError):  # already gone: the folder goes anyway
                self._cmd(str(self.bin / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder = None

    def __enter__(self) -> TemporaryPostgres:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
